/**
 * Application types for the Instance Spot Close and §15 tests: an Instance Spot and an Actor whose turns can be held
 * on a named gate until the test opens it (a handler waiting on application I/O), and a log of what ran where.
 * The gates and the log are per test file (jest gives each file its own module registry); call `resetProbes()` in
 * `beforeEach`.
 */
import { defineActor, defineSpot, type ObjectContext, type ObjectRef } from '../../runtime';
import { Gate } from '../model/support/world';
import { json } from './hosts';

export { Gate };

/** What ran, in order: `hold:<id>@<node>`, `held:<id>@<node>`, `closing:<id>:<reason>:<n>@<node>`, `tick:<id>@<node>`. */
export const ran: string[] = [];
const gates = new Map<string, Gate>();

export function gate(name: string): Gate {
  let g = gates.get(name);
  if (!g) gates.set(name, (g = new Gate()));
  return g;
}

/** Opens every gate (a test's end: no handler is left waiting) and starts a fresh log and gate set. */
export function resetProbes(): void {
  for (const g of gates.values()) g.open();
  gates.clear();
  ran.length = 0;
}

export type ProbeMessage =
  | { op: 'add' }
  | { op: 'get' }
  | { op: 'where' }
  /** A turn that lasts until the test opens `gate`. */
  | { op: 'hold'; gate: string }
  /** Schedules a periodic timer `name`. */
  | { op: 'tick'; name: string; everyMs: number }
  /** A request to another object from inside the turn; the turn ends with its reply. */
  | { op: 'ask'; to: ObjectRef; message: ProbeMessage };

function receive(state: { n: number }, message: ProbeMessage, ctx: ObjectContext<{ n: number }>): unknown {
  switch (message.op) {
    case 'add':
      return ++state.n;
    case 'get':
      return state.n;
    case 'where':
      return ctx.nodeId;
    case 'hold':
      ran.push(`hold:${ctx.id}@${ctx.nodeId}`);
      return gate(message.gate)
        .wait()
        .then(() => {
          ran.push(`held:${ctx.id}@${ctx.nodeId}`);
          return 'released';
        });
    case 'tick':
      ctx.timers.schedule(message.name, { dueMs: message.everyMs, periodMs: message.everyMs });
      return true;
    case 'ask':
      ran.push(`ask:${ctx.id}@${ctx.nodeId}`);
      return ctx.request(message.to, message.message, { timeoutMs: 20_000 });
  }
}

/** What every probe type shares: a preserved count, the handler above, and timers that log their ticks. */
const probe = {
  relocation: json<{ n: number }>(),
  create: () => ({ n: 0 }),
  receive,
  onTimer: (_state: { n: number }, _name: string, ctx: ObjectContext<{ n: number }>) => void ran.push(`tick:${ctx.id}@${ctx.nodeId}`),
};

/** An Instance Spot (created by its first message) with a closing callback that logs its reason. */
export const Shard = defineSpot<{ n: number }>({
  type: 'Shard',
  kind: 'instance',
  ...probe,
  onClosing: (state, reason, ctx) => void ran.push(`closing:${ctx.id}:${reason}:${state.n}@${ctx.nodeId}`),
});

/** An Entry Spot Actor (relocation batch 2): holding its turn keeps a Relocate in Relocating before batch 3. */
export const Probe = defineActor<{ n: number }>({ type: 'Probe', ...probe });

/** A SpotWide User Spot (not closable with closeSpot). */
export const Hall = defineSpot<{ n: number }>({ type: 'Hall', kind: 'user', executionMode: 'SpotWide', ...probe });

export const PROBE_TYPES = [Shard, Probe, Hall];
