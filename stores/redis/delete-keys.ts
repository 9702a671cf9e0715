import type { Cluster, Redis } from 'ioredis';

/**
 * Deletes every key under `prefix` (SCAN + DEL): cleanup after tests and benchmarks that use their own keyPrefix.
 * On a cluster SCAN sees one node's keys only, so every master is scanned, and keys are deleted one by one (a
 * multi-key DEL must stay in one hash slot), each on the master that holds it.
 */
export async function deleteKeys(redis: Redis | Cluster, prefix: string): Promise<void> {
  if (!redis.isCluster) return deleteOn(redis as Redis, prefix, (keys) => (redis as Redis).del(...keys));
  const cluster = redis as Cluster;
  if (cluster.status === 'wait') await cluster.connect();
  else if (cluster.status !== 'ready') await new Promise((resolve) => cluster.once('ready', resolve));
  await Promise.all(cluster.nodes('master').map((node) => deleteOn(node, prefix, (keys) => Promise.all(keys.map((key) => node.del(key))))));
}

async function deleteOn(redis: Redis, prefix: string, del: (keys: string[]) => Promise<unknown>): Promise<void> {
  // A glob pattern: escape the characters SCAN MATCH would take as wildcards (test prefixes are plain, app ones may not be).
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await del(keys);
  } while (cursor !== '0');
}
