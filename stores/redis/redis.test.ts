import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeStoreContract } from '../contract';
import { RedisKeys } from './keys';
import { redisStores } from './redis-stores';
import { adminClient, deleteKeys, describeWithRedis, REDIS_URL, stat, uniquePrefix } from './test-redis';
import { StoreUnavailableError, type NodeRef, type ObjectId } from '../types';

const prefix = uniquePrefix('redis');
const admin = adminClient();
const nodeA: NodeRef = { nodeId: 'node-a', lifecycleGeneration: 1 };
const nodeB: NodeRef = { nodeId: 'node-b', lifecycleGeneration: 1 };
afterAll(async () => {
  await deleteKeys(admin, prefix);
  admin.disconnect();
});

describeWithRedis('redis provider', () => {
  describeStoreContract('redis', () => {
    const keys = new RedisKeys(prefix);
    return {
      stores: redisStores({ url: REDIS_URL, keyPrefix: prefix }),
      // Real time: the suite's leases and TTLs are tens of milliseconds.
      advance: (ms) => sleep(ms),
      tamperPage: async (relocationId, spotId, page) => {
        const key = `${keys.staged(spotId, relocationId).pageBase}${page + 1}`;
        const text = (await admin.get(key))!;
        await admin.set(key, text.replace('\t1\n', '\t2\n'), 'KEEPTTL');
      },
    };
  });

  test('the owner CAS script is loaded again after SCRIPT FLUSH (NOSCRIPT) and every entry still applies once', async () => {
    const stores = redisStores({ url: REDIS_URL, keyPrefix: prefix });
    try {
      const objects: ObjectId[] = Array.from({ length: 12 }, (_, i) => ({ kind: 'actor', id: `flush-${i}-${randomUUID()}` }));
      await Promise.all(objects.map((object) => stores.location.claim({ object, type: 'Counter', owner: nodeA, opId: randomUUID() })));
      const move = (owner: NodeRef, expectedAuthorityGeneration: number) =>
        stores.location.casMany(objects.map((object) => ({ object, opId: randomUUID(), expectedAuthorityGeneration, owner })));
      expect((await move(nodeB, 1)).map((result) => result.status)).toEqual(objects.map(() => 'applied')); // the script is now loaded on this connection
      await admin.script('FLUSH');
      const noscript = await stat(admin, 'errorstats', 'errorstat_NOSCRIPT');
      expect((await move(nodeA, 2)).map((result) => result.status)).toEqual(objects.map(() => 'applied'));
      expect(await stat(admin, 'errorstats', 'errorstat_NOSCRIPT')).toBeGreaterThan(noscript);
      const records = await stores.location.getMany(objects);
      expect(records.map((record) => [record?.owner.nodeId, record?.authorityGeneration])).toEqual(objects.map(() => ['node-a', 3]));
    } finally {
      await stores.close();
    }
  });

  test('keys of one aggregate share the spot hash tag', () => {
    const keys = new RedisKeys(prefix);
    const staged = keys.staged('room:1', 'ab'.repeat(16));
    const tag = '{o:spot:room%3A1}';
    for (const key of [keys.home({ kind: 'spot', id: 'room:1' }), keys.member('room:1', 'p{7}'), staged.header, staged.pageBase])
      expect(key.slice(prefix.length, prefix.length + tag.length)).toBe(tag);
  });
});

test('an unreachable Redis surfaces as StoreUnavailableError, never a raw ioredis error', async () => {
  const stores = redisStores({ url: 'redis://127.0.0.1:1', keyPrefix: prefix, commandTimeoutMs: 100, attempts: 2, backoffMs: 5 });
  try {
    await expect(stores.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    const cas = stores.location.cas({ object: { kind: 'actor', id: 'a' }, opId: 'o', expectedAuthorityGeneration: 1 });
    await expect(cas).rejects.toMatchObject({ name: 'StoreUnavailableError', outcomeUnknown: false });
    await expect(stores.location.get({ kind: 'actor', id: 'a' })).rejects.toBeInstanceOf(StoreUnavailableError);
  } finally {
    await stores.close();
  }
});
