import { assign, setup } from 'xstate';

/**
 * Target side of one relocation unit (DESIGN.md "Unit handoff (target)", §9, §10.3, §11, §13).
 *
 *   staging ─► relayReady ─(CUTOVER | CUTOVER_WAIT_ENDED fallback)─► committing (S2) ─► open (S3, final)
 *      │                                                                  └─ restore validity over / conflict ─► discarded
 *      └─ checksum mismatch, restore failure, abort, STAGING_EXPIRED ─► abandoned (final; before relay-ready:
 *         nothing in the temporary queue ran and the target ends none of it, §11)
 *
 * Staging expiry (§11): a unit whose payload does not arrive within restore validity (a lost abort, a source
 * that never sealed) is abandoned, so what it holds is freed and Shutdown (§14 step 3) is not held by it.
 *
 * No timers here (DESIGN.md "Known performance traps": two `after` delays cost ~12 µs per unit): the coordinator's
 * shared expiry queues (one timer for many units, FIFO by deadline) send STAGING_EXPIRED after restore validity
 * and CUTOVER_WAIT_ENDED after the cutover wait; a unit that already left the state ignores them. The hot path
 * (RESTORED, CUTOVER, COMMITTED) runs no `assign`: the only context writes are on the two cold timer transitions,
 * and `opened` is read from the final state reached. Data (queues, relay span, objects) stays in the driver.
 *
 * The CAS retries live in the provided `commitOwner` action (it reports COMMITTED or COMMIT_FAILED).
 */
export type UnitTargetEvent =
  | { type: 'RESTORED' } // payload verified and restored; relay-ready was sent
  | { type: 'RESTORE_FAILED' }
  | { type: 'ABORT' } // the source gave up before sealing (deadline, shutdown)
  | { type: 'STAGING_EXPIRED' } // restore validity passed without the payload (§11), from the shared queue
  | { type: 'CUTOVER' } // pre-boundary relay batch and cutover arrived
  | { type: 'CUTOVER_WAIT_ENDED' } // the cutover wait passed without a cutover (§13 fallback), from the shared queue
  | { type: 'COMMITTED' } // Location Store CAS applied: this node owns the unit
  | { type: 'COMMIT_FAILED' };

interface UnitTargetContext {
  fellBack: boolean;
  expired: boolean;
}

export interface UnitTargetOutput {
  readonly opened: boolean;
  /** true when the cutover-wait fallback, not a cutover, led to the CAS (cutover_timeout counter). */
  readonly fellBack: boolean;
  /** true when staging expired before the payload arrived. */
  readonly expired: boolean;
}

export const unitTargetMachine = setup({
  types: {
    context: {} as UnitTargetContext,
    events: {} as UnitTargetEvent,
    output: {} as UnitTargetOutput,
  },
  actions: {
    /** S2 on success: CAS source → target, retried until restore validity ends. */
    commitOwner: () => {},
    /** Merge saved work, pre-boundary relay and temporary work in order; OnRelocationReadyCompleted; open (S3). */
    openDispatch: () => {},
    /** After a failed CAS: drop the prepared objects and the temporary queue without running anything. */
    discard: () => {},
    /** Before relay-ready (§11): drop what was prepared; temporary work goes back to routing, none of it ends here. */
    abandon: () => {},
    markExpired: assign({ expired: true }),
    markFallback: assign({ fellBack: true }),
  },
}).createMachine({
  id: 'unitTarget',
  context: { fellBack: false, expired: false },
  initial: 'staging',
  states: {
    staging: {
      on: {
        RESTORED: 'relayReady',
        RESTORE_FAILED: 'abandoned',
        ABORT: 'abandoned',
        STAGING_EXPIRED: { target: 'abandoned', actions: 'markExpired' },
      },
    },
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
    abandoned: { type: 'final', entry: 'abandon' },
  },
  // The root's done event names the final state reached (xstate.done.state.unitTarget.<state>).
  output: ({ context, event }) => ({ opened: event.type === 'xstate.done.state.unitTarget.open', fellBack: context.fellBack, expired: context.expired }),
});
