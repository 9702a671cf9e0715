import { createActor } from 'xstate';
import { getSimplePaths } from 'xstate/graph';
import { FALLBACK_STATES, unitTargetMachine, type UnitTargetEvent, type UnitTargetOutput } from './unit-target.machine';

const ACTIONS = ['commitOwner', 'openDispatch', 'discard'] as const;
type ActionName = (typeof ACTIONS)[number];

/** The cutover-wait fallback (§13) is an event from the coordinator's shared expiry queue. */
const AFTER_EVENT = 'CUTOVER_WAIT_ENDED';

const EVENTS: readonly UnitTargetEvent[] = [{ type: 'CUTOVER' }, { type: 'COMMITTED' }, { type: 'COMMIT_FAILED' }, { type: AFTER_EVENT }];

function drive(events: readonly UnitTargetEvent[]) {
  const log: ActionName[] = [];
  const spies = Object.fromEntries(ACTIONS.map((name) => [name, () => void log.push(name)])) as Record<ActionName, () => void>;
  const actor = createActor(unitTargetMachine.provide({ actions: spies })).start();
  const states: string[] = [];
  actor.subscribe((s) => states.push(String(s.value)));
  for (const event of events) actor.send(event);
  const snapshot = actor.getSnapshot();
  return { log, states, actor, value: String(snapshot.value), status: snapshot.status, output: snapshot.output as UnitTargetOutput | undefined };
}

test('the machine has no delayed transitions: its deadline comes as an event from a shared expiry queue', () => {
  for (const node of Object.values(unitTargetMachine.states)) expect(node.after).toHaveLength(0);
});

test('no context and no assign: which path the parcel took is its state (it runs on flatMachineLogic)', () => {
  expect(unitTargetMachine.config.context).toBeUndefined();
  const transitionActions = Object.values(unitTargetMachine.states).flatMap((node) => [...node.transitions.values()].flat().flatMap((t) => t.actions));
  expect(transitionActions).toEqual([]);
  expect([...FALLBACK_STATES].every((state) => state in unitTargetMachine.states)).toBe(true);
});

test('a parcel starts at relay-ready (its units restored and answered before the machine exists)', () => {
  const r = drive([]);
  expect(r.value).toBe('relayReady');
  expect(r.log).toEqual([]);
});

test('CUTOVER path: relayReady → committing → open; not a fallback', () => {
  const r = drive([{ type: 'CUTOVER' }, { type: 'COMMITTED' }]);
  expect(r.states).toEqual(['committing', 'open']);
  expect(r.log).toEqual(['commitOwner', 'openDispatch']);
  expect(r.status).toBe('done');
  expect(r.output).toEqual({ opened: true, fellBack: false });
});

test('cutover arriving before the wait ends: no fallback, and the late CUTOVER_WAIT_ENDED changes nothing', () => {
  const r = drive([{ type: 'CUTOVER' }, { type: AFTER_EVENT }, { type: 'COMMITTED' }]);
  expect(r.output).toEqual({ opened: true, fellBack: false });
  expect(r.log.filter((a) => a === 'commitOwner')).toHaveLength(1);
});

test('cutover-wait fallback: CUTOVER_WAIT_ENDED → committingAfterFallback → openAfterFallback, fellBack true', () => {
  const r = drive([{ type: AFTER_EVENT }]);
  expect(r.value).toBe('committingAfterFallback');
  expect(r.log).toEqual(['commitOwner']);
  // A late (retransmitted) cutover while committing changes nothing here.
  r.actor.send({ type: 'CUTOVER' });
  expect(r.actor.getSnapshot().value).toBe('committingAfterFallback');
  r.actor.send({ type: 'COMMITTED' });
  expect(r.actor.getSnapshot().value).toBe('openAfterFallback');
  expect(r.actor.getSnapshot().output).toEqual({ opened: true, fellBack: true });
});

test('COMMIT_FAILED (conflict, or restore validity over) → discarded, nothing opened', () => {
  const r = drive([{ type: 'CUTOVER' }, { type: 'COMMIT_FAILED' }]);
  expect(r.value).toBe('discarded');
  expect(r.log).toEqual(['commitOwner', 'discard']);
  expect(r.output).toEqual({ opened: false, fellBack: false });
  const fb = drive([{ type: AFTER_EVENT }, { type: 'COMMIT_FAILED' }]);
  expect(fb.value).toBe('discardedAfterFallback');
  expect(fb.output).toEqual({ opened: false, fellBack: true });
});

test('COMMITTED or COMMIT_FAILED before committing is not accepted (no CAS was made)', () => {
  const r = drive([{ type: 'COMMITTED' }, { type: 'COMMIT_FAILED' }]);
  expect(r.value).toBe('relayReady');
  expect(r.log).toEqual([]);
});

describe('every simple path (xstate/graph)', () => {
  const paths = getSimplePaths(unitTargetMachine, { events: EVENTS as never });
  const terminal = paths.filter((p) => p.state.status === 'done');

  test('states that cannot move are exactly the final ones; every final is reached', () => {
    for (const p of paths) {
      const moves = EVENTS.some((e) => p.state.can(e as never));
      expect(p.state.status === 'done').toBe(!moves);
    }
    expect(new Set(terminal.map((p) => String(p.state.value)))).toEqual(new Set(['open', 'discarded', 'openAfterFallback', 'discardedAfterFallback']));
    // CUTOVER | fallback, each × COMMITTED | COMMIT_FAILED.
    expect(terminal).toHaveLength(4);
  });

  test('replayed, each final path ends done with the output its path implies', () => {
    for (const p of terminal) {
      const events = p.steps.map((s) => s.event as UnitTargetEvent).filter((e) => (e.type as string) !== 'xstate.init');
      const r = drive(events);
      expect(r.status).toBe('done');
      expect(r.value).toBe(String(p.state.value));
      expect(r.output).toEqual({ opened: events.some((e) => e.type === 'COMMITTED'), fellBack: events.some((e) => e.type === AFTER_EVENT) });
      expect(r.log.includes('openDispatch')).toBe(r.value.startsWith('open'));
      expect(r.log.includes('discard')).toBe(r.value.startsWith('discarded'));
      expect(FALLBACK_STATES.has(r.value)).toBe(events.some((e) => e.type === AFTER_EVENT));
      expect(r.log.filter((a) => a === 'commitOwner')).toHaveLength(1);
    }
  });
});
