/**
 * Host relocation benchmark (`npm run bench:relocation -- --actors 10000 --stack memory --runs 3`):
 * one source host with N Entry Spot Actors (small preserved state), one same-version target; measures the
 * Relocate call's total time, S0→S1 per unit (source stop time, §8) p50/p99, and the share of process CPU.
 * Stacks: memory (memory stores + in-process transport) or redis (real Redis + ws on loopback), both hosts in
 * this process, so the CPU figure covers source and target together.
 * `--inspect`: both hosts report to one `createInspector()` (both watched for unit events) and a WebSocket client
 * reads its page stream throughout, as an open inspector tab would — the inspector's cost on a relocation.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import Redis from 'ioredis';
import WebSocket from 'ws';
import { createInspector, type Inspector } from '../../inspect';
import {
  createRuntime,
  defineActor,
  memoryStores,
  preserveState,
  redisStores,
  RelocationMode,
  UNIT_CHANGED,
  type FrameworkRuntime,
  type UnitEvent,
} from '../../runtime';
import { deleteKeys } from '../../stores/redis/delete-keys';

const { values } = parseArgs({
  options: {
    actors: { type: 'string', default: '10000' },
    stack: { type: 'string', default: 'memory' },
    runs: { type: 'string', default: '3' },
    url: { type: 'string', default: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
    /** inFlightPayloadBudgetBytes of the source (default: the runtime's 16 MiB). */
    budget: { type: 'string' },
    inspect: { type: 'boolean', default: false },
  },
  strict: true,
});
const budget = values.budget === undefined ? undefined : Number(values.budget);
const actors = Number(values.actors);
const runs = Number(values.runs);
if (!Number.isInteger(actors) || actors <= 0) throw new TypeError('--actors: must be a positive integer');
if (values.stack !== 'memory' && values.stack !== 'redis') throw new TypeError("--stack: 'memory' or 'redis'");

const Counter = defineActor<{ n: number; pad: string }>({
  type: 'Counter',
  relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) }),
  create: () => ({ n: 0, pad: 'x'.repeat(64) }),
  receive: (state, m: { by: number }) => (state.n += m.by),
});

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** An inspector with a page client attached (counts the messages the page would get). */
async function inspectorWithPage(): Promise<{ inspector: Inspector; messages: () => number; close(): Promise<void> }> {
  const inspector = await createInspector({ port: 0 });
  const ws = new WebSocket(`${inspector.url.replace('http', 'ws')}ws`);
  let messages = 0;
  ws.on('message', () => messages++);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return {
    inspector,
    messages: () => messages,
    async close() {
      ws.terminate();
      await inspector.close();
    },
  };
}

async function once(run: number): Promise<{ totalMs: number; p50: number; p99: number; cpuShare: number; pageMessages?: number }> {
  const inspection = values.inspect ? await inspectorWithPage() : undefined;
  const inspect = inspection ? { inspect: inspection.inspector.inspect } : {};
  const prefix = `zlink:bench:reloc:${randomBytes(4).toString('hex')}:`;
  const stores = values.stack === 'redis' ? redisStores({ url: values.url!, keyPrefix: prefix }) : memoryStores();
  const meshes = values.stack === 'redis' ? [{ name: 'main', listen: { host: '127.0.0.1', port: 0 } }] : [{ name: 'main' }];
  const timing = { discoveryIntervalMs: 50, messageFollowDurationMs: 2000, relocationCutoverWaitTimeoutMs: 1000 };
  const hosts: FrameworkRuntime[] = [];
  try {
    const source = await createRuntime({
      nodeId: `src-${run}`,
      applicationVersion: 1,
      stores,
      meshes,
      types: [Counter],
      timing,
      ...(budget ? { inFlightPayloadBudgetBytes: budget } : {}),
      ...inspect,
    });
    const target = await createRuntime({ nodeId: `dst-${run}`, applicationVersion: 1, stores, meshes, types: [Counter], timing, ...inspect });
    hosts.push(source, target);
    for (const h of hosts) inspection?.inspector.watch(h);
    for (let i = 0; i < actors; i += 500) {
      await Promise.all(Array.from({ length: Math.min(500, actors - i) }, (_, j) => source.createActor('Counter', `c-${i + j}`)));
    }
    const s0 = new Map<string, number>();
    const stops: number[] = [];
    source.on(UNIT_CHANGED, (e: UnitEvent) => {
      if (e.point === 'S0') s0.set(e.unit, e.at);
      else if (e.point === 'S1') stops.push(e.at - s0.get(e.unit)!);
    });
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const result = await source.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 600_000 });
    const totalMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    if (result.outcome !== 0) throw new Error(`relocation blocked with reason ${result.reason}`);
    if (stops.length !== actors) throw new Error(`expected ${actors} S1 points, got ${stops.length}`);
    stops.sort((a, b) => a - b);
    const pageMessages = inspection?.messages();
    return { totalMs, p50: pct(stops, 50), p99: pct(stops, 99), cpuShare: (cpu.user + cpu.system) / 1000 / totalMs, ...(pageMessages !== undefined ? { pageMessages } : {}) };
  } finally {
    await inspection?.close();
    for (const h of hosts) await h.shutdown({ deadlineMs: 10_000 });
    await stores.close();
    if (values.stack === 'redis') {
      const redis = new Redis(values.url!);
      await deleteKeys(redis, prefix);
      redis.disconnect();
    }
  }
}

async function main(): Promise<void> {
  const results = [];
  for (let run = 0; run < runs; run++) {
    const r = await once(run);
    results.push(r);
    console.log(
      `run ${run + 1}: total ${r.totalMs.toFixed(0)} ms, S0→S1 p50 ${r.p50} ms p99 ${r.p99} ms, CPU ${(r.cpuShare * 100).toFixed(0)}% of one core ` +
        `(${(r.cpuShare * r.totalMs).toFixed(0)} ms CPU)` +
        (r.pageMessages !== undefined ? `, ${r.pageMessages} page messages` : ''),
    );
  }
  console.log(
    `${values.stack}, ${actors} actors, budget ${budget ?? '16 MiB'}${values.inspect ? ', inspector attached' : ''}, median of ${runs}: total ${median(results.map((r) => r.totalMs)).toFixed(0)} ms, ` +
      `S0→S1 p50 ${median(results.map((r) => r.p50))} ms, p99 ${median(results.map((r) => r.p99))} ms, ` +
      `CPU ${median(results.map((r) => r.cpuShare * r.totalMs)).toFixed(0)} ms, ` +
      `${(actors / (median(results.map((r) => r.totalMs)) / 1000)).toFixed(0)} actors/s`,
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
