/**
 * One ioredis connection -- to a single server, or a Cluster client with one connection per node -- configured for
 * §1.1 (a reply that does not come back is never taken as "failed"), plus the two ways this provider sends a
 * command: `retrying` for commands that are safe to repeat, and `guarded` (guarded.ts) for writes that are not.
 */
import Redis, { Cluster, ReplyError, type ClusterOptions, type RedisOptions } from 'ioredis';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { StoreUnavailableError } from '../types';
import type { RedisClusterNode, RedisClusterOptions } from './options';
import { defineScripts, runScript, type ScriptName } from './scripts';

export interface RedisClientSettings {
  /** One server (exactly one of `url` and `cluster`). */
  readonly url?: string;
  /** A Redis Cluster: startup nodes and the cluster options a deployment may set (options.ts). */
  readonly cluster?: { readonly nodes: readonly RedisClusterNode[]; readonly options?: RedisClusterOptions };
  /** A reply slower than this is treated as lost and resolved (§1.1). @default 2000 */
  readonly commandTimeoutMs: number;
  /** Attempts of a retried command, of a fenced write, and of the resolver after a lost reply. @default 6 */
  readonly attempts: number;
  /** First backoff delay between attempts; doubles each attempt (with jitter). @default 25 */
  readonly backoffMs: number;
  /** Longest delay between reconnect attempts; ioredis reconnects until close(). @default 1000 */
  readonly reconnectMaxMs: number;
  /** CLIENT SETNAME of the connection (operators, and fault tests, find it in CLIENT LIST). */
  readonly connectionName?: string;
}

export class RedisClient {
  readonly redis: Redis | Cluster;
  /**
   * Whether this is a Redis Cluster, where one script may only touch keys of one hash slot. On a single server a
   * script may touch any keys, so a many-record write is one script call, not one per slot (a 128-record casMany:
   * 128 calls → 1; issue [6/10] measured the per-slot form ~7× slower than one script per 128 keys).
   */
  readonly clustered: boolean;
  /** Where the store connects, for error messages. */
  readonly where: string;
  private connecting: Promise<void> | undefined;
  private waiting: Promise<void> | undefined;
  private lastError: unknown;
  /** Set at the first ready: until then a wait is bounded by connectTimeout, not commandTimeoutMs. */
  private connectedOnce = false;

  constructor(readonly settings: RedisClientSettings) {
    // Every connection (the single one, or each cluster node's):
    const connection = {
      // Bounds every command. A timed-out command may still run on the server later, so writes resolve a timeout
      // through their op key (guarded.ts) instead of reporting failure. On a cluster the timer is armed once per
      // command and survives ioredis's MOVED / ASK / TRYAGAIN re-sends, so it bounds the whole redirected command.
      commandTimeout: settings.commandTimeoutMs,
      connectTimeout: Math.max(settings.commandTimeoutMs, 1000),
      // ioredis would re-send in-flight commands after a reconnect; a re-sent write could then apply after the
      // resolver read "not applied". The fence makes that harmless, but not re-sending keeps outcomes simple.
      autoResendUnfulfilledCommands: false,
      // With 0 the close handler rejects in-flight commands at once on every disconnect (instead of holding them
      // for 20 reconnect attempts), so the resolver starts immediately.
      maxRetriesPerRequest: 0,
      // How long close() lets a closing socket linger before destroying it. ioredis arms this timer even for a
      // socket that already closed after a refused connect, and the timer holds the process open (default 2 s).
      disconnectTimeout: 100,
      ...(settings.connectionName !== undefined && { connectionName: settings.connectionName }),
    } satisfies RedisOptions;
    // Keep reconnecting for the life of the store (hosts are long-lived); calls fail fast meanwhile and surface
    // StoreUnavailableError after their own bounded retries.
    const reconnect = (times: number): number => Math.min(settings.reconnectMaxMs, 25 * 2 ** Math.min(times, 10));
    if (settings.cluster) {
      this.redis = new Cluster(settings.cluster.nodes.map(({ host, port }) => ({ host, port })), clusterOptions(settings.cluster.options ?? {}, connection, reconnect));
      this.clustered = true;
      this.where = `cluster ${settings.cluster.nodes.map(({ host, port }) => `${host}:${port}`).join(',')}`;
      // A node connection's failure (refused, reset); the cluster's own 'error' covers "all nodes failed".
      this.redis.on('node error', (error: unknown) => {
        this.lastError = error;
      });
    } else {
      this.redis = new Redis(settings.url!, {
        ...connection,
        // A command is written now or fails now. A queued command would be written after reconnect, long after
        // its caller's timeout fired and the resolver decided its outcome.
        enableOfflineQueue: false,
        retryStrategy: reconnect,
        // Concurrent CASes issued in one tick go out in one write (DESIGN.md: batch target CASes per pipeline tick).
        enableAutoPipelining: true,
        // connect() is called by ready(), so a first connection failure is a rejected promise we map, not an event.
        lazyConnect: true,
      });
      this.clustered = false;
      this.where = redactedUrl(settings.url!);
    }
    // ioredis emits 'error' on every failed (re)connect; without a listener Node would print or throw it.
    this.redis.on('error', (error: unknown) => {
      this.lastError = error;
    });
    this.redis.once('ready', () => (this.connectedOnce = true));
    defineScripts(this.redis);
  }

  /**
   * Resolves when the connection is ready; rejects with StoreUnavailableError within about commandTimeoutMs — or,
   * for the very first connection, within connectTimeout (at least 1 s): a short command timeout (a deployment
   * that wants lost replies found fast) must not fail a first connect that a loaded machine takes longer to make.
   */
  async ready(): Promise<void> {
    if (this.redis.status === 'ready' && this.mastersReady()) return;
    if (this.redis.status === 'end') throw new StoreUnavailableError('redis store is closed');
    if (this.redis.status === 'wait') this.connecting ??= this.redis.connect().catch((error: unknown) => {
      this.lastError = error;
    });
    // One shared wait however many calls are waiting (a 128-key casMany would otherwise add 128 listeners).
    this.waiting ??= this.waitReady().finally(() => {
      this.waiting = undefined;
    });
    return this.waiting;
  }

  /**
   * On a cluster, whether every master's connection is up. ioredis opens them lazily, and while one is still
   * connecting a command for it is refused ("Connection is closed") and re-sent 100 ms later: a first casMany over
   * every master measured ~150 ms instead of ~15 ms. So ready() also waits for them.
   */
  private mastersReady(): boolean {
    return !this.clustered || (this.redis as Cluster).nodes('master').every((node) => node.status === 'ready');
  }

  private async waitReady(): Promise<void> {
    const timer = new AbortController();
    // Resolves false when the wait expires; aborted (ignored) once the wait is decided.
    const waitMs = this.connectedOnce ? this.settings.commandTimeoutMs : Math.max(this.settings.commandTimeoutMs, 1000);
    const expired = sleep(waitMs, false, { signal: timer.signal }).catch(() => false);
    try {
      if (this.redis.status !== 'ready') {
        // Not events.once: it gives up at the first 'error' event, and ioredis emits one for every failed attempt
        // of a reconnect that may well succeed within the wait.
        let onReady = (): void => undefined;
        const ready = new Promise<boolean>((resolve) => {
          onReady = () => resolve(true);
          this.redis.once('ready', onReady);
        });
        const isReady = await Promise.race([ready, expired]);
        this.redis.off('ready', onReady);
        if (!isReady)
          throw new StoreUnavailableError(`redis not reachable at ${this.where}: ${describe(this.lastError)}`, false, { cause: this.lastError });
      }
      // Best effort: a master that does not connect in time is left to ioredis (its commands are retried or fail).
      if (this.clustered) await Promise.race([this.connectMasters(timer.signal), expired]);
    } finally {
      timer.abort();
    }
  }

  /** Connects every master connection not yet up; resolves when each is ready or ended (or on abort). */
  private connectMasters(signal: AbortSignal): Promise<unknown> {
    return Promise.all(
      (this.redis as Cluster).nodes('master').map((node) => {
        if (node.status === 'ready') return undefined;
        if (node.status === 'wait') node.connect().catch(() => undefined);
        // A failed connect ('error', then 'end') ends the wait too: that master is left to ioredis's redirections.
        return Promise.race([once(node, 'ready', { signal }), once(node, 'end', { signal })]).catch(() => undefined);
      }),
    );
  }

  script(name: ScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return runScript(this.redis, name, keys, args);
  }

  /**
   * For reads and for writes whose repetition is harmless (first-write-wins with a writer token, token-compare
   * lease scripts, INCR where a skipped value is fine): retry with backoff, then StoreUnavailableError.
   */
  async retrying<T>(what: string, run: () => Promise<T>): Promise<T> {
    let last: unknown;
    for (let attempt = 0; attempt < this.settings.attempts; attempt++) {
      if (attempt > 0) await this.backoff(attempt);
      try {
        await this.ready();
        return await run();
      } catch (error) {
        if (error instanceof ReplyError) throw rejected(what, error as Error);
        last = error;
      }
    }
    throw new StoreUnavailableError(`${what}: no answer from redis after ${this.settings.attempts} attempts: ${describe(last)}`, false, { cause: last });
  }

  backoff(attempt: number): Promise<void> {
    const delay = this.settings.backoffMs * 2 ** (attempt - 1);
    return sleep(delay / 2 + Math.random() * (delay / 2));
  }

  async close(): Promise<void> {
    if (this.redis.status === 'end' || this.redis.status === 'wait') {
      this.redis.disconnect();
      return;
    }
    await this.redis.quit().catch(() => this.redis.disconnect());
    // A cluster that was between reconnects has no node to QUIT: end it (no timer may keep the process alive).
    if (this.clustered && (this.redis.status as string) !== 'end') this.redis.disconnect();
  }
}

/**
 * The Cluster client zlink needs: commands go to masters only (a replica may lag behind an owner change), one at a
 * time through ioredis's redirection handling. Auto-pipelining stays off on a cluster: ioredis follows MOVED / ASK
 * for a single command, but a pipeline that mixes writes with redirected commands hands the MOVED / ASK reply to
 * the caller instead (Pipeline#fillResult), so every command after a resharding would fail once.
 * Re-sends ioredis does by itself (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, a node connection closed mid-command) are
 * harmless: a redirected command did not run, and every zlink write is idempotent per attempt (op guard, writer
 * token, lease token, ordered publish, install over older generations only; an INCR run twice skips a lifecycle
 * generation, which is fine) -- the same property that makes a late replay harmless (guarded.ts).
 */
function clusterOptions(options: RedisClusterOptions, connection: RedisOptions, reconnect: (times: number) => number): ClusterOptions {
  return {
    scaleReads: 'master',
    enableOfflineQueue: false,
    enableAutoPipelining: false,
    lazyConnect: true,
    clusterRetryStrategy: reconnect,
    ...(options.natMap !== undefined && { natMap: options.natMap as ClusterOptions['natMap'] }),
    ...(options.dnsLookup !== undefined && { dnsLookup: options.dnsLookup as ClusterOptions['dnsLookup'] }),
    ...(options.slotsRefreshTimeout !== undefined && { slotsRefreshTimeout: options.slotsRefreshTimeout }),
    ...(options.slotsRefreshInterval !== undefined && { slotsRefreshInterval: options.slotsRefreshInterval }),
    ...(options.maxRedirections !== undefined && { maxRedirections: options.maxRedirections }),
    redisOptions: {
      ...connection,
      ...(options.username !== undefined && { username: options.username }),
      ...(options.password !== undefined && { password: options.password }),
      ...(options.tls !== undefined && { tls: options.tls }),
    },
  };
}

/** The URL without its password, for error messages. */
function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

/** The server refused the command (script error, OOM, BUSY...): it did not run, so the outcome is definite. */
export function rejected(what: string, error: Error): StoreUnavailableError {
  return new StoreUnavailableError(`${what}: redis refused the command: ${error.message}`, false, { cause: error });
}

export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error ?? 'unknown error');
  // ioredis's ClusterAllFailedError ("Failed to refresh slots cache.") carries the reason of the last node tried.
  const last = (error as { lastNodeError?: unknown }).lastNodeError;
  return last instanceof Error ? `${error.message} (last node: ${last.message})` : error.message;
}
