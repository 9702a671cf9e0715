import { createActor } from 'xstate';
import { getSimplePaths } from 'xstate/graph';
import { DETACHED_STATES, unitSourceMachine, type UnitSourceEvent, type UnitSourceOutput } from './unit-source.machine';
import { RelocationReason } from '../vocabulary';

const ACTIONS = ['prepare', 'sealAndTransfer', 'relayAndCutover', 'restoreSource', 'abandon'] as const;
type ActionName = (typeof ACTIONS)[number];

const EVENTS: readonly UnitSourceEvent[] = [
  { type: 'SAFE_POINT' },
  { type: 'RELAY_READY' },
  { type: 'REPLY_INDETERMINATE' },
  { type: 'FAILED', reason: RelocationReason.StateIncompatible },
  { type: 'STOP' },
  { type: 'FOLLOW_EXPIRED' },
  { type: 'ROUTE_CUT' },
  { type: 'CLOSED' },
  { type: 'CLOSE_DONE' },
];

/** Runs the machine with spy actions; returns the action log, states, final state and output. */
function drive(events: readonly UnitSourceEvent[]) {
  const log: ActionName[] = [];
  const spies = Object.fromEntries(ACTIONS.map((name) => [name, () => void log.push(name)])) as Record<ActionName, () => void>;
  let transitions = 0;
  const actor = createActor(unitSourceMachine.provide({ actions: spies }), {
    // Every processed event (the init event included) is one macrostep: count those after start.
    inspect: (e) => void (e.type === '@xstate.snapshot' && e.event.type !== 'xstate.init' && transitions++),
  }).start();
  const states: string[] = [];
  actor.subscribe((s) => states.push(String(s.value)));
  for (const event of events) actor.send(event);
  const snapshot = actor.getSnapshot();
  return { log, states, transitions, value: String(snapshot.value), status: snapshot.status, output: snapshot.output as UnitSourceOutput | undefined };
}

const toS1: UnitSourceEvent[] = [{ type: 'SAFE_POINT' }, { type: 'RELAY_READY' }];

test('hot path: waiting → sealed → following → followEnded (S4) in three transitions after the initial one', () => {
  const r = drive([...toS1, { type: 'FOLLOW_EXPIRED' }]);
  expect(r.states).toEqual(['sealed', 'following', 'followEnded']);
  expect(r.log).toEqual(['prepare', 'sealAndTransfer', 'relayAndCutover']);
  expect(r.transitions).toBeLessThanOrEqual(4);
  expect(r.transitions).toBe(3);
  expect(r.status).toBe('done');
  expect(r.output).toEqual({ kind: 'followEnded' });
});

test('the machine keeps no context and has no delayed transition (S4 comes from the shared expiry timer)', () => {
  expect(createActor(unitSourceMachine).getSnapshot().context).toEqual({});
  expect(unitSourceMachine.config.context).toBeUndefined();
  for (const node of Object.values(unitSourceMachine.states)) expect(node.after).toHaveLength(0);
});

test('S1: the cutover submit is the entry of `following`, where the unit counts as detached and stays until S4', () => {
  const r = drive(toS1);
  expect(r.value).toBe('following');
  expect(r.status).toBe('active');
  expect(DETACHED_STATES.has(r.value)).toBe(true);
  expect(r.log.at(-1)).toBe('relayAndCutover');
});

test('REPLY_INDETERMINATE crosses the boundary too: following, never restored (§8, §13)', () => {
  const r = drive([{ type: 'SAFE_POINT' }, { type: 'REPLY_INDETERMINATE' }, { type: 'FOLLOW_EXPIRED' }]);
  expect(r.states).toEqual(['sealed', 'following', 'followEnded']);
  expect(r.log).not.toContain('restoreSource');
});

test('Shutdown cuts the route of a following unit (§14): routeCut, no S4', () => {
  const r = drive([...toS1, { type: 'ROUTE_CUT' }]);
  expect(r.value).toBe('routeCut');
  expect(r.output).toEqual({ kind: 'routeCut' });
});

test('STOP while waiting (before the seal) → notStarted; abandon runs, nothing sealed', () => {
  const r = drive([{ type: 'STOP' }]);
  expect(r.value).toBe('notStarted');
  expect(r.status).toBe('done');
  expect(r.log).toEqual(['prepare', 'abandon']);
  expect(r.output).toEqual({ kind: 'notStarted' });
});

test('FAILED while waiting (target refused the temporary queue) → notStarted with the reason, from the event (no assign)', () => {
  const r = drive([{ type: 'FAILED', reason: RelocationReason.StoreUnavailable }]);
  expect(r.value).toBe('notStarted');
  expect(r.log).toEqual(['prepare', 'abandon']);
  expect(r.output).toEqual({ kind: 'notStarted', reason: RelocationReason.StoreUnavailable });
});

test('CLOSED while waiting (closeSpot before the seal, §12) → closing (abandon gives everything back) → closed when the close is done', () => {
  const r = drive([{ type: 'CLOSED' }, { type: 'STOP' }]);
  expect(r.states).toEqual(['closing', 'closed']);
  // A SAFE_POINT that comes meanwhile (the running turn ended) seals nothing.
  const done = drive([{ type: 'CLOSED' }, { type: 'SAFE_POINT' }, { type: 'CLOSE_DONE' }]);
  expect(done.states.filter((s, i, all) => all[i - 1] !== s)).toEqual(['closing', 'closed']);
  expect(done.status).toBe('done');
  expect(done.log).toEqual(['prepare', 'abandon']);
  expect(done.output).toEqual({ kind: 'closed' });
});

test('CLOSED after the seal is not taken: relocation came first, the unit goes on (§12)', () => {
  const r = drive([{ type: 'SAFE_POINT' }, { type: 'CLOSED' }, { type: 'RELAY_READY' }, { type: 'CLOSED' }, { type: 'FOLLOW_EXPIRED' }]);
  expect(r.states.filter((s, i, all) => all[i - 1] !== s)).toEqual(['sealed', 'following', 'followEnded']);
  expect(r.value).toBe('followEnded');
  expect(r.log).not.toContain('abandon');
});

test('FAILED after the seal, before relay-ready → restored; restoreSource runs once', () => {
  const r = drive([{ type: 'SAFE_POINT' }, { type: 'FAILED', reason: RelocationReason.RelocationFailed }]);
  expect(r.states).toEqual(['sealed', 'restored']);
  expect(r.log.filter((a) => a === 'restoreSource')).toHaveLength(1);
  expect(r.log).not.toContain('relayAndCutover');
  expect(r.log).not.toContain('abandon');
  expect(r.output).toEqual({ kind: 'restored', reason: RelocationReason.RelocationFailed });
});

test('STOP after the seal is ignored: a started unit goes on to a safe terminal (§8)', () => {
  const r = drive([{ type: 'SAFE_POINT' }, { type: 'STOP' }, { type: 'RELAY_READY' }, { type: 'STOP' }, { type: 'FOLLOW_EXPIRED' }]);
  expect(r.value).toBe('followEnded');
  expect(r.log).not.toContain('abandon');
});

test.each([{ type: 'RELAY_READY' }, { type: 'REPLY_INDETERMINATE' }] as const)(
  'never restoring after $type: a FAILED after crossing calls no restoreSource',
  (crossing) => {
    const r = drive([{ type: 'SAFE_POINT' }, crossing, { type: 'FAILED', reason: RelocationReason.RelocationFailed }]);
    expect(r.value).toBe('following');
    expect(r.log).not.toContain('restoreSource');
  },
);

describe('every simple path (xstate/graph)', () => {
  const paths = getSimplePaths(unitSourceMachine, { events: EVENTS });
  const terminal = paths.filter((p) => p.state.status === 'done');

  test('every reachable state is final or can still move, and every final state is reached', () => {
    for (const p of paths) {
      const moves = EVENTS.some((e) => p.state.can(e));
      expect(p.state.status === 'done').toBe(!moves);
    }
    expect(new Set(terminal.map((p) => String(p.state.value)))).toEqual(new Set(['followEnded', 'routeCut', 'restored', 'notStarted', 'closed']));
    // waiting STOP / FAILED (2) + CLOSED × (CLOSE_DONE | STOP) (2) + sealed FAILED (1) + 2 crossings × (S4 | route cut) (4).
    expect(terminal).toHaveLength(9);
  });

  test('replayed on a running actor, each final path ends done with an output of its kind, keeps §13 and ≤ 4 transitions', () => {
    for (const p of terminal) {
      const events = p.steps.map((s) => s.event).filter((e) => e.type !== ('xstate.init' as string)) as UnitSourceEvent[];
      const r = drive(events);
      const kind = String(p.state.value);
      expect(r.status).toBe('done');
      expect(r.value).toBe(kind);
      expect(r.output!.kind).toBe(kind);
      expect(r.transitions).toBeLessThanOrEqual(4);
      const crossedAt = events.findIndex((e) => e.type === 'RELAY_READY' || e.type === 'REPLY_INDETERMINATE');
      const restores = r.log.filter((a) => a === 'restoreSource').length;
      // restoreSource runs exactly when the unit was sealed and failed before crossing.
      expect(restores).toBe(kind === 'restored' ? 1 : 0);
      if (crossedAt >= 0) expect(DETACHED_STATES.has(kind)).toBe(true);
      expect(r.log.includes('relayAndCutover')).toBe(crossedAt >= 0);
      const unsealed = kind === 'notStarted' || kind === 'closed';
      expect(r.log.includes('abandon')).toBe(unsealed);
      expect(r.log.includes('sealAndTransfer')).toBe(!unsealed);
    }
  });
});
