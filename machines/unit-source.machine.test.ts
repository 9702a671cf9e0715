import { createActor } from 'xstate';
import { getSimplePaths } from 'xstate/graph';
import { unitSourceMachine, type UnitSourceEvent, type UnitSourceOutput } from './unit-source.machine';
import { RelocationReason } from '../vocabulary';

const ACTIONS = ['acquireBudget', 'prepareTarget', 'awaitSafePoint', 'sealAndTransfer', 'relayAndCutover', 'restoreSource', 'abandon'] as const;
type ActionName = (typeof ACTIONS)[number];

const EVENTS: readonly UnitSourceEvent[] = [
  { type: 'BUDGET_ACQUIRED' },
  { type: 'PREPARED' },
  { type: 'SAFE_POINT' },
  { type: 'RELAY_READY' },
  { type: 'REPLY_INDETERMINATE' },
  { type: 'FAILED', reason: RelocationReason.StateIncompatible },
  { type: 'CUTOVER_SUBMITTED', ok: true },
  { type: 'CUTOVER_SUBMITTED', ok: false },
  { type: 'STOP' },
];

/** Runs the machine with spy actions; returns the action log, final state and output. */
function drive(events: readonly UnitSourceEvent[]) {
  const log: ActionName[] = [];
  const spies = Object.fromEntries(ACTIONS.map((name) => [name, () => void log.push(name)])) as Record<ActionName, () => void>;
  const actor = createActor(unitSourceMachine.provide({ actions: spies })).start();
  const states: string[] = [];
  actor.subscribe((s) => states.push(String(s.value)));
  for (const event of events) actor.send(event);
  const snapshot = actor.getSnapshot();
  return { log, states, value: String(snapshot.value), status: snapshot.status, output: snapshot.output as UnitSourceOutput | undefined };
}

const happy: UnitSourceEvent[] = [{ type: 'BUDGET_ACQUIRED' }, { type: 'PREPARED' }, { type: 'SAFE_POINT' }, { type: 'RELAY_READY' }];

test('normal path: budget → preparing → safePoint → sealed → crossed → cutOver', () => {
  const r = drive([...happy, { type: 'CUTOVER_SUBMITTED', ok: true }]);
  expect(r.states).toEqual(['preparing', 'safePoint', 'sealed', 'crossed', 'cutOver']);
  expect(r.log).toEqual(['acquireBudget', 'prepareTarget', 'awaitSafePoint', 'sealAndTransfer', 'relayAndCutover']);
  expect(r.status).toBe('done');
  expect(r.output).toEqual({ kind: 'cutOver', submitOk: true, indeterminate: false });
});

test('a failed cutover submit is still a cutOver terminal (§13: the unit never goes back)', () => {
  const r = drive([...happy, { type: 'CUTOVER_SUBMITTED', ok: false }]);
  expect(r.output).toEqual({ kind: 'cutOver', submitOk: false, indeterminate: false });
  expect(r.log).not.toContain('restoreSource');
});

test('REPLY_INDETERMINATE crosses the boundary too and marks the output indeterminate', () => {
  const r = drive([...happy.slice(0, 3), { type: 'REPLY_INDETERMINATE' }, { type: 'CUTOVER_SUBMITTED', ok: true }]);
  expect(r.states).toEqual(['preparing', 'safePoint', 'sealed', 'crossed', 'cutOver']);
  expect(r.output).toEqual({ kind: 'cutOver', submitOk: true, indeterminate: true });
});

test.each([
  ['budget', 0],
  ['preparing', 1],
  ['safePoint', 2],
] as const)('STOP in %s (before the seal) → notStarted; abandon runs, nothing sealed', (_state, prefix) => {
  const r = drive([...happy.slice(0, prefix), { type: 'STOP' }]);
  expect(r.value).toBe('notStarted');
  expect(r.status).toBe('done');
  expect(r.log.at(-1)).toBe('abandon');
  expect(r.log).not.toContain('sealAndTransfer');
  expect(r.log).not.toContain('restoreSource');
  expect(r.output).toEqual({ kind: 'notStarted' });
});

test('FAILED while preparing (target refused the temporary queue) → notStarted with the reason', () => {
  const r = drive([{ type: 'BUDGET_ACQUIRED' }, { type: 'FAILED', reason: RelocationReason.StoreUnavailable }]);
  expect(r.value).toBe('notStarted');
  expect(r.log).toEqual(['acquireBudget', 'prepareTarget', 'abandon']);
  expect(r.output).toEqual({ kind: 'notStarted', reason: RelocationReason.StoreUnavailable });
});

test('FAILED after the seal, before relay-ready → restoring → restored; restoreSource runs once', () => {
  const r = drive([...happy.slice(0, 3), { type: 'FAILED', reason: RelocationReason.RelocationFailed }]);
  expect(r.states).toEqual(['preparing', 'safePoint', 'sealed', 'restored']); // restoring is transient (always)
  expect(r.log.filter((a) => a === 'restoreSource')).toHaveLength(1);
  expect(r.log).not.toContain('relayAndCutover');
  expect(r.log).not.toContain('abandon');
  expect(r.output).toEqual({ kind: 'restored', reason: RelocationReason.RelocationFailed });
});

test('STOP after the seal is ignored: a started unit goes on to a safe terminal (§8)', () => {
  const r = drive([...happy.slice(0, 3), { type: 'STOP' }, { type: 'RELAY_READY' }, { type: 'STOP' }, { type: 'CUTOVER_SUBMITTED', ok: true }]);
  expect(r.value).toBe('cutOver');
  expect(r.log).not.toContain('abandon');
});

test.each([{ type: 'RELAY_READY' }, { type: 'REPLY_INDETERMINATE' }] as const)(
  'never restoring after $type: a FAILED after crossing calls no restoreSource',
  (crossing) => {
    const r = drive([...happy.slice(0, 3), crossing, { type: 'FAILED', reason: RelocationReason.RelocationFailed }]);
    expect(r.value).toBe('crossed');
    expect(r.log).not.toContain('restoreSource');
    const after = drive([...happy.slice(0, 3), crossing, { type: 'FAILED', reason: RelocationReason.RelocationFailed }, { type: 'CUTOVER_SUBMITTED', ok: false }]);
    expect(after.output).toMatchObject({ kind: 'cutOver', submitOk: false });
    expect(after.log).not.toContain('restoreSource');
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
    expect(new Set(terminal.map((p) => String(p.state.value)))).toEqual(new Set(['cutOver', 'restored', 'notStarted']));
    // budget/preparing/safePoint STOP (3) + preparing FAILED (1) + sealed FAILED (1) + 2 crossings × 2 submit results (4).
    expect(terminal).toHaveLength(9);
  });

  test('replayed on a running actor, each final path ends done with an output of its kind and keeps §13', () => {
    for (const p of terminal) {
      const events = p.steps.map((s) => s.event).filter((e) => e.type !== ('xstate.init' as string)) as UnitSourceEvent[];
      const r = drive(events);
      const kind = String(p.state.value);
      expect(r.status).toBe('done');
      expect(r.value).toBe(kind);
      expect(r.output!.kind).toBe(kind);
      const crossedAt = events.findIndex((e) => e.type === 'RELAY_READY' || e.type === 'REPLY_INDETERMINATE');
      const restores = r.log.filter((a) => a === 'restoreSource').length;
      // restoreSource runs exactly when the unit was sealed and failed before crossing.
      expect(restores).toBe(kind === 'restored' ? 1 : 0);
      if (crossedAt >= 0) expect(kind).toBe('cutOver');
      expect(r.log.includes('abandon')).toBe(kind === 'notStarted');
      expect(r.log.includes('sealAndTransfer')).toBe(kind !== 'notStarted');
    }
  });
});
