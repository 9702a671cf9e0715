/**
 * Injected faults on a real Redis Cluster (§1.1), as faults.test.ts does on one server: replies lost by timeout
 * (CLIENT PAUSE on every master) and node connections killed mid-command (CLIENT KILL). On a cluster ioredis also
 * re-sends a command whose node connection closed; every call must still end definite, and two competing CASes
 * from two store instances never both apply.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { CasResult, NodeRef, ObjectId, Stores } from '../types';
import { deleteKeys } from './delete-keys';
import { redisStores } from './redis-stores';
import { clusterAdmin, describeWithCluster } from './test-cluster';
import { uniquePrefix } from './test-redis';

const prefix = uniquePrefix('cluster-faults');
const nodeA: NodeRef = { nodeId: 'node-a', lifecycleGeneration: 1 };
const nodeB: NodeRef = { nodeId: 'node-b', lifecycleGeneration: 1 };
const actor = (): ObjectId => ({ kind: 'actor', id: `a-${randomBytes(4).toString('hex')}` });

describeWithCluster('redis cluster faults', (nodes) => {
  const names = { a: `zlink-cfault-a-${randomBytes(3).toString('hex')}`, b: `zlink-cfault-b-${randomBytes(3).toString('hex')}` };
  // Short timeouts so a paused master loses replies quickly; enough attempts to outlast the pauses below.
  const options = { cluster: { nodes }, keyPrefix: prefix, commandTimeoutMs: 100, attempts: 8, backoffMs: 20 };
  let admin: Cluster;
  let a: Stores;
  let b: Stores;
  beforeAll(async () => {
    admin = clusterAdmin(nodes);
    await admin.connect();
    a = redisStores({ ...options, connectionName: names.a });
    b = redisStores({ ...options, connectionName: names.b });
    await Promise.all([a.ping(), b.ping()]);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await deleteKeys(admin, prefix);
    admin.disconnect();
  });

  const masters = (): Redis[] => admin.nodes('master');

  const pause = (ms: number) => Promise.all(masters().map((node) => node.call('CLIENT', 'PAUSE', String(ms), 'WRITE')));
  const unpause = () => Promise.all(masters().map((node) => node.call('CLIENT', 'UNPAUSE')));

  /** Pauses writes (scripts included) on every master for `ms`, or until `run` settles. */
  async function paused<T>(ms: number, run: () => Promise<T>): Promise<T> {
    await pause(ms);
    try {
      return await run();
    } finally {
      await unpause();
    }
  }

  /**
   * Starts `run` while writes are paused on every master, kills the node connections of store `a` once one of its
   * commands is held there (sent, not run), and lets the masters go again: ioredis re-sends or the resolver fences.
   */
  async function killedMidCommand<T>(run: () => Promise<T>): Promise<T> {
    await pause(10_000);
    let pending: Promise<T>;
    try {
      pending = run();
      expect(await killMidCommand(names.a)).toBeGreaterThan(0);
    } finally {
      await unpause();
    }
    return pending;
  }

  /** Connections named `name` on every master: their ids, and how many are blocked (a command held by a pause). */
  async function connections(name: string): Promise<{ node: Redis; id: string; blocked: boolean }[]> {
    const lists = await Promise.all(masters().map(async (node) => ({ node, list: (await node.call('CLIENT', 'LIST')) as string })));
    return lists.flatMap(({ node, list }) =>
      list
        .split('\n')
        .filter((line) => line.includes(` name=${name} `))
        .map((line) => ({ node, id: /id=(\d+)/.exec(line)![1]!, blocked: /flags=\S*b/.test(line) })),
    );
  }

  /** Waits until a command of `name` is held by the pause on some master (it was sent), then kills all its connections. */
  async function killMidCommand(name: string): Promise<number> {
    for (let polls = 0; !(await connections(name)).some((c) => c.blocked); polls++) {
      if (polls > 500) throw new Error(`no command of ${name} ever reached a paused master`);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const all = await connections(name);
    await Promise.all(all.map(({ node, id }) => node.call('CLIENT', 'KILL', 'ID', id)));
    return all.length;
  }

  const claimAll = (objects: readonly ObjectId[]) =>
    Promise.all(objects.map((object) => a.location.claim({ object, type: 'Counter', owner: nodeA, opId: randomUUID() })));

  function expectOneOwnerEach(pairs: readonly CasResult[][], finals: readonly (unknown | undefined)[]): void {
    pairs.forEach((results, i) => {
      expect(results.map((result) => result.status).sort()).toEqual(['applied', 'conflict']);
      const winner = results.find((result) => result.status === 'applied')!;
      expect(finals[i]).toEqual(winner.record);
      expect(winner.record?.authorityGeneration).toBe(2);
    });
  }

  test('replies lost to timeouts on every master: competing CASes resolve to exactly one owner per object', async () => {
    const objects = Array.from({ length: 12 }, actor);
    await claimAll(objects);
    const started = Date.now();
    const pairs = await paused(300, () =>
      Promise.all(
        objects.map((object) =>
          Promise.all([
            a.location.cas({ object, opId: randomUUID(), expectedAuthorityGeneration: 1, owner: nodeA }),
            b.location.cas({ object, opId: randomUUID(), expectedAuthorityGeneration: 1, owner: nodeB }),
          ]),
        ),
      ),
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(250); // the replies really were lost and resolved
    expectOneOwnerEach(pairs, await b.location.getMany(objects));
  });

  test('node connections killed while a 128-key casMany is held on the masters: every result matches the store', async () => {
    const objects = Array.from({ length: 128 }, actor);
    await claimAll(objects);
    const results = await killedMidCommand(() =>
      a.location.casMany(objects.map((object) => ({ object, opId: randomUUID(), expectedAuthorityGeneration: 1, owner: nodeB }))),
    );
    const records = await b.location.getMany(objects);
    results.forEach((result, i) => {
      expect(result.status).toBe('applied');
      expect(records[i]).toEqual(result.record);
    });
    // The store keeps working after its node connections were killed.
    expect((await a.location.cas({ object: objects[0]!, opId: randomUUID(), expectedAuthorityGeneration: 2, owner: nodeA })).status).toBe('applied');
  });

  test('node connections killed while a 128-object owner commit is held on the masters: every result matches the store', async () => {
    const objects = Array.from({ length: 128 }, actor);
    await claimAll(objects);
    const entries = objects.map((object) => ({ object, expectedAuthorityGeneration: 1, objectGeneration: 1 }));
    const results = await killedMidCommand(() => a.location.commitOwners({ opId: randomUUID(), owner: nodeB, entries }));
    const records = await b.location.getMany(objects);
    results.forEach((result, i) => {
      expect(result.status).toBe('applied');
      expect(records[i]).toEqual(result.record);
      expect(records[i]?.authorityGeneration).toBe(2);
    });
    // A retry under another opId (one call per slot again) answers every object applied and writes nothing.
    expect(await a.location.commitOwners({ opId: randomUUID(), owner: nodeB, entries })).toEqual(results);
  });

  test('competing CASes while one store loses its node connections mid-command: one owner per object', async () => {
    for (let round = 0; round < 3; round++) {
      const objects = Array.from({ length: 16 }, actor);
      await claimAll(objects);
      const pairs = await killedMidCommand(() =>
        Promise.all(
          objects.map((object) =>
            Promise.all([
              a.location.cas({ object, opId: randomUUID(), expectedAuthorityGeneration: 1, owner: nodeA }),
              b.location.cas({ object, opId: randomUUID(), expectedAuthorityGeneration: 1, owner: nodeB }),
            ]),
          ),
        ),
      );
      expectOneOwnerEach(pairs, await b.location.getMany(objects));
    }
  });
});
