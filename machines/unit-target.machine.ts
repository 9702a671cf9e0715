import { assign, setup } from 'xstate';

/**
 * Target side of one relocation unit (DESIGN.md "Unit handoff (target)", §9, §10.3, §11, §13).
 *
 *   staging ─► relayReady ─(CUTOVER | cutover-wait fallback)─► committing (S2) ─► open (S3, final)
 *      │                                                           └─ restore validity over / conflict ─► discarded
 *      └─ checksum mismatch, restore failure, abort, staging expiry ─► abandoned (final; before relay-ready:
 *         nothing in the temporary queue ran and the target ends none of it, §11)
 *
 * Staging expiry (§11): a unit whose payload does not arrive within restore validity (a lost abort, a source
 * that never sealed) is abandoned, so what it holds is freed and Shutdown (§14 step 3) is not held by it.
 *
 * The CAS retries live in the provided `commitOwner` action (it reports COMMITTED or COMMIT_FAILED); the
 * cutover-wait fallback is this machine's one delay.
 */
export type UnitTargetEvent =
  | { type: 'RESTORED' } // payload verified and restored; relay-ready was sent
  | { type: 'RESTORE_FAILED' }
  | { type: 'ABORT' } // the source gave up before sealing (deadline, shutdown)
  | { type: 'CUTOVER' } // pre-boundary relay batch and cutover arrived
  | { type: 'COMMITTED' } // Location Store CAS applied: this node owns the unit
  | { type: 'COMMIT_FAILED' };

export interface UnitTargetInput {
  readonly cutoverWaitMs: number;
  /** How long the unit may wait in staging for its payload (restore validity, §11). */
  readonly stagingValidityMs: number;
}

interface UnitTargetContext {
  cutoverWaitMs: number;
  stagingValidityMs: number;
  fellBack: boolean;
  expired: boolean;
  opened: boolean;
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
    input: {} as UnitTargetInput,
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
    markOpened: assign({ opened: true }),
  },
  delays: {
    cutoverWait: ({ context }) => context.cutoverWaitMs,
    stagingValidity: ({ context }) => context.stagingValidityMs,
  },
}).createMachine({
  id: 'unitTarget',
  context: ({ input }) => ({
    cutoverWaitMs: input.cutoverWaitMs,
    stagingValidityMs: input.stagingValidityMs,
    fellBack: false,
    expired: false,
    opened: false,
  }),
  initial: 'staging',
  states: {
    staging: {
      on: { RESTORED: 'relayReady', RESTORE_FAILED: 'abandoned', ABORT: 'abandoned' },
      after: { stagingValidity: { target: 'abandoned', actions: 'markExpired' } },
    },
    relayReady: {
      on: { CUTOVER: 'committing' },
      after: { cutoverWait: { target: 'committing', actions: 'markFallback' } },
    },
    committing: {
      entry: 'commitOwner',
      // A retransmitted cutover here only replaces the relay span (handled by the driver).
      on: { COMMITTED: 'open', COMMIT_FAILED: 'discarded' },
    },
    open: { type: 'final', entry: ['openDispatch', 'markOpened'] },
    discarded: { type: 'final', entry: 'discard' },
    abandoned: { type: 'final', entry: 'abandon' },
  },
  output: ({ context }) => ({ opened: context.opened, fellBack: context.fellBack, expired: context.expired }),
});
