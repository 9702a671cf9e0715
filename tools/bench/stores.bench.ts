/**
 * Stores benchmark against a real Redis (`npm run bench:stores -- --ops 20000`):
 *   single CAS ops/s, casMany and commitOwners keys/s (128 keys per call), SpotWide aggregate flip ms at 1,024 / 2,500
 *   / 10,000 members (median of --runs; wall time of commitAggregate and the server time of its script from INFO).
 * Reference (DESIGN.md): a single-key script ~30k/s, 128 keys per script ~120k keys/s, 1,024-member flip ~4 ms.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import Redis from 'ioredis';
import { redisStores } from '../../stores/redis/redis-stores';
import type { CasResult, NodeRef, ObjectId, Stores } from '../../stores/types';
import { deleteKeys } from '../../stores/redis/delete-keys';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
    ops: { type: 'string', default: '20000' },
    calls: { type: 'string', default: '300' },
    concurrency: { type: 'string', default: '64' },
    runs: { type: 'string', default: '7' },
  },
});
const ops = Number(values.ops);
const calls = Number(values.calls);
const concurrency = Number(values.concurrency);
const runs = Number(values.runs);
const prefix = `zlink:bench:${randomBytes(4).toString('hex')}:`;
const owners: NodeRef[] = [
  { nodeId: 'bench-a', lifecycleGeneration: 1 },
  { nodeId: 'bench-b', lifecycleGeneration: 1 },
];
const actor = (id: string): ObjectId => ({ kind: 'actor', id });

/** Runs `count` tasks with at most `limit` in flight (they share ioredis auto-pipelining ticks). */
async function pool(count: number, limit: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, count) }, async () => {
    while (next < count) await task(next++);
  }));
}

async function claimAll(stores: Stores, ids: readonly string[], membership: { spot?: string; spotWide?: boolean } = {}): Promise<void> {
  await pool(ids.length, 256, async (i) => {
    await stores.location.claim({ object: actor(ids[i]!), type: 'Bench', owner: owners[0]!, opId: randomUUID(), ...membership });
  });
}

async function singleCas(stores: Stores): Promise<number> {
  const ids = Array.from({ length: 1024 }, (_, i) => `single-${i}`);
  await claimAll(stores, ids);
  const generation = ids.map(() => 1);
  const started = performance.now();
  await pool(ops, concurrency, async (n) => {
    const i = n % ids.length;
    const result = await stores.location.cas({ object: actor(ids[i]!), opId: randomUUID(), expectedAuthorityGeneration: generation[i]!, owner: owners[n % 2]! });
    generation[i] = result.record!.authorityGeneration;
  });
  return ops / ((performance.now() - started) / 1000);
}

/** One 128-key slice per in-flight call (so expected generations stay exact): the slice's new generations, in order. */
type ManyCall = (stores: Stores, slice: readonly string[], expected: readonly number[], owner: NodeRef) => Promise<CasResult[]>;

/** `casMany` (one op record per key) or `commitOwners` (a relocation target's commits: one op record per call). */
const manyCalls: Record<'casMany' | 'commitOwners', ManyCall> = {
  casMany: (stores, slice, expected, owner) =>
    stores.location.casMany(slice.map((id, k) => ({ object: actor(id), opId: randomUUID(), expectedAuthorityGeneration: expected[k]!, owner }))),
  commitOwners: (stores, slice, expected, owner) =>
    stores.location.commitOwners({
      opId: randomUUID(),
      owner,
      entries: slice.map((id, k) => ({ object: actor(id), expectedAuthorityGeneration: expected[k]!, objectGeneration: 1 })),
    }),
};

async function manyKeys(stores: Stores, admin: Redis, name: keyof typeof manyCalls): Promise<{ keysPerSecond: number; serverUsPerKey: number }> {
  const ids = Array.from({ length: 128 * 8 }, (_, i) => `${name}-${i}`);
  await claimAll(stores, ids);
  const generation = ids.map(() => 1);
  const before = await evalshaUsec(admin);
  const started = performance.now();
  await pool(calls, 8, async (n) => {
    const slice = (n % 8) * 128;
    const results = await manyCalls[name](stores, ids.slice(slice, slice + 128), generation.slice(slice, slice + 128), owners[n % 2]!);
    results.forEach((result, k) => (generation[slice + k] = result.record!.authorityGeneration));
  });
  const keysPerSecond = (calls * 128) / ((performance.now() - started) / 1000);
  return { keysPerSecond, serverUsPerKey: ((await evalshaUsec(admin)) - before) / (calls * 128) };
}

async function evalshaUsec(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  return Number(/cmdstat_evalsha:calls=\d+,usec=(\d+)/.exec(info)?.[1] ?? 0);
}

async function flip(stores: Stores, admin: Redis, size: number): Promise<{ wallMs: number; serverMs: number }> {
  const room = `room-${size}`;
  await stores.location.claim({ object: { kind: 'spot', id: room }, type: 'Room', owner: owners[0]!, opId: randomUUID() });
  const ids = Array.from({ length: size }, (_, i) => `${room}-m${i}`);
  await claimAll(stores, ids, { spot: room, spotWide: true });
  const wall: number[] = [];
  const server: number[] = [];
  for (let run = 0; run < runs; run++) {
    const relocationId = randomBytes(16).toString('hex');
    const expected = run + 1;
    const header = await stores.location.stageAggregate({
      relocationId,
      spot: { kind: 'spot', id: room },
      expectedSpotAuthorityGeneration: expected,
      members: ids.map((id) => ({ object: actor(id), expectedAuthorityGeneration: expected })),
      opId: randomUUID(),
    });
    const before = await evalshaUsec(admin);
    const started = performance.now();
    const result = await stores.location.commitAggregate({ relocationId, spot: { kind: 'spot', id: room }, owner: owners[(run + 1) % 2]!, opId: randomUUID(), header });
    wall.push(performance.now() - started);
    server.push(((await evalshaUsec(admin)) - before) / 1000);
    if (result.status !== 'applied') throw new Error(`flip ${size} run ${run}: ${result.status}`);
    await stores.location.discardAggregate(relocationId, { kind: 'spot', id: room });
  }
  return { wallMs: median(wall), serverMs: median(server) };
}

const median = (values: number[]): number => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const stores = redisStores({ url: values.url, keyPrefix: prefix });
  const admin = new Redis(values.url);
  try {
    await stores.ping();
    console.log(`single CAS:  ${Math.round(await singleCas(stores))} ops/s  (${ops} ops, ${concurrency} in flight)`);
    for (const [name, script] of [['casMany', 'owner-cas.lua'], ['commitOwners', 'owner-commit.lua']] as const) {
      const many = await manyKeys(stores, admin, name);
      console.log(`${`${name}:`.padEnd(13)} ${Math.round(many.keysPerSecond)} keys/s, ${many.serverUsPerKey.toFixed(1)} µs per key in Redis (${script})  (${calls} calls x 128 keys, 8 in flight)`);
    }
    for (const size of [1024, 2500, 10_000]) {
      const { wallMs, serverMs } = await flip(stores, admin, size);
      console.log(`flip ${String(size).padStart(6)}: ${wallMs.toFixed(1)} ms wall, ${serverMs.toFixed(1)} ms server  (median of ${runs})`);
    }
  } finally {
    await deleteKeys(admin, prefix);
    await stores.close();
    admin.disconnect();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
