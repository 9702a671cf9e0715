/**
 * The whole machine during a move, from Linux `perf` (issue [6/10]: "the profile, top functions and the share per
 * component" — of the machine, not one main thread). V8's own profiles (`ZLINK_BENCH_CPU_PROF`, profile-summary.ts)
 * see one main thread each; this sees every thread of every process on both cores: the hosts' main threads, V8's
 * compiler and GC threads, Redis, the traffic host and what else runs, and idle.
 *
 *   ZLINK_BENCH_NODE_ARGS=--perf-basic-prof node --perf-basic-prof dist/tools/bench/bench.js --n 100000 > bench.log 2>&1 &
 *   # when bench.log says "relocating":   perf record -F 499 -a -g -o move.perf &
 *   # when it says "Relocate:":            kill -INT <that perf>
 *   perf script -i move.perf -F comm,pid,tid,time,ip,sym > move.txt
 *   node dist/tools/bench/perf-summary.js move.txt [--top 20] [--timeline]
 *
 * (`--perf-basic-prof` names JIT-compiled JavaScript in the samples; without it a host's main thread is still found,
 * but its JavaScript frames are bare addresses. V8 reuses the addresses of code it dropped and the map keeps every
 * name an address had, so a small entry that makes no sense where it appears — a store call the move never makes — is
 * such a reuse; trust the large ones. Poll the log sparingly: a loop of `grep` and `sleep 0.05` took ~9% of a 2-core
 * machine in one run.) Linux `perf` is not a dependency: install it from the distribution (Debian: linux-perf).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

/** One sample: the thread and its call chain, leaf first. */
export interface PerfSample {
  readonly comm: string;
  readonly pid: number;
  readonly tid: number;
  /** Seconds (perf's clock). */
  readonly time: number;
  readonly frames: readonly string[];
}

/** `perf script -F comm,pid,tid,time,ip,sym` output: a header line per sample, then one `<ip> <symbol>` line per frame. */
export function parsePerfScript(text: string): PerfSample[] {
  const samples: PerfSample[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; ) {
    const header = /^\s*(.+?)\s+(\d+)\/(\d+)\s+([\d.]+):/.exec(lines[i]!);
    i++;
    if (!header) continue;
    const frames: string[] = [];
    for (; i < lines.length && lines[i]!.trim() !== ''; i++) frames.push(lines[i]!.trim().replace(/^[0-9a-f]+\s+/, ''));
    samples.push({ comm: header[1]!, pid: Number(header[2]), tid: Number(header[3]), time: Number(header[4]), frames });
  }
  return samples;
}

const COMPILE = /compiler::|OptimizingCompile|Compiler::|Maglev/;
const GC = /Scaveng|MarkCompact|ConcurrentMarking|IncrementalMarking|Sweeper|Heap::|Evacuat|MinorMC/;

/**
 * The role of each node main thread (tid = pid): the relocation source or target by the frames it ran, the traffic host
 * by the bench's own traffic sender (this process runs it), else `node <pid>`.
 */
export function mainThreadRoles(samples: readonly PerfSample[]): Map<number, string> {
  const seen = new Map<number, { source: number; target: number; traffic: number }>();
  for (const s of samples) {
    if (s.comm !== 'node' || s.tid !== s.pid) continue;
    const c = seen.get(s.pid) ?? { source: 0, target: 0, traffic: 0 };
    if (s.frames.some((f) => f.includes('relocation/source/'))) c.source++;
    if (s.frames.some((f) => f.includes('relocation/target/'))) c.target++;
    if (s.frames.some((f) => f.includes('tools/bench/bench.js'))) c.traffic++;
    seen.set(s.pid, c);
  }
  const roles = new Map<number, string>();
  for (const [pid, c] of seen) {
    const best = Math.max(c.source, c.target, c.traffic);
    roles.set(pid, best === 0 ? `node ${pid}` : best === c.source ? 'source' : best === c.target ? 'target' : 'traffic host');
  }
  return roles;
}

/** Where a sample's CPU went: a host's main thread by role, V8's helper threads by kind, Redis, idle, or another process. */
export function roleOf(s: PerfSample, mainRoles: ReadonlyMap<number, string>): string {
  if (s.comm === 'swapper') return 'idle';
  if (s.comm.startsWith('redis-server')) return 'Redis';
  const main = mainRoles.get(s.pid);
  if (main === undefined) return `other: ${s.comm}`;
  if (s.tid === s.pid) return main;
  // A node process's other threads: V8's compiler and GC helpers, libuv's pool.
  if (s.frames.some((f) => COMPILE.test(f))) return 'V8 compiler threads';
  if (s.frames.some((f) => GC.test(f))) return 'V8 GC threads';
  return 'other V8 threads';
}

/** A frame as printed: zlink's build and node_modules prefixes dropped. */
const short = (frame: string) => frame.replace(/\S*\/(?:dist|\.variants\/[^/]+)\//g, '').replace(/\S*\/node_modules\//g, '');
/** zlink's compiled code (a JIT frame whose file is under a build folder, not a dependency). */
const isOurs = (frame: string) => frame.startsWith('JS:') && /\/(?:dist|\.variants\/[^/]+)\//.test(frame) && !frame.includes('node_modules/');

export interface PerfSummary {
  readonly samples: number;
  /** [role, samples], most first. */
  readonly byRole: [string, number][];
  /** Per main-thread role: [leaf frame, samples] (self time), most first. */
  readonly self: Map<string, [string, number][]>;
  /** Per main-thread role: [nearest frame of zlink's code, samples], most first. */
  readonly ours: Map<string, [string, number][]>;
}

export function summarize(samples: readonly PerfSample[], top = 20): PerfSummary {
  const mainRoles = mainThreadRoles(samples);
  const mains = new Set(mainRoles.values());
  const byRole = new Map<string, number>();
  const self = new Map<string, Map<string, number>>();
  const ours = new Map<string, Map<string, number>>();
  const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const s of samples) {
    const role = roleOf(s, mainRoles);
    bump(byRole, role);
    if (!mains.has(role)) continue;
    bump(self.get(role) ?? self.set(role, new Map()).get(role)!, short(s.frames[0] ?? '?'));
    const nearest = s.frames.find(isOurs);
    bump(ours.get(role) ?? ours.set(role, new Map()).get(role)!, nearest ? short(nearest) : '(none of ours)');
  }
  const sorted = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n);
  const perRole = (m: Map<string, Map<string, number>>) => new Map([...m].map(([role, counts]) => [role, sorted(counts, top)]));
  return { samples: samples.length, byRole: sorted(byRole, Infinity), self: perRole(self), ours: perRole(ours) };
}

/** Per `binMs` from the first sample: the share of the machine's samples in V8's compiler threads, its GC threads, and idle. */
export function timeline(samples: readonly PerfSample[], binMs = 500): { atMs: number; compile: number; gc: number; idle: number }[] {
  if (samples.length === 0) return [];
  const mainRoles = mainThreadRoles(samples);
  // A loop, not Math.min(...): a long profile has more samples than a call takes arguments.
  let t0 = Infinity;
  for (const s of samples) t0 = Math.min(t0, s.time);
  const bins = new Map<number, { all: number; compile: number; gc: number; idle: number }>();
  for (const s of samples) {
    const at = Math.floor(((s.time - t0) * 1000) / binMs) * binMs;
    const bin = bins.get(at) ?? bins.set(at, { all: 0, compile: 0, gc: 0, idle: 0 }).get(at)!;
    bin.all++;
    const role = roleOf(s, mainRoles);
    if (role === 'V8 compiler threads') bin.compile++;
    else if (role === 'V8 GC threads') bin.gc++;
    else if (role === 'idle') bin.idle++;
  }
  return [...bins]
    .sort((a, b) => a[0] - b[0])
    .map(([atMs, b]) => ({ atMs, compile: b.compile / b.all, gc: b.gc / b.all, idle: b.idle / b.all }));
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '20' }, timeline: { type: 'boolean', default: false } },
  });
  const file = positionals[0];
  if (!file) throw new Error('usage: perf-summary <perf script output> [--top n] [--timeline]');
  const samples = parsePerfScript(readFileSync(file, 'utf8'));
  const pct = (n: number, of: number) => `${((100 * n) / of).toFixed(1).padStart(5)}%`;
  if (values.timeline) {
    for (const r of timeline(samples)) console.log(`${String(r.atMs).padStart(6)} ms  compile ${pct(r.compile, 1)}  gc ${pct(r.gc, 1)}  idle ${pct(r.idle, 1)}`);
    return;
  }
  const top = Number(values.top);
  if (!Number.isInteger(top) || top < 1) throw new Error(`perf-summary: --top must be a whole number >= 1; got '${values.top}'`);
  const s = summarize(samples, top);
  console.log(`${s.samples} samples (both cores, every process)\n--- share of the machine by thread`);
  // Anything under 0.5% of the machine (system daemons, shells) is one line.
  const small = s.byRole.filter(([, n]) => n * 200 < s.samples);
  for (const [role, n] of s.byRole) if (n * 200 >= s.samples) console.log(`${pct(n, s.samples)}  ${role}`);
  if (small.length > 0) console.log(`${pct(small.reduce((sum, [, n]) => sum + n, 0), s.samples)}  ${small.length} more, each under 0.5%`);
  for (const [role, rows] of s.self) {
    const all = s.byRole.find(([r]) => r === role)![1];
    console.log(`--- ${role}: self time (share of this thread)`);
    for (const [frame, n] of rows) console.log(`${pct(n, all)}  ${frame}`);
    console.log(`--- ${role}: by the nearest frame of zlink's code (share of this thread)`);
    for (const [frame, n] of s.ours.get(role)!) console.log(`${pct(n, all)}  ${frame}`);
  }
}

if (require.main === module) main();
