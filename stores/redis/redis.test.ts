import { setTimeout as sleep } from 'node:timers/promises';
import { describeStoreContract } from '../contract';
import { RedisKeys } from './keys';
import { redisStores } from './redis-stores';
import { adminClient, deleteKeys, describeWithRedis, REDIS_URL, uniquePrefix } from './test-redis';
import { StoreUnavailableError } from '../types';

const prefix = uniquePrefix('redis');
const admin = adminClient();
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
