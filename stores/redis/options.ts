/**
 * redisStores options: the types, their defaults in one place, and the check at the call. Everything plain
 * JavaScript can get wrong is refused before any connection with an ArgumentError (a TypeError) naming the field:
 * an unknown option (with the closest known name), a missing keyPrefix, both or neither of url / cluster, a URL of
 * another scheme (ioredis would take it as a socket path and fail only after its connect timeout), a bad node.
 */
import type { ConnectionOptions } from 'node:tls';
import { ArgumentError, closestName } from '../../vocabulary';

export interface RedisStoresOptions {
  /**
   * One Redis server: redis://[user:password@]host:port[/db], or rediss://… for TLS. Any other scheme is refused at
   * once. Exactly one of `url` and `cluster`.
   */
  readonly url?: string;
  /** A Redis Cluster (exactly one of `url` and `cluster`). Every key one script touches shares a hash slot. */
  readonly cluster?: {
    /** Startup nodes, at least one; the others are discovered from the cluster (CLUSTER SLOTS). */
    readonly nodes: readonly RedisClusterNode[];
    /** Connection settings of the cluster: a subset of ioredis ClusterOptions (the rest are fixed by zlink). */
    readonly options?: RedisClusterOptions;
  };
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
  /** CLIENT SETNAME of the store's connection (of every node's connection on a cluster). */
  readonly connectionName?: string;
}

export interface RedisClusterNode {
  readonly host: string;
  readonly port: number;
}

/**
 * The ioredis ClusterOptions a deployment may need to set. The others are zlink's (offline queue off, reads and
 * writes on masters only, no automatic pipelining, its own timeouts and reconnect strategy): they are what keeps a
 * lost reply from being guessed, so they are refused rather than passed through.
 */
export interface RedisClusterOptions {
  /** ACL user of every node. */
  readonly username?: string;
  /** Password (ACL or requirepass) of every node. */
  readonly password?: string;
  /** TLS to every node (node:tls ConnectionOptions: ca, cert, key, servername, …). @default plain TCP */
  readonly tls?: ConnectionOptions;
  /** Maps the node addresses the cluster announces to the ones this process reaches (NAT, containers). */
  readonly natMap?: Readonly<Record<string, RedisClusterNode>> | ((address: string) => RedisClusterNode | null);
  /** Resolves node host names (e.g. `(address, callback) => callback(null, address)` for TLS with host names). @default dns.lookup */
  readonly dnsLookup?: (hostname: string, callback: (error: NodeJS.ErrnoException | null, address: string, family?: number) => void) => void;
  /** Timeout of one CLUSTER SLOTS refresh. @default 1000 */
  readonly slotsRefreshTimeout?: number;
  /** Refresh the slot map this often even without a MOVED reply. @default none (refreshed on MOVED) */
  readonly slotsRefreshInterval?: number;
  /** Most MOVED / ASK / TRYAGAIN / CLUSTERDOWN redirections of one command before it fails. @default 16 */
  readonly maxRedirections?: number;
}

export const REDIS_STORE_DEFAULTS = {
  commandTimeoutMs: 2000,
  attempts: 6,
  backoffMs: 25,
  reconnectMaxMs: 1000,
  opResultTtlMs: 3_600_000,
} as const;

const OPTION_NAMES = ['url', 'cluster', 'keyPrefix', 'commandTimeoutMs', 'attempts', 'backoffMs', 'reconnectMaxMs', 'opResultTtlMs', 'connectionName'];
const CLUSTER_NAMES = ['nodes', 'options'];
const NODE_NAMES = ['host', 'port'];
export const REDIS_CLUSTER_OPTION_NAMES = [
  'username',
  'password',
  'tls',
  'natMap',
  'dnsLookup',
  'slotsRefreshTimeout',
  'slotsRefreshInterval',
  'maxRedirections',
] as const;

/** ioredis ClusterOptions zlink sets itself, and why they cannot be changed. */
const FIXED_CLUSTER_OPTIONS: Readonly<Record<string, string>> = {
  scaleReads: 'owner records must be read from masters (a replica may lag behind an owner change)',
  enableOfflineQueue: 'a queued command would be written long after its caller gave up and resolved its outcome',
  enableAutoPipelining: "ioredis does not follow MOVED/ASK for a pipeline that mixes writes, so zlink sends each command on its own",
  lazyConnect: 'zlink connects on first use',
  clusterRetryStrategy: 'use reconnectMaxMs',
  redisOptions: 'use commandTimeoutMs, connectionName, and cluster.options.username / password / tls',
  enableReadyCheck: 'zlink waits for cluster_state:ok before it sends',
  keyPrefix: 'use the keyPrefix option of redisStores',
};

const REDIS_URL_SCHEMES = ['redis:', 'rediss:'];

const fail = (field: string, rule: string): never => {
  throw new ArgumentError(field, rule);
};

function describeValue(v: unknown): string {
  if (typeof v === 'string') return `'${v}'`;
  if (v === undefined) return 'nothing';
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  return Array.isArray(v) ? 'an array' : typeof v;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Refuses keys not in `known`, naming the closest known one (or the reason a known ioredis option is refused). */
function checkKeys(value: Record<string, unknown>, path: string, known: readonly string[], where: string, fixed: Readonly<Record<string, string>> = {}): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    const field = path ? `${path}.${key}` : key;
    if (Object.hasOwn(fixed, key)) fail(field, `is set by zlink and cannot be changed here: ${fixed[key]}`);
    const suggestion = closestName(key, known);
    fail(field, `is not ${where}${suggestion ? ` — did you mean '${suggestion}'?` : ` (known: ${known.join(', ')})`}`);
  }
}

const positiveMs = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v > 0;

function checkUrl(url: unknown): void {
  if (typeof url !== 'string') fail('url', `must be a string: redis://[user:password@]host:port[/db] (rediss:// for TLS); got ${describeValue(url)}`);
  let parsed: URL | undefined;
  try {
    parsed = new URL(url as string);
  } catch {
    parsed = undefined;
  }
  if (!parsed || !REDIS_URL_SCHEMES.includes(parsed.protocol))
    fail('url', `must be a redis:// or rediss:// URL (redis://[user:password@]host:port[/db]); got '${url as string}'`);
  if (!parsed!.hostname) fail('url', `must name a host (redis://host:port); got '${url as string}'`);
  const db = parsed!.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d+$/.test(db)) fail('url', `path must be a database number (redis://host:port/2); got '${url as string}'`);
}

function checkCluster(cluster: unknown): void {
  if (!isObject(cluster)) fail('cluster', `must be an object: { nodes: [{ host, port }, ...], options? }; got ${describeValue(cluster)}`);
  const c = cluster as Record<string, unknown>;
  checkKeys(c, 'cluster', CLUSTER_NAMES, 'a cluster field');
  const nodes = c['nodes'];
  if (!Array.isArray(nodes) || nodes.length === 0)
    fail('cluster.nodes', `must be a non-empty array of { host, port } (any reachable nodes of the cluster); got ${describeValue(nodes)}`);
  (nodes as unknown[]).forEach((node, i) => checkNode(node, `cluster.nodes.${i}`));
  const options = c['options'];
  if (options === undefined) return;
  if (!isObject(options)) fail('cluster.options', `must be an object; got ${describeValue(options)}`);
  const o = options as Record<string, unknown>;
  checkKeys(o, 'cluster.options', REDIS_CLUSTER_OPTION_NAMES, 'a supported cluster option', FIXED_CLUSTER_OPTIONS);
  for (const field of ['username', 'password'] as const)
    if (o[field] !== undefined && typeof o[field] !== 'string') fail(`cluster.options.${field}`, `must be a string; got ${describeValue(o[field])}`);
  if (o['tls'] !== undefined && !isObject(o['tls']))
    fail('cluster.options.tls', `must be an object of node:tls connection options ({ ca, cert, key, servername, ... }); got ${describeValue(o['tls'])}`);
  const natMap = o['natMap'];
  if (natMap !== undefined && typeof natMap !== 'function') {
    if (!isObject(natMap)) fail('cluster.options.natMap', `must be an object { 'announced-host:port': { host, port } } or a function; got ${describeValue(natMap)}`);
    for (const [from, to] of Object.entries(natMap as Record<string, unknown>)) checkNode(to, `cluster.options.natMap.${from}`);
  }
  if (o['dnsLookup'] !== undefined && typeof o['dnsLookup'] !== 'function')
    fail('cluster.options.dnsLookup', `must be a function (hostname, callback); got ${describeValue(o['dnsLookup'])}`);
  for (const field of ['slotsRefreshTimeout', 'slotsRefreshInterval'] as const)
    if (o[field] !== undefined && !positiveMs(o[field])) fail(`cluster.options.${field}`, `must be a number of milliseconds greater than 0; got ${describeValue(o[field])}`);
  const redirections = o['maxRedirections'];
  if (redirections !== undefined && (typeof redirections !== 'number' || !Number.isInteger(redirections) || redirections < 1))
    fail('cluster.options.maxRedirections', `must be an integer of at least 1; got ${describeValue(redirections)}`);
}

function checkNode(node: unknown, field: string): void {
  if (!isObject(node)) fail(field, `must be { host, port }; got ${describeValue(node)}`);
  const n = node as Record<string, unknown>;
  checkKeys(n, field, NODE_NAMES, 'a node field');
  if (typeof n['host'] !== 'string' || n['host'] === '') fail(`${field}.host`, `must be a host name or address; got ${describeValue(n['host'])}`);
  const port = n['port'];
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) fail(`${field}.port`, `must be an integer port 1–65535; got ${describeValue(port)}`);
}

/** The options as plain JavaScript may pass them; throws ArgumentError naming the first wrong field. */
export function checkRedisStoresOptions(options: unknown): asserts options is RedisStoresOptions {
  if (!isObject(options)) fail('options', 'redisStores needs an object: { url, keyPrefix } or { cluster: { nodes }, keyPrefix }');
  const o = options as Record<string, unknown>;
  checkKeys(o, '', OPTION_NAMES, 'a redisStores option');
  if (typeof o['keyPrefix'] !== 'string')
    fail('keyPrefix', `is required: a string prepended to every key, one per zlink cluster (e.g. 'myapp:'; '' for none); got ${describeValue(o['keyPrefix'])}`);
  if (/[{}]/.test(o['keyPrefix'] as string)) fail('keyPrefix', `must not contain '{' or '}' (the hash tags in zlink's keys are its own); got '${o['keyPrefix'] as string}'`);
  if (o['url'] !== undefined && o['cluster'] !== undefined)
    fail('cluster', 'and url exclude each other: pass url for one Redis server, or cluster: { nodes } for a Redis Cluster');
  if (o['cluster'] !== undefined) checkCluster(o['cluster']);
  else if (o['url'] === undefined)
    fail('url', 'is required (or cluster: { nodes: [{ host, port }] } for a Redis Cluster): redis://[user:password@]host:port[/db], rediss:// for TLS');
  else checkUrl(o['url']);
  for (const field of ['commandTimeoutMs', 'backoffMs', 'reconnectMaxMs', 'opResultTtlMs'] as const) {
    if (o[field] !== undefined && !positiveMs(o[field])) fail(field, `must be a number of milliseconds greater than 0; got ${describeValue(o[field])}`);
  }
  const attempts = o['attempts'];
  if (attempts !== undefined && (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < 1))
    fail('attempts', `must be an integer of at least 1; got ${describeValue(attempts)}`);
  if (o['connectionName'] !== undefined && typeof o['connectionName'] !== 'string') fail('connectionName', `must be a string; got ${describeValue(o['connectionName'])}`);
}
