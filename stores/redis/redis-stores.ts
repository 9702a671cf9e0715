/**
 * Redis provider of the store interfaces (ioredis 6).
 *
 * Connects to one server (`url`) or a Redis Cluster (`cluster`, client.ts). Key layout (P = keyPrefix; ids are
 * encodeURIComponent-encoded; {..} is the hash tag). Every key one script or command touches shares a tag, so it
 * runs in one hash slot on a cluster; casMany sends one script per slot there (one for all entries on a server):
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
import { checkRedisStoresOptions, REDIS_STORE_DEFAULTS, type RedisStoresOptions } from './options';
import { RedisChannelStore } from './channel-store';
import { RedisDescriptorStore } from './descriptor-store';
import { RedisKeys } from './keys';
import { RedisLocationStore } from './location-store';
import { RedisRelocationStore } from './relocation-store';

export { REDIS_STORE_DEFAULTS, type RedisClusterNode, type RedisClusterOptions, type RedisStoresOptions } from './options';

export function redisStores(options: RedisStoresOptions): Stores {
  checkRedisStoresOptions(options);
  const settings = { ...REDIS_STORE_DEFAULTS, ...options };
  const keys = new RedisKeys(settings.keyPrefix);
  const client = new RedisClient({
    ...(settings.cluster ? { cluster: settings.cluster } : { url: settings.url! }),
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
