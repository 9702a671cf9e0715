import { assign, fromCallback, fromPromise, raise, sendTo, setup } from 'xstate';
import type { NodeRef } from '../vocabulary';
import { RelocationReason } from '../vocabulary';

/**
 * One host Relocate operation (§4–§8, §13, §14 race table).
 *
 *   preflight ─► awaitingTarget ─► closingAdmission ─► enteringRelocating ─► batch 1 ─► batch 2 ─► batch 3 ─► Relocated/None
 *       │ (empty host, §5.1) ─────────►┘        │                                  └─ failure / deadline / shutdown: no new
 *       └─ Blocked(reason)                      └─ deadline / shutdown: Blocked       unit starts, started units finish safely
 *
 * closingAdmission (§4 first row, §7): the host enters Relocating (new admission and inbound units are refused),
 * then creations, joins, Instance placements and inbound relocation units accepted before that settle, so the
 * inventory fixed next holds everything the host was given. If that work brought the first objects of a host whose
 * preflight found none, the target search (§5.1) runs then, with admission already closed.
 *
 * The machine holds no unit collections: the invoked `unitPool` owns the unit actors (DESIGN.md measured traps)
 * and answers one BATCH_DONE per batch, so the work per supervisor event does not grow with the unit count. A unit
 * counts for its batch at S1 (its cutover submit terminal, §13), not when its Message Follow ends (S4).
 * Deadline and Shutdown arrive as events and are handled by the state that is current when they arrive.
 */
export type PreflightOutput =
  | { readonly kind: 'blocked'; readonly reason: RelocationReason }
  | { readonly kind: 'ready'; readonly hasUnits: boolean };

/** What closing admission found once accepted work settled. */
export interface AdmissionClosed {
  /** The host owns something to move (accepted work may have added objects after preflight). */
  readonly hasUnits: boolean;
}

export interface UnitCounts {
  readonly batch1: number;
  readonly batch2: number;
  readonly batch3: number;
}

/** The pool stops starting units when the invoke ends (its cleanup), whatever the reason. */
/** `target` is undefined only for an empty host (§5.1: no target is searched), whose batches are empty. */
export type PoolCommand = { type: 'START_BATCH'; batch: 1 | 2 | 3; target: NodeRef | undefined };

export type PoolReport = {
  type: 'BATCH_DONE';
  batch: 1 | 2 | 3;
  /** Set when the batch did not move every unit: the reason of its first unit failure. */
  failure?: RelocationReason;
  /** true when some unit crossed relay-ready, so its work stays on the target whatever the result. */
  anyCrossed?: boolean;
};

export type SupervisorEvent =
  | { type: 'DEADLINE_REACHED' }
  | { type: 'SHUTDOWN_REQUESTED' }
  | PoolReport;

export interface SupervisorInput {
  readonly deadlineMs: number;
}

export interface SupervisorContext {
  deadlineMs: number;
  target?: NodeRef;
  counts?: UnitCounts;
  /** Why the operation will end Blocked, once decided. */
  blockedReason?: RelocationReason;
  enteredRelocating: boolean;
  relocatedAll: boolean;
}

export type SupervisorOutput =
  | { readonly outcome: 'relocated' }
  | { readonly outcome: 'blocked'; readonly reason: RelocationReason; readonly enteredRelocating: boolean };

export const relocationSupervisorMachine = setup({
  types: {
    input: {} as SupervisorInput,
    context: {} as SupervisorContext,
    events: {} as SupervisorEvent,
    output: {} as SupervisorOutput,
  },
  actors: {
    preflight: fromPromise<PreflightOutput, void>(async () => {
      throw new Error('preflight not provided');
    }),
    /** §5.1: resolves with the first eligible target; the deadline event ends the wait. */
    awaitTarget: fromPromise<NodeRef, void>(async () => {
      throw new Error('awaitTarget not provided');
    }),
    /** Lifecycle → Relocating (admission closes); resolves once accepted admissions and inbound units settled (§4). */
    closeAdmission: fromPromise<AdmissionClosed, void>(async () => {
      throw new Error('closeAdmission not provided');
    }),
    /** Inventory fixed once (§7), Relocating descriptor published. */
    enterRelocating: fromPromise<UnitCounts, { target: NodeRef | undefined }>(async () => {
      throw new Error('enterRelocating not provided');
    }),
    /** §13 last paragraph: roll every attempted descriptor back to Serving. */
    rollbackIntent: fromPromise<void, void>(async () => {
      throw new Error('rollbackIntent not provided');
    }),
    unitPool: fromCallback<PoolCommand>(() => {
      throw new Error('unitPool not provided');
    }),
  },
  delays: {
    relocationDeadline: ({ context }) => context.deadlineMs,
  },
  guards: {
    hasUnits: (_, params: { output: PreflightOutput }) => params.output.kind === 'ready' && params.output.hasUnits,
    isBlocked: (_, params: { output: PreflightOutput }) => params.output.kind === 'blocked',
    batchFailed: ({ event }) => event.type === 'BATCH_DONE' && event.failure !== undefined,
    stopRequested: ({ context }) => context.blockedReason !== undefined,
    /** Work accepted after an empty preflight added units, and no target was searched yet (§5.1). */
    needsTarget: ({ context }, params: { closed: AdmissionClosed }) => params.closed.hasUnits && context.target === undefined,
  },
  actions: {
    block: assign({ blockedReason: (_, params: { reason: RelocationReason }) => params.reason }),
    /** The first reason decided is the one returned. */
    blockOnce: assign({
      blockedReason: ({ context }, params: { reason: RelocationReason }) => context.blockedReason ?? params.reason,
    }),
    recordBatchFailure: assign({
      blockedReason: ({ context, event }) =>
        context.blockedReason ?? (event.type === 'BATCH_DONE' ? event.failure : undefined),
    }),
  },
}).createMachine({
  id: 'relocationSupervisor',
  context: ({ input }) => ({ deadlineMs: input.deadlineMs, enteredRelocating: false, relocatedAll: false }),
  // One deadline for the whole operation, from its first call (§6: later same-option calls share it).
  after: { relocationDeadline: { actions: raise({ type: 'DEADLINE_REACHED' }) } },
  initial: 'preflight',
  states: {
    preflight: {
      invoke: {
        src: 'preflight',
        onDone: [
          {
            guard: { type: 'isBlocked', params: ({ event }) => ({ output: event.output }) },
            target: 'blocked',
            actions: {
              type: 'block',
              params: ({ event }) => ({ reason: event.output.kind === 'blocked' ? event.output.reason : RelocationReason.RelocationFailed }),
            },
          },
          { guard: { type: 'hasUnits', params: ({ event }) => ({ output: event.output }) }, target: 'awaitingTarget' },
          // §5.1: nothing to move → no target search; the state transition and admission close still happen.
          { target: 'closingAdmission' },
        ],
        onError: { target: 'blocked', actions: { type: 'block', params: { reason: RelocationReason.StoreUnavailable } } },
      },
      on: {
        DEADLINE_REACHED: { target: 'blocked', actions: { type: 'block', params: { reason: RelocationReason.DeadlineExceeded } } },
        SHUTDOWN_REQUESTED: { target: 'blocked', actions: { type: 'block', params: { reason: RelocationReason.ShutdownRequested } } },
      },
    },
    awaitingTarget: {
      // Source state and admission are kept while waiting (§5.1).
      invoke: {
        src: 'awaitTarget',
        onDone: { target: 'closingAdmission', actions: assign({ target: ({ event }) => event.output }) },
        onError: { target: 'blocked', actions: { type: 'block', params: { reason: RelocationReason.StoreUnavailable } } },
      },
      on: {
        DEADLINE_REACHED: { target: 'blocked', actions: { type: 'block', params: { reason: RelocationReason.TargetUnavailable } } },
        SHUTDOWN_REQUESTED: { target: 'blocked', actions: { type: 'block', params: { reason: RelocationReason.ShutdownRequested } } },
      },
    },
    closingAdmission: {
      // The lifecycle enters Relocating as this step starts: a Blocked end from here restores Serving.
      entry: assign({ enteredRelocating: true }),
      invoke: {
        src: 'closeAdmission',
        onDone: [
          // An empty preflight skipped the target search, but accepted work brought objects: search now.
          { guard: { type: 'needsTarget', params: ({ event }) => ({ closed: event.output }) }, target: 'awaitingTarget' },
          { target: 'enteringRelocating' },
        ],
        onError: 'rollingBack',
      },
      on: {
        // Accepted work that does not settle in time keeps the source as it is (nothing was sealed).
        DEADLINE_REACHED: { target: 'blocked', actions: { type: 'block', params: { reason: RelocationReason.DeadlineExceeded } } },
        SHUTDOWN_REQUESTED: { target: 'blocked', actions: { type: 'block', params: { reason: RelocationReason.ShutdownRequested } } },
      },
    },
    enteringRelocating: {
      invoke: {
        src: 'enterRelocating',
        input: ({ context }) => ({ target: context.target }),
        onDone: {
          target: 'relocating',
          actions: assign({ counts: ({ event }) => event.output, enteredRelocating: true }),
        },
        onError: { target: 'rollingBack', actions: assign({ enteredRelocating: true }) },
      },
      on: {
        // Handled once the intent is settled: the pool then starts nothing.
        DEADLINE_REACHED: { actions: { type: 'blockOnce', params: { reason: RelocationReason.DeadlineExceeded } } },
        SHUTDOWN_REQUESTED: { actions: { type: 'blockOnce', params: { reason: RelocationReason.ShutdownRequested } } },
      },
    },
    rollingBack: {
      entry: { type: 'blockOnce', params: { reason: RelocationReason.StoreUnavailable } },
      invoke: { src: 'rollbackIntent', onDone: 'blocked', onError: 'blocked' },
    },
    relocating: {
      invoke: {
        id: 'pool',
        src: 'unitPool',
        // DESIGN.md: an unhandled actor error would put the supervisor itself in error.
        onError: { target: 'blocked', actions: { type: 'blockOnce', params: { reason: RelocationReason.RelocationFailed } } },
      },
      initial: 'deciding',
      // §8 / §14: the call ends now; leaving this state stops the pool from starting units, and units already
      // started go on to a safe terminal state (they are children of the pool actor, created with `parent`, so they
      // are never in this machine's snapshot and stopping the pool does not stop them).
      on: {
        DEADLINE_REACHED: { target: 'blocked', actions: { type: 'blockOnce', params: { reason: RelocationReason.DeadlineExceeded } } },
        SHUTDOWN_REQUESTED: { target: 'blocked', actions: { type: 'blockOnce', params: { reason: RelocationReason.ShutdownRequested } } },
      },
      states: {
        // A deadline or shutdown that arrived while entering Relocating: start nothing.
        deciding: {
          always: [{ guard: 'stopRequested', target: '#relocationSupervisor.blocked' }, { target: 'batch1' }],
        },
        batch1: {
          entry: sendTo('pool', ({ context }) => ({ type: 'START_BATCH', batch: 1, target: context.target }) satisfies PoolCommand),
          on: {
            BATCH_DONE: [
              { guard: 'batchFailed', target: '#relocationSupervisor.blocked', actions: 'recordBatchFailure' },
              { target: 'batch2' },
            ],
          },
        },
        batch2: {
          entry: sendTo('pool', ({ context }) => ({ type: 'START_BATCH', batch: 2, target: context.target }) satisfies PoolCommand),
          on: {
            BATCH_DONE: [
              { guard: 'batchFailed', target: '#relocationSupervisor.blocked', actions: 'recordBatchFailure' },
              { target: 'batch3' },
            ],
          },
        },
        batch3: {
          entry: sendTo('pool', ({ context }) => ({ type: 'START_BATCH', batch: 3, target: context.target }) satisfies PoolCommand),
          on: {
            BATCH_DONE: [
              { guard: 'batchFailed', target: '#relocationSupervisor.blocked', actions: 'recordBatchFailure' },
              // Every unit attempted its cutover: Relocated even if the deadline passed meanwhile (§8, §13).
              { target: '#relocationSupervisor.relocated' },
            ],
          },
        },
      },
    },
    relocated: { type: 'final', entry: assign({ relocatedAll: true }) },
    blocked: { type: 'final' },
  },
  output: ({ context }): SupervisorOutput =>
    context.relocatedAll
      ? { outcome: 'relocated' }
      : {
          outcome: 'blocked',
          reason: context.blockedReason ?? RelocationReason.RelocationFailed,
          enteredRelocating: context.enteredRelocating,
        },
});
