import { assign, setup } from 'xstate';
import { RelocationReason } from '../vocabulary';

/**
 * Source side of one relocation unit (DESIGN.md "Unit handoff (source)", §8, §11, §13).
 *
 *   budget ─► preparing ─► safePoint ─► sealed (S0: capture, chunks) ─► crossed ─► cutOver (S1, final)
 *      │          │            │            ├─ explicit failure before relay-ready ─► restoring ─► restored (final)
 *      └──────────┴────────────┴─ STOP ─► notStarted (final; nothing was sealed)
 *
 * One event per protocol milestone, delivered by the runtime's driver as I/O completes (no promise actor per
 * step: DESIGN.md measured traps). Message Follow and the retransmission window are shared timers in the
 * runtime, not per-unit states. §13: a unit that crossed relay-ready never goes back to `restoring`.
 */
export type UnitSourceEvent =
  | { type: 'BUDGET_ACQUIRED' }
  | { type: 'PREPARED' } // target registered its temporary queue
  | { type: 'SAFE_POINT' } // current turn (and ApplicationSignaled safe point) ended
  | { type: 'RELAY_READY' } // target restored and replied relay-ready: the boundary
  | { type: 'REPLY_INDETERMINATE' } // no reply in time: the target may be in its cutover-wait fallback
  | { type: 'FAILED'; reason: RelocationReason } // explicit failure before relay-ready
  | { type: 'CUTOVER_SUBMITTED'; ok: boolean } // terminal of the one-way cutover submit (S1)
  | { type: 'STOP' }; // deadline or shutdown: do not start (only honoured before the seal)

export interface UnitSourceContext {
  end: 'cutOver' | 'restored' | 'notStarted' | undefined;
  failure?: RelocationReason;
  cutoverOk?: boolean;
  indeterminate: boolean;
}

export type UnitSourceOutput =
  | { readonly kind: 'cutOver'; readonly submitOk: boolean; readonly indeterminate: boolean }
  | { readonly kind: 'restored'; readonly reason: RelocationReason }
  | { readonly kind: 'notStarted'; readonly reason?: RelocationReason };

export const unitSourceMachine = setup({
  types: {
    context: {} as UnitSourceContext,
    events: {} as UnitSourceEvent,
    output: {} as UnitSourceOutput,
  },
  actions: {
    /** Wait for room in the peer's payload budget (§7: the unit waits before its seal). */
    acquireBudget: () => {},
    /** Ask the target to register its temporary queue (excluded from the interruption measurement, §8). */
    prepareTarget: () => {},
    /** Wait for the end of the current turn, or the application's safe point (§7). */
    awaitSafePoint: () => {},
    /** S0: admission seal, capture state + unexecuted queue + timers, send chunks. */
    sealAndTransfer: () => {},
    /** Ordered relay of held messages, then one-way cutover; reports CUTOVER_SUBMITTED. */
    relayAndCutover: () => {},
    /** §11: put the captured queue and held messages back in order, re-arm timers, reopen dispatch. */
    restoreSource: () => {},
    /** Give back budget and the target's temporary queue when nothing was sealed. */
    abandon: () => {},
    recordFailure: assign({ failure: ({ event }) => (event.type === 'FAILED' ? event.reason : undefined) }),
    recordIndeterminate: assign({ indeterminate: true }),
    recordCutover: assign({ cutoverOk: ({ event }) => (event.type === 'CUTOVER_SUBMITTED' ? event.ok : false) }),
    end: assign({ end: (_, params: { end: 'cutOver' | 'restored' | 'notStarted' }) => params.end }),
  },
}).createMachine({
  id: 'unitSource',
  context: { end: undefined, indeterminate: false },
  initial: 'budget',
  states: {
    budget: {
      entry: 'acquireBudget',
      on: { BUDGET_ACQUIRED: 'preparing', STOP: 'notStarted' },
    },
    preparing: {
      entry: 'prepareTarget',
      on: {
        PREPARED: 'safePoint',
        FAILED: { target: 'notStarted', actions: 'recordFailure' },
        STOP: 'notStarted',
      },
    },
    safePoint: {
      entry: 'awaitSafePoint',
      on: { SAFE_POINT: 'sealed', STOP: 'notStarted' },
    },
    sealed: {
      entry: 'sealAndTransfer',
      on: {
        RELAY_READY: 'crossed',
        REPLY_INDETERMINATE: { target: 'crossed', actions: 'recordIndeterminate' },
        FAILED: { target: 'restoring', actions: 'recordFailure' },
        // §8: a started unit is processed to a safe terminal state; STOP is ignored from here on.
      },
    },
    restoring: {
      entry: 'restoreSource',
      always: 'restored',
    },
    crossed: {
      entry: 'relayAndCutover',
      on: { CUTOVER_SUBMITTED: { target: 'cutOver', actions: 'recordCutover' } },
    },
    cutOver: { type: 'final', entry: { type: 'end', params: { end: 'cutOver' } } },
    restored: { type: 'final', entry: { type: 'end', params: { end: 'restored' } } },
    notStarted: { type: 'final', entry: ['abandon', { type: 'end', params: { end: 'notStarted' } }] },
  },
  output: ({ context }): UnitSourceOutput => {
    if (context.end === 'cutOver') return { kind: 'cutOver', submitOk: context.cutoverOk ?? false, indeterminate: context.indeterminate };
    if (context.end === 'restored') return { kind: 'restored', reason: context.failure ?? RelocationReason.RelocationFailed };
    return { kind: 'notStarted', ...(context.failure !== undefined ? { reason: context.failure } : {}) };
  },
});
