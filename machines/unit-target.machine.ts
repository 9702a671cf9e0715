import { assign, setup } from 'xstate';

/**
 * Target side of one relocation unit (DESIGN.md "Unit handoff (target)", §9, §10.3, §11, §13).
 *
 *   staging ─► relayReady ─(CUTOVER | cutover-wait fallback)─► committing (S2) ─► open (S3, final)
 *      │                                                           └─ restore validity over / conflict ─► discarded
 *      └─ checksum mismatch, restore failure, abort ─► discarded (final; nothing in the temporary queue ran)
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
}

interface UnitTargetContext {
  cutoverWaitMs: number;
  fellBack: boolean;
  opened: boolean;
}

export interface UnitTargetOutput {
  readonly opened: boolean;
  /** true when the cutover-wait fallback, not a cutover, led to the CAS (cutover_timeout counter). */
  readonly fellBack: boolean;
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
    /** Drop the prepared objects and the temporary queue without running anything. */
    discard: () => {},
    markFallback: assign({ fellBack: true }),
    markOpened: assign({ opened: true }),
  },
  delays: {
    cutoverWait: ({ context }) => context.cutoverWaitMs,
  },
}).createMachine({
  id: 'unitTarget',
  context: ({ input }) => ({ cutoverWaitMs: input.cutoverWaitMs, fellBack: false, opened: false }),
  initial: 'staging',
  states: {
    staging: {
      on: { RESTORED: 'relayReady', RESTORE_FAILED: 'discarded', ABORT: 'discarded' },
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
  },
  output: ({ context }) => ({ opened: context.opened, fellBack: context.fellBack }),
});
