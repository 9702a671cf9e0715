/**
 * Shared pieces of `npm run bench` (tools/bench/bench.ts): the Entry Actor of the workload, the IPC shapes between
 * the orchestrator and a bench host, the metrics reader and small statistics helpers.
 */
import { readFileSync } from 'node:fs';
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, MeterProvider, MetricReader, type DataPoint } from '@opentelemetry/sdk-metrics';
import { defineActor, preserveState } from '../../runtime';

/** Padding that makes the captured state of a fresh Entry Actor 1 KiB (JSON `{"pad":"…","seen":[]}`). */
export const PAD = 'x'.repeat(1024 - JSON.stringify({ pad: '', seen: [] }).length);

export interface EntryState {
  pad: string;
  /** Traffic sequence numbers in the order this Actor received them (one sender, so they should increase). */
  seen: number[];
}

/** A traffic message: `q` is the sender's sequence number. A request `{ op: 'report' }` returns `seen`. */
export type EntryMessage = { op: 't'; q: number } | { op: 'report' };

export const Entry = defineActor<EntryState>({
  type: 'BenchEntry',
  relocation: preserveState({
    capture: (s) => Buffer.from(JSON.stringify(s)),
    restore: (b) => JSON.parse(b.toString()) as EntryState,
  }),
  create: () => ({ pad: PAD, seen: [] }),
  receive: (state, m: EntryMessage) => {
    if (m.op === 't') state.seen.push(m.q);
    else if (m.op === 'report') return state.seen;
    return undefined;
  },
});

export const STATE_BYTES = Buffer.byteLength(JSON.stringify({ pad: PAD, seen: [] }));
export const actorId = (i: number): string => `e-${i}`;


class PullReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** Installs an OpenTelemetry SDK MeterProvider (in-memory pull reader) as this process's global provider. */
export function installMetrics(): { counter(name: string): Promise<number> } {
  const reader = new PullReader();
  const provider = new MeterProvider({ readers: [reader] });
  if (!metrics.setGlobalMeterProvider(provider)) throw new Error('bench: a global MeterProvider is already installed');
  return {
    async counter(name) {
      const { resourceMetrics } = await reader.collect();
      let total = 0;
      for (const scope of resourceMetrics.scopeMetrics)
        for (const metric of scope.metrics)
          if (metric.descriptor.name === name) for (const p of metric.dataPoints as DataPoint<number>[]) total += p.value;
      return total;
    },
  };
}

/** Nearest-rank percentile of an ascending array. */
export const pct = (sorted: readonly number[], p: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
export const sortNum = (xs: number[]): number[] => xs.sort((a, b) => a - b);
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** This process's CPU so far, user + system, in ms. */
export const cpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/**
 * The CPU this process's main thread has used so far, user + system in ms, from `/proc/self/task/<pid>/stat` (Linux;
 * NaN elsewhere). The rest of `cpuMs()` is the other threads': V8's GC and compiler workers and libuv's pool. In 10 ms
 * ticks (USER_HZ): coarse for one 100 ms sample, exact enough over a move.
 */
export const mainThreadCpuMs = (): number => {
  try {
    return statCpuMs(readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8'));
  } catch {
    return NaN;
  }
};

/** utime + stime of a `/proc/<pid>/task/<tid>/stat` line in ms (fields 14 and 15; the name in field 2 may hold spaces and parentheses). */
export function statCpuMs(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): utime is field 14, stime field 15.
  if (fields.length <= 12) return NaN;
  return (Number(fields[11]) + Number(fields[12])) * USER_HZ_MS;
}
/** /proc reports CPU in USER_HZ ticks, 100 a second on Linux. */
const USER_HZ_MS = 10;

/** The CPU a Redis server has used so far, user + system in ms, from `INFO cpu` (the whole server). */
export async function redisCpuMs(redis: { info(section: 'cpu'): Promise<string> }): Promise<number> {
  const info = await redis.info('cpu');
  const used = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1]);
  return (used('used_cpu_user') + used('used_cpu_sys')) * 1000;
}

/**
 * CPU ms of a process at wall-clock time `at`, read from its (time, CPU ms) pairs sampled every 100 ms
 * (`samples` flat and in time order): linear between the two samples around `at`, clamped to the first and last.
 */
export function cpuAt(samples: readonly number[], at: number): number {
  if (samples.length < 2) return NaN;
  if (at <= samples[0]!) return samples[1]!;
  for (let i = 2; i < samples.length; i += 2) {
    const t = samples[i]!;
    if (at > t) continue;
    const t0 = samples[i - 2]!;
    const c0 = samples[i - 1]!;
    return t === t0 ? samples[i + 1]! : c0 + ((samples[i + 1]! - c0) * (at - t0)) / (t - t0);
  }
  return samples[samples.length - 1]!;
}

/**
 * The largest value of a process's (time, value) pairs (flat, in time order) up to wall-clock time `end`, counting
 * the first sample at or after `end` too: the peak of the move is never under-reported by the 100 ms sampling, and a
 * source samples once more exactly at Relocated, before the bench's owner-record reads begin.
 */
export function peakUntil(samples: readonly number[], end: number): number {
  let peak = Number.NaN;
  for (let i = 0; i < samples.length; i += 2) {
    peak = Number.isNaN(peak) ? samples[i + 1]! : Math.max(peak, samples[i + 1]!);
    if (samples[i]! >= end) break;
  }
  return peak;
}

/**
 * ZLINK_BENCH_S0S1_DECILES=1: S0→S1 by decile of the move (units in seal order), split at the target's relay-ready
 * (S0 → relay-ready: payload out and restored; relay-ready → S1: the reply back and the cutover submit), and the
 * target's owner CAS (S2) − S1 of the same units, to see where and in which part of the move a tail comes from.
 * Stamps of two processes on one machine's wall clock.
 */
export function s0s1Deciles(s0: [string, number][], ready: Map<string, number>, s1: Map<string, number>, s2: Map<string, number>): string {
  const bySeal = s0.filter(([u]) => s1.has(u)).sort((a, b) => a[1] - b[1]);
  if (bySeal.length === 0) return 'deciles: no unit reached S1';
  const start = bySeal[0]![1];
  const rows: string[] = [];
  for (let d = 0; d < 10; d++) {
    const from = Math.floor((d * bySeal.length) / 10);
    const part = bySeal.slice(from, Math.floor(((d + 1) * bySeal.length) / 10));
    const total = sortNum(part.map(([u, at]) => s1.get(u)! - at));
    const split = part.filter(([u]) => ready.has(u));
    const out = sortNum(split.map(([u, at]) => ready.get(u)! - at));
    const back = sortNum(split.map(([u]) => s1.get(u)! - ready.get(u)!));
    const cas = sortNum(part.filter(([u]) => s2.has(u)).map(([u]) => s2.get(u)! - s1.get(u)!));
    rows.push(
      `decile ${d}: sealed from +${bySeal[from]![1] - start} ms, S0→S1 p50 ${pct(total, 50)} p99 ${pct(total, 99)} max ${total[total.length - 1]}` +
        ` | S0→ready p50 ${pct(out, 50)} p99 ${pct(out, 99)} | ready→S1 p50 ${pct(back, 50)} p99 ${pct(back, 99)}` +
        ` | CAS−S1 p50 ${pct(cas, 50)} p99 ${pct(cas, 99)}`,
    );
  }
  return rows.join('\n');
}

/**
 * How long each tenth of the units took to reach S1 (in S1 order), from `startedAt` (Relocate) to the first tenth's
 * last S1, then from each tenth's last S1 to the next one's: where in the move the time went. A slower first tenth
 * is the hosts' cold start (V8 compiles the relocation path while it runs): in twelve 100k moves on a 2-core machine
 * the first tenth took 1.41–2.36 s and every later one 0.48–1.23 s.
 */
export function tenths(startedAt: number, s1: Iterable<number>): number[] {
  const at = sortNum([...s1]);
  if (at.length === 0) return [];
  const out: number[] = [];
  let from = startedAt;
  for (let t = 1; t <= 10; t++) {
    const last = at[Math.max(0, Math.ceil((t * at.length) / 10) - 1)]!;
    out.push(last - from);
    from = last;
  }
  return out;
}

/**
 * How many units were sealed at once (between their S0 and S1, the seal window's use): the mean over the time from
 * the first S0 to the last S1, and the most at one time. A stop at the same stamp as a seal counts first.
 */
export function sealedAtOnce(s0: Map<string, number>, s1: Map<string, number>): { mean: number; max: number } {
  const edges: [number, number][] = [];
  for (const [u, at] of s1) {
    const sealed = s0.get(u);
    if (sealed === undefined) continue;
    edges.push([sealed, 1], [at, -1]);
  }
  if (edges.length === 0) return { mean: NaN, max: NaN };
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let max = 0;
  let area = 0;
  for (let i = 0; i < edges.length; i++) {
    if (i > 0) area += open * (edges[i]![0] - edges[i - 1]![0]);
    open += edges[i]![1];
    max = Math.max(max, open);
  }
  const span = edges[edges.length - 1]![0] - edges[0]![0];
  return { mean: span > 0 ? area / span : max, max };
}

/**
 * ZLINK_BENCH_S0S1_DECILES=1, with the deciles: the start of the move, where the first tenth's extra time goes — when
 * the first unit sealed after Relocate (inventory, target, Relocating descriptor, the first prepares), then per
 * `stepMs` from Relocate the units that reached S1 in that step and the mean number sealed at once (S0 to S1) over it,
 * which is the seal window in use while units wait for permits. Source stamps only (one clock).
 */
export function startRamp(startedAt: number, s0: Map<string, number>, s1: Map<string, number>, stepMs = 100, untilMs = 2000): string {
  let first = Number.POSITIVE_INFINITY;
  for (const at of s0.values()) first = Math.min(first, at);
  if (!Number.isFinite(first)) return 'ramp: no unit sealed';
  const steps = Math.ceil(untilMs / stepMs);
  const done = new Array<number>(steps).fill(0);
  const sealedMs = new Array<number>(steps).fill(0);
  for (const [u, stop] of s1) {
    const seal = s0.get(u);
    if (seal === undefined) continue;
    const k = Math.floor((stop - startedAt) / stepMs);
    if (k >= 0 && k < steps) done[k]!++;
    // This unit's time between S0 and S1, spread over the steps it overlaps.
    for (let j = Math.max(0, Math.floor((seal - startedAt) / stepMs)); j < steps && startedAt + j * stepMs < stop; j++) {
      const from = Math.max(seal, startedAt + j * stepMs);
      const to = Math.min(stop, startedAt + (j + 1) * stepMs);
      if (to > from) sealedMs[j]! += to - from;
    }
  }
  const cells = done.map((n, j) => `${(j + 1) * stepMs}: ${n} / ${Math.round((10 * sealedMs[j]!) / stepMs) / 10}`);
  return `ramp: first S0 +${Math.round(first - startedAt)} ms; per ${stepMs} ms from Relocate, units reaching S1 / sealed at once (mean): ${cells.join(', ')}`;
}

/** Runs `count` tasks with at most `limit` in flight. */
export async function pool(count: number, limit: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, count) }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

/** What a sender expected per receiver vs what the receiver saw, one sender, sequence numbers increasing. */
export function compareSeen(
  expected: Map<number, number[]>,
  seen: Map<number, readonly number[]>,
): { lost: number; duplicated: number; reordered: number; samples: { actor: number; sent: number[]; seen: number[] }[] } {
  let lost = 0;
  let duplicated = 0;
  let reordered = 0;
  const samples: { actor: number; sent: number[]; seen: number[] }[] = [];
  for (const [a, sent] of expected) {
    const got = seen.get(a) ?? [];
    const counts = new Map<number, number>();
    for (const q of got) counts.set(q, (counts.get(q) ?? 0) + 1);
    for (const q of sent) if (!counts.has(q)) lost++;
    for (const c of counts.values()) if (c > 1) duplicated += c - 1;
    const before = lost + duplicated + reordered;
    for (let k = 1; k < got.length; k++) if (got[k]! < got[k - 1]!) reordered++;
    if (lost + duplicated + reordered > before && samples.length < 5) samples.push({ actor: a, sent: sent.slice(0, 20), seen: got.slice(0, 20) });
  }
  for (const [a, got] of seen) if (!expected.has(a) && got.length > 0) duplicated += got.length; // never sent there
  return { lost, duplicated, reordered, samples };
}
