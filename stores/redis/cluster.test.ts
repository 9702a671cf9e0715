/**
 * The Redis provider on a real Redis Cluster of three masters (test-cluster.ts finds or starts it): the whole store
 * contract, then what only a cluster has -- keys spread over every master, per-node script caches, MOVED and ASK
 * while a slot migrates, cleanup that scans every master.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster, Redis } from 'ioredis';
import { describeStoreContract } from '../contract';
import { StoreUnavailableError, type NodeRef, type ObjectId, type Stores } from '../types';
import { deleteKeys } from './delete-keys';
import { RedisKeys } from './keys';
import type { RedisClusterNode } from './options';
import { redisStores } from './redis-stores';
import { hashSlot } from './slot';
import { clusterAdmin, describeWithCluster } from './test-cluster';
import { stat, uniquePrefix } from './test-redis';

const prefix = uniquePrefix('cluster');
const nodeA: NodeRef = { nodeId: 'node-a', lifecycleGeneration: 1 };
const nodeB: NodeRef = { nodeId: 'node-b', lifecycleGeneration: 1 };
const actor = (): ObjectId => ({ kind: 'actor', id: `a-${randomBytes(4).toString('hex')}` });

const totalStat = (nodes: Redis[], section: 'errorstats' | 'commandstats', name: string) =>
  Promise.all(nodes.map((node) => stat(node, section, name))).then((counts) => counts.reduce((a, b) => a + b, 0));

describeWithCluster('redis cluster provider', (nodes) => {
  let admin: Cluster;
  beforeAll(async () => {
    admin = clusterAdmin(nodes);
    await admin.connect();
  });
  afterAll(async () => {
    await deleteKeys(admin, prefix);
    admin.disconnect();
  });

  describeStoreContract('redis cluster', () => {
    const keys = new RedisKeys(prefix);
    return {
      stores: redisStores({ cluster: { nodes }, keyPrefix: prefix }),
      // Real time: the suite's leases and TTLs are tens of milliseconds.
      advance: (ms) => sleep(ms),
      tamperPage: async (relocationId, spotId, page) => {
        const key = `${keys.staged(spotId, relocationId).pageBase}${page + 1}`;
        const text = (await admin.get(key))!;
        await admin.set(key, text.replace('\t1\n', '\t2\n'), 'KEEPTTL');
      },
    };
  });

  describe('on the cluster', () => {
    let stores: Stores;
    beforeAll(() => {
      stores = redisStores({ cluster: { nodes }, keyPrefix: prefix, connectionName: 'zlink-cluster-test' });
    });
    afterAll(() => stores.close());

    const claim = (object: ObjectId, owner = nodeA) => stores.location.claim({ object, type: 'Counter', owner, opId: randomUUID() });
    const keysOn = async (node: Redis): Promise<string[]> => {
      const found: string[] = [];
      let cursor = '0';
      do {
        const [next, batch] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        found.push(...batch);
        cursor = next;
      } while (cursor !== '0');
      return found;
    };

    test('records of one casMany spread over every master; each entry is answered', async () => {
      const objects = Array.from({ length: 96 }, actor);
      await Promise.all(objects.map((object) => claim(object)));
      const results = await stores.location.casMany(objects.map((object) => ({ object, opId: randomUUID(), expectedAuthorityGeneration: 1, owner: nodeB })));
      expect(results.every((result) => result.status === 'applied' && result.record?.owner.nodeId === 'node-b')).toBe(true);
      const masters = admin.nodes('master');
      expect(masters).toHaveLength(3);
      const homes = new Set(objects.map((object) => new RedisKeys(prefix).home(object)));
      const perMaster = await Promise.all(masters.map(async (node) => (await keysOn(node)).filter((key) => homes.has(key)).length));
      expect(perMaster.every((count) => count > 0)).toBe(true);
      expect(perMaster.reduce((a, b) => a + b, 0)).toBe(objects.length);
    });

    test('scripts flushed on every node (SCRIPT FLUSH) are loaded again on the node that needs them (NOSCRIPT)', async () => {
      const objects = Array.from({ length: 24 }, actor);
      await Promise.all(objects.map((object) => claim(object)));
      await Promise.all(admin.nodes('master').map((node) => node.script('FLUSH')));
      const noscript = await totalStat(admin.nodes('master'), 'errorstats', 'errorstat_NOSCRIPT');
      const results = await stores.location.casMany(objects.map((object) => ({ object, opId: randomUUID(), expectedAuthorityGeneration: 1, owner: nodeB })));
      expect(results.map((result) => result.status)).toEqual(objects.map(() => 'applied'));
      expect((await stores.location.getMany(objects)).map((record) => record?.authorityGeneration)).toEqual(objects.map(() => 2));
      expect(await totalStat(admin.nodes('master'), 'errorstats', 'errorstat_NOSCRIPT')).toBeGreaterThan(noscript);
    });

    test('deleteKeys scans every master and removes keys of every slot', async () => {
      const scratch = `${prefix}scratch:`;
      const keys = Array.from({ length: 60 }, (_, i) => `${scratch}{k${i}}`);
      await Promise.all(keys.map((key) => admin.set(key, '1')));
      const masters = admin.nodes('master');
      const before = await Promise.all(masters.map(async (node) => (await keysOn(node)).filter((key) => key.startsWith(scratch)).length));
      expect(before.filter((count) => count > 0)).toHaveLength(3);
      await deleteKeys(admin, scratch);
      const after = await Promise.all(masters.map(async (node) => (await keysOn(node)).filter((key) => key.startsWith(scratch)).length));
      expect(after).toEqual([0, 0, 0]);
    });

    describe('a slot migrating between masters (MOVED and ASK, followed by ioredis)', () => {
      /** The master serving `slot` and another one, with their cluster node ids. */
      async function owners(slot: number): Promise<{ from: Redis; to: Redis; fromId: string; toId: string }> {
        const masters = admin.nodes('master');
        const withIds = await Promise.all(masters.map(async (node) => ({ node, id: String(await node.cluster('MYID')) })));
        const slots = await masters[0]!.cluster('SLOTS');
        const range = slots.find(([start, end]) => slot >= start && slot <= end)!;
        const fromId = range[2]![2];
        const from = withIds.find((entry) => entry.id === fromId)!;
        const to = withIds.find((entry) => entry.id !== fromId)!;
        return { from: from.node, to: to.node, fromId, toId: to.id };
      }

      const address = (node: Redis) => ({ host: node.options.host!, port: node.options.port! });

      /** Moves the keys of `slot` and finishes the migration on every master (the cluster then answers MOVED). */
      async function finish(slot: number, from: Redis, to: Redis, toId: string): Promise<void> {
        for (;;) {
          const keys = (await from.cluster('GETKEYSINSLOT', slot, 100)) as string[];
          if (keys.length === 0) break;
          await from.migrate(address(to).host, address(to).port, '', 0, 5000, 'KEYS', ...keys);
        }
        await Promise.all(admin.nodes('master').map((node) => node.cluster('SETSLOT', slot, 'NODE', toId)));
      }

      test('a record whose slot moved is still read, claimed and CASed (MOVED); during the move too (ASK)', async () => {
        const object = actor();
        await claim(object);
        const key = new RedisKeys(prefix).home(object);
        const slot = hashSlot(key);
        const { from, to, fromId, toId } = await owners(slot);

        // Mid-migration: the record moved to the importing node, the source answers ASK for it.
        await to.cluster('SETSLOT', slot, 'IMPORTING', fromId);
        await from.cluster('SETSLOT', slot, 'MIGRATING', toId);
        await from.migrate(address(to).host, address(to).port, '', 0, 5000, 'KEYS', key);
        const [asks, moves] = [await stat(to, 'commandstats', 'cmdstat_asking'), await stat(from, 'errorstats', 'errorstat_MOVED')];
        expect((await stores.location.get(object))?.owner).toEqual(nodeA);
        const asked = await stores.location.cas({ object, opId: randomUUID(), expectedAuthorityGeneration: 1, owner: nodeB });
        expect(asked).toMatchObject({ status: 'applied', record: { owner: nodeB, authorityGeneration: 2 } });
        expect(await stat(to, 'commandstats', 'cmdstat_asking')).toBeGreaterThanOrEqual(asks + 2);

        // Migration finished: the store's slot map is stale, the old master answers MOVED.
        await finish(slot, from, to, toId);
        const moved = await stores.location.cas({ object, opId: randomUUID(), expectedAuthorityGeneration: 2, owner: nodeA });
        expect(moved).toMatchObject({ status: 'applied', record: { owner: nodeA, authorityGeneration: 3 } });
        expect(await stores.location.get(object)).toEqual(moved.record);
        expect(String(await to.get(key))).toContain('"ag":3');
        expect(await stat(from, 'errorstats', 'errorstat_MOVED')).toBeGreaterThan(moves);

        // And back, so the cluster's layout is as it was for the other suites.
        const back = await owners(slot);
        await back.to.cluster('SETSLOT', slot, 'IMPORTING', back.fromId);
        await back.from.cluster('SETSLOT', slot, 'MIGRATING', back.toId);
        await finish(slot, back.from, back.to, back.toId);
        expect(await stores.location.get(object)).toEqual(moved.record);
      });
    });

    test('an unreachable cluster surfaces as StoreUnavailableError, never a raw ioredis error', async () => {
      const unreachable: RedisClusterNode[] = [{ host: '127.0.0.1', port: 1 }];
      const dead = redisStores({ cluster: { nodes: unreachable }, keyPrefix: prefix, commandTimeoutMs: 100, attempts: 2, backoffMs: 5 });
      try {
        await expect(dead.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
        const cas = dead.location.cas({ object: actor(), opId: 'o', expectedAuthorityGeneration: 1 });
        await expect(cas).rejects.toMatchObject({ name: 'StoreUnavailableError', outcomeUnknown: false });
        await expect(dead.location.get(actor())).rejects.toBeInstanceOf(StoreUnavailableError);
        await expect(dead.ping()).rejects.toThrow(/redis not reachable at cluster 127\.0\.0\.1:1: /);
      } finally {
        await dead.close();
      }
    });
  });
});
