/**
 * Redis provider of the store interfaces (ioredis 6).
 *
 * Key layout (P = keyPrefix; ids are encodeURIComponent-encoded; {..} is the hash tag). Every key one script touches
 * shares a tag, so the layout is ready for Redis Cluster; connecting to a cluster is not supported yet (issue [9/10]:
 * `RedisClient.clustered` stays false, and casMany then sends one script per call instead of one per slot):
 *
 *   P{o:<kind>:<id>}                    owner record of an object (JSON: live 'L', tombstone 'R', or forward 'F')
 *   P{o:spot:<spot>}:m:<actor>          record of a SpotWide member Actor, beside its Spot (§10.3); the Actor's own
 *                                       P{o:actor:<actor>} then holds a forward to it, so get() still finds it
 *   P{o:spot:<spot>}:agg:<rid>:h        staged aggregate header (total, sha256 + sha1 per page, spot generation)
 *   P{o:spot:<spot>}:agg:<rid>:p:<n>    staged page n (from 1) of the relocation target list
 *   P{<tag>}:op:<opId>                  per-operation result / fences (§1.1), in the tag of the record it guards
 *   P{d}:nodes                          set of node ids with a descriptor
 *   P{d}:lease:<node>                   owner lease "<lifecycleGeneration>:<token>" with PX = lease
 *   P{d}:desc:<node>                    descriptor hash (publish sequence q, JSON d), same PX as the lease
 *   P{d}:lg:<node>                      lifecycle generation counter (INCR per RID)
 *   P{d}:op:<token>                     op key of a lease acquire
 *   P{i:<spot>}                         Instance Spot creation record (first write wins)
 *   P{r:<opId>}                         late request terminal (first write wins, TTL)
 *   P{c:<channel>}:m                    Logical Multicast Channel members (hash: Spot id → type); op keys in its tag
 *
 * Tombstones and the forwards a member leaves behind are kept (they are small): they carry the generations that
 * keep fencing tokens from ever repeating for an id.
 */
import type { Stores } from '../types';
import { StoreUnavailableError } from '../types';
import { describe, RedisClient } from './client';
import { RedisChannelStore } from './channel-store';
import { RedisDescriptorStore } from './descriptor-store';
import { RedisKeys } from './keys';
import { RedisLocationStore } from './location-store';
import { RedisRelocationStore } from './relocation-store';

export interface RedisStoresOptions {
  /** redis://[user:password@]host:port[/db], or rediss://… for TLS. Any other scheme is refused at once. */
  readonly url: string;
  /**
   * Prepended to every key; one prefix per zlink cluster (or per test). Required (`''` for none, deliberately).
   * Must not contain '{' or '}'.
   */
  readonly keyPrefix: string;
  /** A reply slower than this is treated as lost and resolved through its op key. @default 2000 */
  readonly commandTimeoutMs?: number;
  /** Bound on retries, fenced re-attempts and resolver attempts per call. @default 6 */
  readonly attempts?: number;
  /** First backoff between attempts, doubling (with jitter). @default 25 */
  readonly backoffMs?: number;
  /** Longest delay between reconnect attempts. @default 1000 */
  readonly reconnectMaxMs?: number;
  /** Lifetime of op results, fences and staged lists; must outlast any late replay of a write. @default 3_600_000 */
  readonly opResultTtlMs?: number;
  /** CLIENT SETNAME of the store's connection. */
  readonly connectionName?: string;
}

export const REDIS_STORE_DEFAULTS = {
  commandTimeoutMs: 2000,
  attempts: 6,
  backoffMs: 25,
  reconnectMaxMs: 1000,
  opResultTtlMs: 3_600_000,
} as const;

const REDIS_URL_SCHEMES = ['redis:', 'rediss:'];

/**
 * The options as plain JavaScript may pass them: a missing keyPrefix (keys under 'undefined{d}:…'), a URL of
 * another scheme (ioredis would take it as a socket path and fail only after its connect timeout) or a
 * non-numeric timing is refused here, before any connection, with a TypeError naming the field.
 */
function checkOptions(options: unknown): asserts options is RedisStoresOptions {
  const fail = (field: string, rule: string): never => {
    throw new TypeError(`redisStores: field '${field}' ${rule}`);
  };
  if (typeof options !== 'object' || options === null) throw new TypeError('redisStores: options must be an object: { url, keyPrefix }');
  const o = options as Record<string, unknown>;
  if (typeof o['keyPrefix'] !== 'string')
    fail('keyPrefix', `is required: a string prepended to every key, one per zlink cluster (e.g. 'myapp:'; '' for none); got ${describeValue(o['keyPrefix'])}`);
  const url = o['url'];
  if (typeof url !== 'string') fail('url', `is required: redis://[user:password@]host:port[/db] (rediss:// for TLS); got ${describeValue(url)}`);
  let scheme: string | undefined;
  try {
    scheme = new URL(url as string).protocol;
  } catch {
    scheme = undefined;
  }
  if (!scheme || !REDIS_URL_SCHEMES.includes(scheme))
    fail('url', `must be a redis:// or rediss:// URL (redis://[user:password@]host:port[/db]); got '${url as string}'`);
  for (const field of ['commandTimeoutMs', 'backoffMs', 'reconnectMaxMs', 'opResultTtlMs'] as const) {
    const v = o[field];
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)) fail(field, `must be a number of milliseconds greater than 0; got ${describeValue(v)}`);
  }
  const attempts = o['attempts'];
  if (attempts !== undefined && (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < 1))
    fail('attempts', `must be an integer of at least 1; got ${describeValue(attempts)}`);
  if (o['connectionName'] !== undefined && typeof o['connectionName'] !== 'string') fail('connectionName', `must be a string; got ${describeValue(o['connectionName'])}`);
}

function describeValue(v: unknown): string {
  return typeof v === 'string' ? `'${v}'` : v === undefined ? 'nothing' : typeof v === 'number' || typeof v === 'boolean' || v === null ? String(v) : typeof v;
}

export function redisStores(options: RedisStoresOptions): Stores {
  checkOptions(options);
  const settings = { ...REDIS_STORE_DEFAULTS, ...options };
  const keys = new RedisKeys(settings.keyPrefix);
  const client = new RedisClient({
    url: settings.url,
    commandTimeoutMs: settings.commandTimeoutMs,
    attempts: settings.attempts,
    backoffMs: settings.backoffMs,
    reconnectMaxMs: settings.reconnectMaxMs,
    ...(settings.connectionName !== undefined && { connectionName: settings.connectionName }),
  });
  const ctx = { client, keys, opTtlMs: settings.opResultTtlMs };
  return {
    provider: 'redis',
    location: new RedisLocationStore(ctx),
    descriptors: new RedisDescriptorStore(ctx),
    relocation: new RedisRelocationStore(ctx),
    channels: new RedisChannelStore(ctx),
    async ping() {
      try {
        await client.ready();
        await client.redis.ping();
      } catch (error) {
        if (error instanceof StoreUnavailableError) throw error;
        throw new StoreUnavailableError(`redis ping failed: ${describe(error)}`, false, { cause: error });
      }
    },
    close: () => client.close(),
  };
}
