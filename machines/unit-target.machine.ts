import { assign, setup } from 'xstate';

/**
 * Target side of the relocation units of one inbound parcel (DESIGN.md "Unit handoff (target)", "Relocation at
 * scale"; §9, §10.3, §11, §13). One machine per inbound parcel, not per unit: the units whose payloads arrived and
 * restored together go through relay-ready, cutover, the owner CAS and dispatch opening together. A unit whose
 * step diverges from its parcel's (its cutover comes in a later turn, its CAS has another outcome) is split off
 * into a machine of its own by the driver, so every unit's state is always the state of the machine it is in.
 *
 *   relayReady ─(CUTOVER | CUTOVER_WAIT_ENDED fallback)─► committing (S2) ─COMMITTED─► open (S3, final)
 *                                                                └─ restore validity over / conflict ─► discarded (final)
 *
 * Measured (tools/bench/unit-machines.bench.ts, 20k units): one machine per unit cost ~30 µs per unit; one per
 * parcel of 64 units ~3 µs per unit (issue [6/10]).
 *
 * Before its payload arrives a unit is only staged: its temporary queue is registered (§10.3) and the shared staging
 * expiry abandons it if no payload comes within restore validity (§11). A unit whose payload fails its checksum or
 * restore is answered with an explicit failure and never joins a parcel machine.
 *
 * No timers here (DESIGN.md "Known performance traps"): the coordinator's shared expiry queue sends
 * CUTOVER_WAIT_ENDED after the cutover wait; a machine that already left `relayReady` ignores it. The hot path
 * (CUTOVER, COMMITTED) runs no `assign`. Data (queues, relay spans, objects) stays in the driver.
 */
export type UnitTargetEvent =
  | { type: 'CUTOVER' } // every unit of the parcel has its pre-boundary relay batch and cutover
  | { type: 'CUTOVER_WAIT_ENDED' } // the cutover wait passed without a cutover (§13 fallback), from the shared queue
  | { type: 'COMMITTED' } // Location Store CAS applied for every unit: this node owns them
  | { type: 'COMMIT_FAILED' }; // the CAS failed for good (conflict, or restore validity ended)

export interface UnitTargetContext {
  fellBack: boolean;
}

export interface UnitTargetOutput {
  readonly opened: boolean;
  /** true when the cutover-wait fallback, not a cutover, led to the CAS (cutover_timeout counter). */
  readonly fellBack: boolean;
}

export const unitTargetMachine = setup({
  types: {
    context: {} as UnitTargetContext,
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
    markFallback: assign({ fellBack: true }),
  },
}).createMachine({
  id: 'unitTarget',
  context: { fellBack: false },
  initial: 'relayReady',
  states: {
    relayReady: {
      on: { CUTOVER: 'committing', CUTOVER_WAIT_ENDED: { target: 'committing', actions: 'markFallback' } },
    },
    committing: {
      entry: 'commitOwner',
      // A retransmitted cutover here only replaces the relay span (handled by the driver).
      on: { COMMITTED: 'open', COMMIT_FAILED: 'discarded' },
    },
    open: { type: 'final', entry: 'openDispatch' },
    discarded: { type: 'final', entry: 'discard' },
  },
  // The root's done event names the final state reached (xstate.done.state.unitTarget.<state>).
  output: ({ context, event }) => ({ opened: event.type === 'xstate.done.state.unitTarget.open', fellBack: context.fellBack }),
});
