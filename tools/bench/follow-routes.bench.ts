/**
 * The source's Message Follow routes alone (`node dist/tools/bench/follow-routes.bench.js --n 100000`): a real Router
 * (runtime/router.ts) taking each moved object's follow route at S1 (`setFollow`) and ending it at S4
 * (`removeFollow`, which leaves the bounce hint), with `--window` objects between the two as in a move (S1 to S4 is
 * the Message Follow duration), on a simulated clock. Reports the process CPU per object, median of `--runs`: the
 * router's own cost per moved object, which a 100k move pays on tens of thousands of live entries.
 */
import { parseArgs } from 'node:util';
import type { NodeRef } from '../../stores/types';
import { SimulatedClock } from '../../runtime/clock';
import { silentLog } from '../../runtime/logger';
import { Router, type RouterDeps } from '../../runtime/router';
import type { ObjectServer } from '../../runtime/objects';
import type { Transport } from '../../transport/types';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '100000' },
    window: { type: 'string', default: '20000' },
    runs: { type: 'string', default: '7' },
  },
  strict: true,
});
const n = Number(values.n);
const window = Number(values.window);
const runs = Number(values.runs);
for (const [flag, value, least] of [['n', n, 1], ['window', window, 0], ['runs', runs, 1]] as const)
  if (!Number.isInteger(value) || value < least) throw new TypeError(`follow-routes: --${flag} must be a whole number >= ${least}; got '${values[flag]}'`);
const TARGET: NodeRef = { nodeId: 'bench-target', lifecycleGeneration: 1 };
/** Objects reaching S1 per simulated millisecond (~13k units/s, a 100k move on the bench's 2-core machine). */
const PER_MS = 13;

function once(): number {
  const clock = new SimulatedClock();
  const transport = { send: () => true } as unknown as Transport;
  const deps: RouterDeps = {
    self: { nodeId: 'bench-source', lifecycleGeneration: 1 },
    clock,
    location: { get: async () => undefined } as unknown as RouterDeps['location'],
    objects: { get: () => undefined, deliver: () => undefined } as unknown as ObjectServer,
    transport: () => transport,
    instanceTypeFor: () => undefined,
    canPlaceInstances: () => false,
    placementNode: () => undefined,
    inboundRefusal: () => undefined,
    staging: () => undefined,
    connectWaitMs: 500,
    restoreValidityMs: 30_000,
    requestDiscovery: () => undefined,
    recordMovedTerminal: () => undefined,
    isKnownPeer: () => true,
    onControl: () => undefined,
    beforeFollow: () => undefined,
    logger: silentLog,
  };
  const router = new Router(deps);
  const cpu = process.cpuUsage();
  // Keys made as the source meets them (fresh strings, as a decoded reply's are), not interned up front.
  for (let i = 0; i < n + window; i++) {
    if (i < n) router.setFollow(`a:e-${i}`, TARGET);
    if (i >= window) router.removeFollow(`a:e-${i - window}`);
    if (i % PER_MS === 0) clock.increment(1);
  }
  const used = process.cpuUsage(cpu);
  if (router.followCount !== 0) throw new Error(`${router.followCount} follow routes left open`);
  return (used.user + used.system) / n;
}

const results: number[] = [];
for (let run = 0; run < runs; run++) results.push(once());
const sorted = [...results].sort((a, b) => a - b);
console.log(
  `follow routes (S1 → S4), N = ${n}, ${window} open at once: median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)} µs CPU per object (${runs} runs: ${results.map((r) => r.toFixed(2)).join(' ')})`,
);
