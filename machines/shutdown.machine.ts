import { assign, fromPromise, setup } from 'xstate';
import type { TerminationResult } from '../vocabulary';
import { TerminationOutcome, TerminationReason } from '../vocabulary';

/**
 * §14 Shutdown, steps 1–6, under one deadline (default 30 s).
 *
 * Every step is an actor the runtime provides; the machine only orders them and classifies the end:
 * all steps within the deadline → Stopped/None; the deadline fires first → the running step is cancelled
 * (its AbortSignal fires), a bounded force teardown runs, → ForceStopped/DeadlineExceeded; a closing
 * callback or cleanup step throws → the remaining cleanup still runs, → ForceStopped/TeardownFailed.
 */
export interface ShutdownInput {
  deadlineMs: number;
}

export interface ShutdownContext {
  deadlineMs: number;
  teardownFailed: boolean;
  deadlineExceeded: boolean;
}

/** A step that must still run when an earlier one failed; it reports failure by rejecting. */
const step = fromPromise<void, void>(async () => {
  throw new Error('shutdown step not provided');
});

export const shutdownMachine = setup({
  types: {
    input: {} as ShutdownInput,
    context: {} as ShutdownContext,
    output: {} as TerminationResult,
  },
  actors: {
    /** Step 1: Draining, admission seal, no new relocation units, mesh seal. */
    sealAdmission: step,
    /** Step 2: publish the Draining descriptor; only its terminal is awaited. */
    publishDraining: step,
    /** Step 3: accepted handlers, request completions, relocation units, session barriers. */
    drainAcceptedWork: step,
    /** Step 4: HostShutdown closing context to every Entry, User and Instance Spot. */
    closeSpots: step,
    /** Step 5: local scope, owner records, descriptor and lease, listener, transport — in order. */
    cleanupResources: step,
    /** Past the deadline: bounded, non-blocking release of whatever is left. */
    forceTeardown: step,
  },
  delays: {
    shutdownDeadline: ({ context }) => context.deadlineMs,
  },
  actions: {
    markTeardownFailed: assign({ teardownFailed: true }),
    markDeadlineExceeded: assign({ deadlineExceeded: true }),
  },
}).createMachine({
  id: 'shutdown',
  context: ({ input }) => ({ deadlineMs: input.deadlineMs, teardownFailed: false, deadlineExceeded: false }),
  initial: 'running',
  states: {
    running: {
      after: { shutdownDeadline: { target: 'forcing', actions: 'markDeadlineExceeded' } },
      initial: 'sealing',
      states: {
        sealing: {
          invoke: {
            src: 'sealAdmission',
            onDone: 'publishingDraining',
            onError: { target: 'publishingDraining', actions: 'markTeardownFailed' },
          },
        },
        publishingDraining: {
          // §14 step 2: success or failure of the publication is a terminal; either way go on.
          invoke: { src: 'publishDraining', onDone: 'drainingWork', onError: 'drainingWork' },
        },
        drainingWork: {
          invoke: {
            src: 'drainAcceptedWork',
            onDone: 'closingSpots',
            onError: { target: 'closingSpots', actions: 'markTeardownFailed' },
          },
        },
        closingSpots: {
          invoke: {
            src: 'closeSpots',
            onDone: 'cleaningUp',
            onError: { target: 'cleaningUp', actions: 'markTeardownFailed' },
          },
        },
        cleaningUp: {
          invoke: {
            src: 'cleanupResources',
            onDone: '#shutdown.done',
            onError: { target: '#shutdown.done', actions: 'markTeardownFailed' },
          },
        },
      },
    },
    forcing: {
      invoke: { src: 'forceTeardown', onDone: 'done', onError: 'done' },
    },
    done: { type: 'final' },
  },
  output: ({ context }): TerminationResult => {
    // The first classification wins: a teardown failure seen before the deadline stays TeardownFailed.
    if (context.teardownFailed) return { outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.TeardownFailed };
    if (context.deadlineExceeded) return { outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.DeadlineExceeded };
    return { outcome: TerminationOutcome.Stopped, reason: TerminationReason.None };
  },
});
