/**
 * Unit machine cost (`npm run build && node dist/tools/bench/unit-machines.bench.js --units 20000 --runs 5`):
 * µs per unit of the machines alone (no I/O, no-op actions), driven the way the runtime drives them — every unit
 * at one step gets its event in the same tick, then the next step (DESIGN.md "Relocation at scale").
 *
 * - source: unit-source machine per unit, created as a child of a pool actor (`{ parent, id }`), hot path to S4.
 * - target per unit / per parcel of P: one unit-target machine (relayReady → CUTOVER → committing → COMMITTED → open)
 *   per unit, or per P units (for P = 32 also on `flatMachineLogic`, as the runtime runs it) that reach their steps
 *   together with the per-unit milestones a loop over a plain array in the driver (what target/parcel.ts does); the
 *   cutover wait is one shared expiry queue (§13).
 *
 * Measured on the 2-core box (20k units, median of 5, other work running): source 30–39 µs/unit to S4 (the
 * previous 5-transition machine, root actors: ~40 µs/unit to S1 only); target per unit 45–72 µs/unit, of which
 * ~12 µs are its two `after` timers; target per parcel 3 µs/unit (64) and 1 µs/unit (256).
 * After the `after` timers moved to the coordinator's shared expiry queues and the hot path lost its `assign`
 * (same box, 20k units, median of 5): target per unit 47–50 → 30 µs/unit; relocation.bench --actors 10000
 * --stack memory median total 2040–2167 → 1527–1659 ms (S0→S1 p50 unchanged, 24–30 ms).
 *
 * Issue [6/10], the source units' actors moved to `flatMachineLogic` (same declaration, same Actor, transitions by table
 * lookup; same box, 20k units, median of 5, quiet): source 40.1 µs/unit with xstate's interpreter, 11.2 with the
 * table; in `npm run bench -- --n 100000` the source's CPU went from ~142–167 to ~100–116 µs/unit.
 * Issue [6/10], after the target moved to one machine per inbound parcel (same box, 20k units, median of 5, quiet):
 * source 52 µs/unit to S4; target per unit 51 µs/unit; per parcel of 64 1.9 µs/unit; per parcel of 256 0.6 µs/unit.
 * Parcels of at most 32 units (2026-12-04, another 2-core machine, 20k units, median of 5): per parcel of 32 1.8 µs/unit
 * (~58 µs per parcel machine: ~0.2 s of the target's CPU in a 100k move), of 64 1.0, of 256 0.2; source 13.9 µs/unit.
 * The parcel machine on `flatMachineLogic` (2026-12-05, a third 2-core machine, 20k units, median of 5): per parcel of
 * 32 1.5 µs/unit with xstate's interpreter, 0.5 with the table (the runtime's); source 30.5 / 9.8. In `npm run bench
 * -- --n 100000` the target's CPU fell by more than that (~4.5 µs/unit, five alternated pairs): the machines alone are
 * ~1 of it; the rest is not split here (the interpreter's code no longer compiled, item 4 of that sitting's note).
 * The source units in a FlatActor instead of xstate's `Actor` (2026-12-05, a fourth 2-core machine, 20k units, median
 * of 5): source to S4 11.5 µs/unit in xstate's `Actor`, 1.5 in a FlatActor (36.2 with xstate's interpreter).
 * FlatActor no longer writes the system's session registry (2026-12-05, a fifth 2-core machine, 100k units, median of 5,
 * two alternations): source to S4 in a FlatActor 2.6 and 3.5 µs/unit before, 2.2 and 2.2 after.
 */
import { parseArgs } from 'node:util';
import { createActor, fromCallback, type AnyActorLogic, type AnyActorRef } from 'xstate';
import { unitSourceMachine, type UnitSourceEvent, type UnitSourceOutput } from '../../machines/unit-source.machine';
import { flatMachineLogic } from '../../runtime/flat-machine';
import { FlatActor } from '../../runtime/flat-actor';
import { unitTargetMachine, type UnitTargetEvent, type UnitTargetOutput } from '../../machines/unit-target.machine';
import { systemClock } from '../../runtime/clock';
import { ExpiryQueue } from '../../runtime/expiry-queue';

const { values } = parseArgs({ options: { units: { type: 'string', default: '20000' }, runs: { type: 'string', default: '5' } } });
const N = Number(values.units);
const runs = Number(values.runs);
const tick = () => new Promise<void>((r) => setImmediate(r));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const source = unitSourceMachine.provide({ actions: { prepare: () => {}, sealAndTransfer: () => {}, relayAndCutover: () => {}, restoreSource: () => {}, abandon: () => {} } });
const target = unitTargetMachine.provide({ actions: { commitOwner: () => {}, openDispatch: () => {}, discard: () => {} } });

/** The runtime's way (runtime/flat-machine.ts): the same declaration and Actor, the transitions by table lookup. */
const sourceFlat = flatMachineLogic<UnitSourceEvent, UnitSourceOutput>(source);
const targetFlat = flatMachineLogic<UnitTargetEvent, UnitTargetOutput>(target);

/** How a source unit's actor is made: xstate's `Actor`, or FlatActor (runtime/flat-actor.ts, the runtime's). */
type MakeUnit = (pool: AnyActorRef, id: string) => Pick<AnyActorRef, 'send'>;
const xstateUnit = (logic: AnyActorLogic): MakeUnit => (pool, id) => createActor(logic, { parent: pool, id }).start();
const flatUnit =
  (inspected: boolean): MakeUnit =>
  (pool, id) =>
    new FlatActor(sourceFlat, { parent: pool, id, inspected }).start();

async function sourcePerUnit(make: MakeUnit): Promise<number> {
  const pool = createActor(fromCallback(() => () => undefined)).start() as AnyActorRef;
  const t0 = performance.now();
  const actors = [];
  for (let i = 0; i < N; i++) actors.push(make(pool, `u${i}`));
  await tick();
  for (const a of actors) a.send({ type: 'SAFE_POINT' });
  await tick();
  for (const a of actors) a.send({ type: 'RELAY_READY' });
  await tick();
  for (const a of actors) a.send({ type: 'FOLLOW_EXPIRED' });
  const us = ((performance.now() - t0) * 1000) / N;
  pool.stop();
  return us;
}

/** Target with one machine per unit (`size` 1) or per parcel of `size` units; the cutover wait is a shared queue. */
async function targetPerParcel(size: number, logic: AnyActorLogic = target): Promise<number> {
  type TargetActor = ReturnType<typeof createActor<typeof targetFlat>>;
  const cutoverWait = new ExpiryQueue(systemClock, 1000, (a: TargetActor) => {
    if (a.getSnapshot().status === 'active') a.send({ type: 'CUTOVER_WAIT_ENDED' });
  });
  const t0 = performance.now();
  const parcels: { actor: TargetActor; units: { id: string; at: number }[] }[] = [];
  for (let p = 0; p < N / size; p++) {
    const units = [];
    for (let i = 0; i < size; i++) units.push({ id: `u${p * size + i}`, at: 0 });
    const actor = createActor(logic, { id: `p${p}` }).start() as TargetActor;
    cutoverWait.push(actor);
    parcels.push({ actor, units });
  }
  await tick();
  for (const type of ['CUTOVER', 'COMMITTED'] as const) {
    for (const parcel of parcels) {
      for (const u of parcel.units) u.at++; // the per-unit milestone, kept by the driver
      parcel.actor.send({ type });
    }
    await tick();
  }
  for (const p of parcels) if (p.actor.getSnapshot().status !== 'done') throw new Error('parcel did not open');
  cutoverWait.clear(); // every parcel is done: the events are no-ops; only the shared timer is disarmed
  return ((performance.now() - t0) * 1000) / N;
}
async function main(): Promise<void> {
  const cases: [string, () => Promise<number>][] = [
    ['source, machine per unit (child of pool), to S4, xstate interpreter', () => sourcePerUnit(xstateUnit(source))],
    ['source, machine per unit (child of pool), to S4, flatMachineLogic in an xstate Actor', () => sourcePerUnit(xstateUnit(sourceFlat))],
    ['source, machine per unit (child of pool), to S4, flatMachineLogic in a FlatActor, inspection events built', () => sourcePerUnit(flatUnit(true))],
    ['source, machine per unit (child of pool), to S4, flatMachineLogic in a FlatActor without an observer (the runtime)', () => sourcePerUnit(flatUnit(false))],
    ['target, machine per unit', () => targetPerParcel(1)],
    ['target, machine per parcel of 32 (PARCEL_MAX_UNITS), xstate interpreter', () => targetPerParcel(32)],
    ['target, machine per parcel of 32 (PARCEL_MAX_UNITS), flatMachineLogic (the runtime)', () => targetPerParcel(32, targetFlat)],
    ['target, machine per parcel of 64', () => targetPerParcel(64)],
    ['target, machine per parcel of 256', () => targetPerParcel(256)],
  ];
  for (const [, run] of cases) await run(); // warm-up
  for (const [name, run] of cases) {
    const xs: number[] = [];
    for (let r = 0; r < runs; r++) {
      (globalThis as { gc?: () => void }).gc?.();
      xs.push(await run());
    }
    console.log(`${name}: median ${median(xs).toFixed(1)} µs/unit over ${runs} runs of ${N} units (${xs.map((x) => x.toFixed(1)).join(', ')})`);
  }
}

void main();
