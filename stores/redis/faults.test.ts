/**
 * Injected faults against a real Redis (§1.1): replies lost by timeout (CLIENT PAUSE) and connections killed
 * mid-command (CLIENT KILL). Afterwards every store call has a definite outcome, and two competing CASes from two
 * store instances never both apply.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { StoreUnavailableError, type CasResult, type NodeRef, type ObjectId, type Stores } from '../types';
import { RedisClient } from './client';
import { FENCED } from './guarded';
import { RedisKeys } from './keys';
import { redisStores } from './redis-stores';
import { adminClient, deleteKeys, describeWithRedis, REDIS_URL, uniquePrefix } from './test-redis';

const prefix = uniquePrefix('faults');
const admin = adminClient();
const nodeA: NodeRef = { nodeId: 'node-a', lifecycleGeneration: 1 };
const nodeB: NodeRef = { nodeId: 'node-b', lifecycleGeneration: 1 };
const actor = (): ObjectId => ({ kind: 'actor', id: `a-${randomBytes(4).toString('hex')}` });

describeWithRedis('redis faults', () => {
  const names = { a: `zlink-fault-a-${randomBytes(3).toString('hex')}`, b: `zlink-fault-b-${randomBytes(3).toString('hex')}` };
  // Short timeouts so a paused server loses replies quickly; enough attempts to outlast the pauses below.
  const options = { url: REDIS_URL, keyPrefix: prefix, commandTimeoutMs: 100, attempts: 8, backoffMs: 20 };
  let a: Stores;
  let b: Stores;
  beforeAll(async () => {
    a = redisStores({ ...options, connectionName: names.a });
    b = redisStores({ ...options, connectionName: names.b });
    await Promise.all([a.ping(), b.ping()]);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await deleteKeys(admin, prefix);
    admin.disconnect();
  });

  async function paused<T>(ms: number, mode: 'WRITE' | 'ALL', run: () => Promise<T>): Promise<T> {
    await admin.call('CLIENT', 'PAUSE', String(ms), mode);
    try {
      return await run();
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
    }
  }

  const clientId = async (name: string): Promise<string> => {
    const list = (await admin.call('CLIENT', 'LIST')) as string;
    const line = list.split('\n').find((entry) => entry.includes(` name=${name} `));
    return /id=(\d+)/.exec(line!)![1]!;
  };

  const competing = async (object: ObjectId): Promise<CasResult[]> =>
    Promise.all([
      a.location.cas({ object, opId: randomUUID(), expectedAuthorityGeneration: 1, owner: nodeA }),
      b.location.cas({ object, opId: randomUUID(), expectedAuthorityGeneration: 1, owner: nodeB }),
    ]);

  function expectOneOwner(results: CasResult[], final: { owner: NodeRef; authorityGeneration: number } | undefined): void {
    expect(results.map((result) => result.status).sort()).toEqual(['applied', 'conflict']);
    const winner = results.find((result) => result.status === 'applied')!;
    expect(final).toEqual(winner.record);
    expect(final?.authorityGeneration).toBe(2);
  }

  test('replies lost to timeouts (CLIENT PAUSE WRITE): competing CASes resolve to exactly one owner', async () => {
    const object = actor();
    await a.location.claim({ object, type: 'Counter', owner: nodeA, opId: randomUUID() });
    const started = Date.now();
    const results = await paused(300, 'WRITE', () => competing(object));
    expect(Date.now() - started).toBeGreaterThanOrEqual(250); // the replies really were lost and resolved
    expectOneOwner(results, await a.location.get(object));
  });

  test('CLIENT PAUSE ALL: reads and writes both wait out the pause and stay definite', async () => {
    const object = actor();
    await a.location.claim({ object, type: 'Counter', owner: nodeA, opId: randomUUID() });
    const results = await paused(250, 'ALL', () => competing(object));
    expectOneOwner(results, await b.location.get(object));
  });

  test('a resolver that cannot learn the outcome rejects outcomeUnknown=true; the write may still apply later', async () => {
    const object = actor();
    await a.location.claim({ object, type: 'Counter', owner: nodeA, opId: randomUUID() });
    const impatient = redisStores({ ...options, attempts: 2, backoffMs: 5 });
    try {
      const error = await paused(600, 'WRITE', () =>
        impatient.location.cas({ object, opId: randomUUID(), expectedAuthorityGeneration: 1, owner: nodeB }).catch((e: unknown) => e),
      );
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as StoreUnavailableError).outcomeUnknown).toBe(true);
      // The timed-out script was still queued on the server and ran at unpause: only a read can tell.
      expect(await a.location.get(object)).toMatchObject({ owner: nodeB, authorityGeneration: 2 });
    } finally {
      await impatient.close();
    }
  });

  test('a fenced attempt never applies, even when the script runs after the fence', async () => {
    const client = new RedisClient({ url: REDIS_URL, commandTimeoutMs: 1000, attempts: 2, backoffMs: 5, reconnectMaxMs: 100 });
    const keys = new RedisKeys(prefix);
    try {
      const object = actor();
      await a.location.claim({ object, type: 'Counter', owner: nodeA, opId: randomUUID() });
      const key = keys.home(object);
      const opKey = keys.op(key, 'late-op');
      await client.ready();
      expect(await client.script('opFence', [opKey], [60_000, 'token-1'])).toEqual([FENCED]);
      // Both forms of a change (owner-cas.lua): the JSON one and the compact owner change to the call's owner.
      const late = JSON.stringify({ e: 1, n: 'node-b', g: 1, to: key });
      expect(await client.script('ownerCas', [key, opKey], [60_000, 'token-1', '', '', late])).toEqual([FENCED]);
      expect(await client.script('ownerCas', [key, opKey], [60_000, 'token-1', 'node-b', 1, '1'])).toEqual([FENCED]);
      expect(await a.location.get(object)).toMatchObject({ owner: nodeA, authorityGeneration: 1 });
    } finally {
      await client.close();
    }
  });

  test('a fenced owner commit never applies any entry, even when the script runs after the fence', async () => {
    const client = new RedisClient({ url: REDIS_URL, commandTimeoutMs: 1000, attempts: 2, backoffMs: 5, reconnectMaxMs: 100 });
    const keys = new RedisKeys(prefix);
    try {
      const objects = [actor(), actor()];
      await Promise.all(objects.map((object) => a.location.claim({ object, type: 'Counter', owner: nodeA, opId: randomUUID() })));
      const records = objects.map((object) => keys.home(object));
      const opKey = keys.op(records[0]!, 'late-commit');
      await client.ready();
      expect(await client.script('opFence', [opKey], [60_000, 'token-1'])).toEqual([FENCED]);
      expect(await client.script('ownerCommit', [...records, opKey], [60_000, 'token-1', 'node-b', 1, 1, 1, 1, 1])).toBe(FENCED);
      expect(await a.location.getMany(objects)).toMatchObject([
        { owner: nodeA, authorityGeneration: 1 },
        { owner: nodeA, authorityGeneration: 1 },
      ]);
    } finally {
      await client.close();
    }
  });

  test('replies lost to timeouts (CLIENT PAUSE WRITE) during owner commits: every result matches the store, each object committed once', async () => {
    const objects = Array.from({ length: 64 }, actor);
    await Promise.all(objects.map((object) => a.location.claim({ object, type: 'Counter', owner: nodeA, opId: randomUUID() })));
    const entries = objects.map((object) => ({ object, expectedAuthorityGeneration: 1, objectGeneration: 1 }));
    const started = Date.now();
    const [first, second] = await paused(300, 'WRITE', () =>
      Promise.all([
        a.location.commitOwners({ opId: randomUUID(), owner: nodeB, entries: entries.slice(0, 32) }),
        b.location.commitOwners({ opId: randomUUID(), owner: nodeB, entries: entries.slice(32) }),
      ]),
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    const records = await a.location.getMany(objects);
    [...first!, ...second!].forEach((result, i) => {
      expect(result.status).toBe('applied');
      expect(records[i]).toEqual(result.record);
      expect(records[i]?.authorityGeneration).toBe(2);
    });
  });

  test('connection killed during a 128-entry owner commit: every result matches the store', async () => {
    const objects = Array.from({ length: 128 }, actor);
    await Promise.all(objects.map((object) => a.location.claim({ object, type: 'Counter', owner: nodeA, opId: randomUUID() })));
    const id = await clientId(names.a);
    const commit = a.location.commitOwners({ opId: randomUUID(), owner: nodeB, entries: objects.map((object) => ({ object, expectedAuthorityGeneration: 1, objectGeneration: 1 })) });
    setImmediate(() => void admin.call('CLIENT', 'KILL', 'ID', id));
    const results = await commit;
    const records = await b.location.getMany(objects);
    results.forEach((result, i) => {
      expect(result.status).toBe('applied');
      expect(records[i]).toEqual(result.record);
    });
  });

  test('an owner commit whose outcome stayed unknown and applied later: the retry under a new opId answers applied, and writes nothing', async () => {
    const object = actor();
    await a.location.claim({ object, type: 'Counter', owner: nodeA, opId: randomUUID() });
    const entries = [{ object, expectedAuthorityGeneration: 1, objectGeneration: 1 }];
    const impatient = redisStores({ ...options, attempts: 2, backoffMs: 5 });
    try {
      const error = await paused(600, 'WRITE', () => impatient.location.commitOwners({ opId: randomUUID(), owner: nodeB, entries }).catch((e: unknown) => e));
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as StoreUnavailableError).outcomeUnknown).toBe(true);
      // The timed-out script ran at unpause; the target's retry (a later call, a new opId) must not read it as a conflict.
      const retry = await a.location.commitOwners({ opId: randomUUID(), owner: nodeB, entries });
      expect(retry).toEqual([{ status: 'applied', record: await a.location.get(object) }]);
      expect(retry[0]!.record).toMatchObject({ owner: nodeB, authorityGeneration: 2 });
    } finally {
      await impatient.close();
    }
  });

  test('owner-cas.lua refuses a compact change without the call owner before writing any entry', async () => {
    const client = new RedisClient({ url: REDIS_URL, commandTimeoutMs: 1000, attempts: 2, backoffMs: 5, reconnectMaxMs: 100 });
    const keys = new RedisKeys(prefix);
    try {
      const first = actor();
      const second = actor();
      await a.location.claim({ object: first, type: 'Counter', owner: nodeA, opId: randomUUID() });
      await a.location.claim({ object: second, type: 'Counter', owner: nodeA, opId: randomUUID() });
      await client.ready();
      const json = JSON.stringify({ e: 1, n: 'node-b', g: 1 });
      const entries = [keys.home(first), keys.op(keys.home(first), 'op-1'), keys.home(second), keys.op(keys.home(second), 'op-2')];
      await expect(client.script('ownerCas', entries, [60_000, 'token-1', '', '', json, '1'])).rejects.toThrow(/compact change without the call owner/);
      expect(await a.location.get(first)).toMatchObject({ owner: nodeA, authorityGeneration: 1 });
      expect(await a.location.get(second)).toMatchObject({ owner: nodeA, authorityGeneration: 1 });
    } finally {
      await client.close();
    }
  });

  test('connection killed mid-command (CLIENT KILL): the store reconnects, resolves, and there is one owner', async () => {
    for (let round = 0; round < 5; round++) {
      const object = actor();
      await a.location.claim({ object, type: 'Counter', owner: nodeA, opId: randomUUID() });
      const id = await clientId(names.a);
      const results = await paused(150, 'WRITE', async () => {
        const race = competing(object);
        await sleep(10 + round * 10);
        await admin.call('CLIENT', 'KILL', 'ID', id);
        return race;
      });
      expectOneOwner(results, await a.location.get(object));
    }
  });

  test('connection killed during a 128-key casMany: every result matches the store', async () => {
    const objects = Array.from({ length: 128 }, actor);
    await Promise.all(objects.map((object) => a.location.claim({ object, type: 'Counter', owner: nodeA, opId: randomUUID() })));
    const id = await clientId(names.a);
    const many = a.location.casMany(objects.map((object) => ({ object, opId: randomUUID(), expectedAuthorityGeneration: 1, owner: nodeB })));
    setImmediate(() => void admin.call('CLIENT', 'KILL', 'ID', id));
    const results = await many;
    const records = await b.location.getMany(objects);
    results.forEach((result, i) => {
      expect(result.status).toBe('applied');
      expect(records[i]).toEqual(result.record);
    });
  });
});
