import { setup } from 'xstate';

/**
 * Target side of the relocation units of one inbound parcel (DESIGN.md "Unit handoff (target)", "Relocation at
 * scale"; §9, §10.3, §11, §13). One machine per inbound parcel, not per unit: the units whose payloads arrived and
 * restored together go through relay-ready, cutover, the owner CAS and dispatch opening together. A unit whose
 * step diverges from its parcel's (its cutover comes in a later turn, its CAS has another outcome) is split off
 * into a machine of its own by the driver, so every unit's state is always the state of the machine it is in.
 *
 *   relayReady ─CUTOVER─► committing (S2) ─COMMITTED─► open (S3, final)
 *       │                          └─COMMIT_FAILED (restore validity over / conflict)─► discarded (final)
 *       └─CUTOVER_WAIT_ENDED (§13 fallback)─► committingAfterFallback ─► openAfterFallback | discardedAfterFallback
 *
 * Whether the cutover-wait fallback led to the CAS (the `cutover_timeout` counter, `fellBack` of each S2 event) is
 * which state the parcel is in, not context: the machine has no context and no `assign`, so it runs on
 * `flatMachineLogic` (runtime/flat-machine.ts) like the source's unit machine. Measured with `npm run bench -- --n
 * 100000`, five alternated pairs against xstate's interpreter with a `fellBack` context: the target's CPU in the move
 * 3.66–3.96 s against 4.04–4.32 (lower in every pair, −11% by the medians; 3,137 parcel machines per move), the move
 * 6.19–6.77 s against 6.41–6.79 (−6% by the medians).
 *
 * Measured (tools/bench/unit-machines.bench.ts, 20k units): one machine per unit cost ~30 µs per unit; one per
 * parcel of 64 units ~3 µs per unit (issue [6/10]).
 *
 * Before its payload arrives a unit is only staged: its temporary queue is registered (§10.3) and the shared staging
 * expiry abandons it if no payload comes within restore validity (§11). A unit whose payload fails its checksum or
 * restore is answered with an explicit failure and never joins a parcel machine.
 *
 * No timers here (DESIGN.md "Known performance traps"): the coordinator's shared expiry queue sends
 * CUTOVER_WAIT_ENDED after the cutover wait; a machine that already left `relayReady` ignores it. Data (queues, relay
 * spans, objects) stays in the driver.
 */
export type UnitTargetEvent =
  | { type: 'CUTOVER' } // every unit of the parcel has its pre-boundary relay batch and cutover
  | { type: 'CUTOVER_WAIT_ENDED' } // the cutover wait passed without a cutover (§13 fallback), from the shared queue
  | { type: 'COMMITTED' } // Location Store CAS applied for every unit: this node owns them
  | { type: 'COMMIT_FAILED' }; // the CAS failed for good (conflict, or restore validity ended)

export interface UnitTargetOutput {
  readonly opened: boolean;
  /** true when the cutover-wait fallback, not a cutover, led to the CAS (cutover_timeout counter). */
  readonly fellBack: boolean;
}

const output = (opened: boolean, fellBack: boolean): UnitTargetOutput => Object.freeze({ opened, fellBack });

export const unitTargetMachine = setup({
  types: {
    events: {} as UnitTargetEvent,
    output: {} as UnitTargetOutput,
  },
  actions: {
    /** S2 on success: CAS source → target for every unit, retried until restore validity ends. */
    commitOwner: () => {},
    /** Merge saved work, pre-boundary relay and temporary work in order; OnRelocationReadyCompleted; open (S3). */
    openDispatch: () => {},
    /** After a failed CAS: drop the prepared objects and the temporary queue without running anything (§11). */
    discard: () => {},
  },
}).createMachine({
  id: 'unitTarget',
  initial: 'relayReady',
  states: {
    relayReady: {
      on: { CUTOVER: 'committing', CUTOVER_WAIT_ENDED: 'committingAfterFallback' },
    },
    // A retransmitted cutover while committing only replaces the relay span (handled by the driver).
    committing: {
      entry: 'commitOwner',
      on: { COMMITTED: 'open', COMMIT_FAILED: 'discarded' },
    },
    committingAfterFallback: {
      entry: 'commitOwner',
      on: { COMMITTED: 'openAfterFallback', COMMIT_FAILED: 'discardedAfterFallback' },
    },
    open: { type: 'final', entry: 'openDispatch', output: output(true, false) },
    openAfterFallback: { type: 'final', entry: 'openDispatch', output: output(true, true) },
    discarded: { type: 'final', entry: 'discard', output: output(false, false) },
    discardedAfterFallback: { type: 'final', entry: 'discard', output: output(false, true) },
  },
  // The machine's output is its final state's (xstate hands it to the root in the done-state event).
  output: ({ event }) => (event as unknown as { output: UnitTargetOutput }).output,
});

/** States in which the cutover-wait fallback (§13), not a cutover, led to the owner CAS. */
export const FALLBACK_STATES: ReadonlySet<string> = new Set([
  'committingAfterFallback',
  'openAfterFallback',
  'discardedAfterFallback',
]);
