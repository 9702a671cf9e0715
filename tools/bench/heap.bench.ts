/**
 * Where relocation memory lives (issue [6/10] RSS goal): heap in use (after a forced GC) at each stage of one Relocate
 * of N Entry Actors (~1 KiB state) between two hosts in one process on the memory stack.
 *   npm run build && node --expose-gc dist/tools/bench/heap.bench.js 20000
 * Stages: empty hosts, after creating N Actors on the source, right after Relocated (units in `following`, Message
 * Follow routes and retransmission copies live), after S4 (follow window 3 s), after each host's Shutdown (what is
 * left is the memory stores: records and their op log).
 */
import { writeHeapSnapshot } from 'node:v8';
import { createRuntime, defineActor, memoryStores, preserveState, RelocationMode, UNIT_CHANGED } from '../../runtime';
const A = defineActor<{ n: number; pad: string }>({
  type: 'A',
  relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) }),
  create: () => ({ n: 0, pad: 'x'.repeat(1000) }),
  receive: (s) => s.n,
});
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const mb = (): number => {
  gc();
  return Math.round(process.memoryUsage().heapUsed / 1e6);
};
(async () => {
  const N = Number(process.argv[2] ?? 20000);
  const stores = memoryStores();
  const timing = { discoveryIntervalMs: 50, messageFollowDurationMs: 3000 };
  const a = await createRuntime({ nodeId: 'a', applicationVersion: 1, stores, types: [A], timing });
  const b = await createRuntime({ nodeId: 'b', applicationVersion: 1, stores, types: [A], timing });
  console.log('heap MB: empty hosts', mb());
  for (let i = 0; i < N; i++) await a.createActor('A', `x${i}`);
  console.log('after create on a', mb());
  // ZLINK_HEAP_SNAPSHOT_MID=<file>: what is live once a tenth of the units cut over (most still wait in batch 2).
  let cut = 0;
  a.on(UNIT_CHANGED, (e) => {
    if (e.side !== 'source' || e.state !== 'cutOver' || ++cut !== Math.ceil(N / 10)) return;
    console.log('a tenth cut over', mb());
    if (process.env.ZLINK_HEAP_SNAPSHOT_MID) console.log('mid heap snapshot', writeHeapSnapshot(process.env.ZLINK_HEAP_SNAPSHOT_MID));
  });
  const r = await a.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 120000 });
  console.log('relocated', r.outcome, mb());
  // ZLINK_HEAP_SNAPSHOT=<file>: what is live right after Relocated (open it in Chrome DevTools → Memory).
  if (process.env.ZLINK_HEAP_SNAPSHOT) console.log('heap snapshot', writeHeapSnapshot(process.env.ZLINK_HEAP_SNAPSHOT));
  await new Promise((res) => setTimeout(res, 3500));
  console.log('after S4', mb(), 'safe', a.status.safeToShutdown);
  await a.shutdown();
  console.log('after a shutdown', mb());
  await b.shutdown();
  console.log('after b shutdown', mb());
})();
