/**
 * Reads a V8 CPU profile written by `ZLINK_BENCH_CPU_PROF=<dir> npm run bench` and prints where the time went, the
 * way the [6/10] notes quote it (issue [6/10]: "if a goal is not met: the profile, top functions and the share per
 * component").
 *
 *   node dist/tools/bench/profile-summary.js <file.cpuprofile> --timeline            busy % per 250 ms: find the move
 *   node dist/tools/bench/profile-summary.js <file.cpuprofile> --from 4250 --to 7000 shares in that window (ms)
 *   … --long 100                                                                     tasks longer than 100 ms
 *   node dist/tools/bench/profile-summary.js <file.heapprofile>                      bytes allocated in the move
 *
 * A `.heapprofile` (`ZLINK_BENCH_HEAP_PROF=<dir> npm run bench`) is summarized the same way with bytes for samples:
 * what the move allocated, by component, by allocating function and by the nearest frame of ours.
 *
 * Caveats measured here: a deoptimization adds samples without hits, so a function that deopts on every call looks
 * expensive (ControlBatcher `split` once did); on a loaded machine a descheduled thread's wait is counted as busy;
 * and `(garbage collector)` is the main thread's share only — `npm run bench` prints whole-process CPU beside it.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}
/** V8's sampling heap profile: a call tree whose nodes carry the bytes allocated there. */
interface HeapProfileNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapProfileNode[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    from: { type: 'string', default: '0' },
    to: { type: 'string', default: String(Number.MAX_SAFE_INTEGER) },
    top: { type: 'string', default: '30' },
    timeline: { type: 'boolean', default: false },
    long: { type: 'string' },
  },
});
const file = positionals[0];
if (!file) throw new Error('usage: profile-summary <file.cpuprofile | file.heapprofile> [--timeline | --from ms --to ms | --long ms] [--top n]');
const raw = JSON.parse(readFileSync(file, 'utf8')) as Profile | { head: HeapProfileNode };
const allocations = 'head' in raw;
if (allocations && (values.timeline || values.long !== undefined)) throw new Error('profile-summary: a heap profile has no timeline; --timeline and --long need a .cpuprofile');
/** An allocation profile as a CPU profile whose samples weigh their bytes: one sample per node that allocated. */
function fromHeapProfile(head: HeapProfileNode): { profile: Profile; weights: number[] } {
  const nodes: ProfileNode[] = [];
  const samples: number[] = [];
  const weights: number[] = [];
  const visit = (n: HeapProfileNode): number => {
    const node: ProfileNode = { id: nodes.length + 1, callFrame: n.callFrame, children: [] };
    nodes.push(node);
    if (n.selfSize > 0) {
      samples.push(node.id);
      weights.push(n.selfSize);
    }
    for (const c of n.children) node.children!.push(visit(c));
    return node.id;
  };
  visit(head);
  return { profile: { nodes, samples, timeDeltas: samples.map(() => 0) }, weights };
}
const { profile, weights } = allocations ? fromHeapProfile(raw.head) : { profile: raw, weights: undefined };
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const times: number[] = [];
let elapsed = 0;
for (const d of profile.timeDeltas) times.push((elapsed += d) / 1000);
const intervalMs = (times[times.length - 1]! - times[0]!) / times.length;

const frameOf = (id: number) => byId.get(id)!.callFrame;
const isIdle = (id: number) => frameOf(id).functionName === '(idle)';
const label = (id: number) => {
  const f = frameOf(id);
  return `${f.functionName || '(anonymous)'} ${f.url.replace(/.*\/dist\//, '').replace(/.*node_modules\//, '')}:${f.lineNumber}`;
};
/** zlink's compiled code: a folder under dist/ (a dependency's url has node_modules/ first, matched before this). */
const OURS = /\/dist\/(.+)\/[^/]+$/;
const isOurs = (url: string) => !url.includes('node_modules/') && OURS.test(url);
/** The component a frame belongs to: a dependency by package, our code by folder, V8 and node by kind. */
function component(id: number): string {
  const { functionName, url } = frameOf(id);
  if (functionName.startsWith('(')) return functionName === '(garbage collector)' ? 'GC' : functionName;
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dep) return dep[1]!;
  const ours = OURS.exec(url);
  if (ours) return ours[1]!.split('/').slice(0, 3).join('/');
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  return url ? 'other' : '(native)';
}
const stack = (id: number | undefined): number[] => {
  const out: number[] = [];
  for (; id !== undefined; id = parent.get(id)) out.push(id);
  return out.reverse(); // root first
};
const print = (title: string, counts: Map<string, number>, total: number, top: number) => {
  console.log(`--- ${title}`);
  for (const [k, v] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
};
const bump = (m: Map<string, number>, k: string, by = 1) => m.set(k, (m.get(k) ?? 0) + by);
/** The frame of ours (a component() by folder, not a dependency) nearest to a sample's leaf: who asked for the work. */
const nearestOurs = (id: number): string => {
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) if (isOurs(frameOf(at).url)) return label(at);
  return '(none of ours)';
};

if (values.timeline) {
  const bins = new Map<number, [number, number]>();
  profile.samples.forEach((s, i) => {
    const bin = Math.floor(times[i]! / 250) * 250;
    const e = bins.get(bin) ?? [0, 0];
    e[isIdle(s) ? 1 : 0]++;
    bins.set(bin, e);
  });
  for (const [bin, [busy, idle]] of bins) console.log(`${String(bin).padStart(7)} ms  ${((busy / (busy + idle)) * 100).toFixed(0).padStart(3)}% busy`);
} else if (values.long !== undefined) {
  // A task: consecutive samples under the same two frames below the root (e.g. processImmediate > a callback).
  const minMs = Number(values.long);
  let start = 0;
  let key: string | undefined;
  const end = (i: number) => {
    if (key === undefined || /^\((idle|garbage|program)/.test(key)) return;
    const ms = times[i - 1]! - times[start]!;
    if (ms < minMs) return;
    const self = new Map<string, number>();
    for (let j = start; j < i; j++) bump(self, label(profile.samples[j]!));
    const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([k, v]) => `${k} ×${v}`);
    console.log(`@${times[start]!.toFixed(0)} ms  ${ms.toFixed(0)} ms  ${key}\n    ${top.join('\n    ')}`);
  };
  profile.samples.forEach((s, i) => {
    const k = stack(s).slice(1, 3).map(label).join(' > ');
    if (k === key) return;
    end(i);
    start = i;
    key = k;
  });
  end(profile.samples.length);
} else {
  const from = Number(values.from);
  const to = Number(values.to);
  const top = Number(values.top);
  const components = new Map<string, number>();
  const self = new Map<string, number>();
  const ours = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((s, i) => {
    if (times[i]! < from || times[i]! > to || isIdle(s)) return;
    const weight = weights?.[i] ?? 1;
    total += weight;
    bump(components, component(s), weight);
    bump(self, label(s), weight);
    bump(ours, nearestOurs(s), weight);
  });
  if (allocations) console.log(`allocated: ${(total / 2 ** 20).toFixed(1)} MiB (sampled; includes what died young if the profile was taken with it, as the bench takes it unless ZLINK_BENCH_HEAP_LIVE is set)`);
  else console.log(`busy: ${total} samples ≈ ${(total * intervalMs).toFixed(0)} ms of the main thread (sample interval ${intervalMs.toFixed(2)} ms)`);
  const unit = allocations ? 'bytes allocated' : 'self time';
  print(`share per component (${unit})`, components, total, top);
  print(`top functions (${unit})`, self, total, top);
  print(`by the nearest frame of ours (${unit})`, ours, total, top);
}
