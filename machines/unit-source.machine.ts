import { setup } from 'xstate';
import { RelocationReason } from '../vocabulary';

/**
 * Source side of one relocation unit (DESIGN.md "Unit handoff (source)", "Relocation at scale"; §7, §8, §11, §13, §14).
 *
 *   waiting ─SAFE_POINT─► sealed (S0) ─RELAY_READY | REPLY_INDETERMINATE─► following (S1) ─FOLLOW_EXPIRED─► followEnded (S4, final)
 *      │                     │                                                   └─ROUTE_CUT (§14 Shutdown)─► routeCut (final)
 *      │                     └─ FAILED (explicit, before relay-ready) ─► restored (final; restoreSource)
 *      ├─ STOP | FAILED ─► notStarted (final; abandon: nothing was sealed)
 *      └─ CLOSED ─► closing (abandon) ─CLOSE_DONE | STOP─► closed (final; §12: the Instance Spot closed first — not moved)
 *
 * Hot path: three transitions (SAFE_POINT, RELAY_READY, FOLLOW_EXPIRED) after the initial one (DESIGN.md measured
 * traps: each transition costs). `waiting` is one state for the steps before the seal (§7: payload budget, the target's
 * temporary queue, a seal permit, the end of the current turn or the application's safe point): the driver sequences
 * that I/O and sends SAFE_POINT once, and STOP (§8 deadline, shutdown) is honoured for all of it alike.
 * `following` is entered by the ordered relay + one-way cutover submit (its entry action, synchronous): entering it is
 * the S1 terminal, which is when the pool counts the unit as detached (§13: Relocated at the submit, not S4). The unit
 * then stays there until the coordinator's shared Message Follow expiry timer sends FOLLOW_EXPIRED (S4, §8) — no
 * per-unit `after` — or Shutdown cuts the route (§14). §13: a unit that crossed relay-ready never goes back to restoring.
 *
 * No context and no `assign`: per-unit data (lease, captured queue, S0/S1, submit result) stays in the driver; the only
 * event datum the machine reports, a failure reason, becomes the output of the final state it led to.
 *
 * Keep it flat (top-level states, plain targets, named entry actions, final outputs): the runtime runs one actor of it
 * per unit through `flatMachineLogic` (runtime/flat-machine.ts), which interprets exactly that subset by table
 * lookup and refuses anything else when a host is created. xstate's general interpreter cost ~40 µs and ~30 KB of
 * garbage per unit for these four steps, a third of the source's time in a 100k move (issue [6/10]).
 */
export type UnitSourceEvent =
  | { type: 'SAFE_POINT' } // budget, temporary queue, seal permit and safe point all reached: seal now
  | { type: 'RELAY_READY' } // target restored and replied relay-ready: the boundary
  | { type: 'REPLY_INDETERMINATE' } // no reply in time: the target may be in its cutover-wait fallback (§8)
  | { type: 'FAILED'; reason: RelocationReason } // explicit failure before relay-ready
  | { type: 'STOP' } // deadline or shutdown: do not start (only honoured before the seal)
  | { type: 'FOLLOW_EXPIRED' } // S4: MessageFollowDuration ended (shared expiry timer)
  | { type: 'ROUTE_CUT' } // §14: Shutdown removed the Message Follow route before S4
  | { type: 'CLOSED' } // §12: closeSpot reached the Instance Spot before the seal: close first, the unit does not move it
  | { type: 'CLOSE_DONE' }; // the close finished (the Spot's turn, onClosing(Closed), its records): nothing is left here

export type UnitSourceOutput =
  | { readonly kind: 'followEnded' }
  | { readonly kind: 'routeCut' }
  | { readonly kind: 'restored'; readonly reason: RelocationReason }
  | { readonly kind: 'notStarted'; readonly reason?: RelocationReason }
  /** §12: the Instance Spot was closed before its seal; nothing is left to move (not a failure of the relocation). */
  | { readonly kind: 'closed' };

/** The states in which the unit has left the source for good (S1 reached): the pool counts it detached (§13). */
export const DETACHED_STATES: ReadonlySet<string> = new Set(['following', 'followEnded', 'routeCut']);

export const unitSourceMachine = setup({
  types: {
    events: {} as UnitSourceEvent,
    output: {} as UnitSourceOutput,
  },
  actions: {
    /** §7 before the seal: payload budget, target temporary queue (excluded from the interruption measurement, §8), seal permit, safe point. */
    prepare: () => {},
    /** S0: admission seal, capture state + unexecuted queue + timers, send chunks. */
    sealAndTransfer: () => {},
    /** Ordered relay of held messages, then the one-way cutover submit (S1); Message Follow starts (§12, §13). */
    relayAndCutover: () => {},
    /** §11: put the captured queue and held messages back in order, re-arm timers, reopen dispatch. */
    restoreSource: () => {},
    /** Give back budget, seal permit and the target's temporary queue when nothing was sealed. */
    abandon: () => {},
  },
}).createMachine({
  id: 'unitSource',
  initial: 'waiting',
  states: {
    waiting: {
      entry: 'prepare',
      on: { SAFE_POINT: 'sealed', FAILED: 'notStarted', STOP: 'notStarted', CLOSED: 'closing' },
    },
    sealed: {
      entry: 'sealAndTransfer',
      on: {
        RELAY_READY: 'following',
        REPLY_INDETERMINATE: 'following',
        FAILED: 'restored',
        // §8: a started unit is processed to a safe terminal state; STOP is ignored from here on.
      },
    },
    following: {
      entry: 'relayAndCutover',
      on: { FOLLOW_EXPIRED: 'followEnded', ROUTE_CUT: 'routeCut' },
    },
    followEnded: { type: 'final', output: { kind: 'followEnded' } },
    routeCut: { type: 'final', output: { kind: 'routeCut' } },
    restored: {
      type: 'final',
      entry: 'restoreSource',
      output: ({ event }) => ({ kind: 'restored', reason: event.type === 'FAILED' ? event.reason : RelocationReason.RelocationFailed }),
    },
    // §12: Close and relocation are ordered by the seal on the owner: a close accepted before it wins, and the unit
    // gives back what it holds (budget, permit, the target's temporary queue) like a unit that never started. It ends
    // when the close finished, so Relocated still means nothing of the workload runs here; past the deadline (STOP)
    // it ends at once (the close goes on, bounded by its own turn and store retries).
    closing: { entry: 'abandon', on: { CLOSE_DONE: 'closed', STOP: 'closed' } },
    closed: { type: 'final', output: { kind: 'closed' } },
    notStarted: {
      type: 'final',
      entry: 'abandon',
      output: ({ event }) => ({ kind: 'notStarted', ...(event.type === 'FAILED' ? { reason: event.reason } : {}) }),
    },
  },
  // The final state's output, computed from the event that led there (no assign).
  output: ({ event }) => (event as unknown as { output: UnitSourceOutput }).output,
});
