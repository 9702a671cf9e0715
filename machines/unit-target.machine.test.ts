import { createActor, SimulatedClock } from 'xstate';
import { getSimplePaths } from 'xstate/graph';
import { unitTargetMachine, type UnitTargetEvent, type UnitTargetOutput } from './unit-target.machine';

const CUTOVER_WAIT_MS = 1_000;
const ACTIONS = ['commitOwner', 'openDispatch', 'discard'] as const;
type ActionName = (typeof ACTIONS)[number];

/** The synthetic event of relayReady's cutover-wait delay; a replay maps it to clock.increment. */
const AFTER_EVENT = unitTargetMachine.states.relayReady!.after[0]!.eventType;
type PathEvent = UnitTargetEvent | { type: typeof AFTER_EVENT };

const EVENTS: readonly PathEvent[] = [
  { type: 'RESTORED' },
  { type: 'RESTORE_FAILED' },
  { type: 'ABORT' },
  { type: 'CUTOVER' },
  { type: 'COMMITTED' },
  { type: 'COMMIT_FAILED' },
  { type: AFTER_EVENT },
];

function drive(events: readonly PathEvent[]) {
  const log: ActionName[] = [];
  const spies = Object.fromEntries(ACTIONS.map((name) => [name, () => void log.push(name)])) as Record<ActionName, () => void>;
  const clock = new SimulatedClock();
  const actor = createActor(unitTargetMachine.provide({ actions: spies }), { input: { cutoverWaitMs: CUTOVER_WAIT_MS }, clock }).start();
  const states: string[] = [];
  actor.subscribe((s) => states.push(String(s.value)));
  for (const event of events) {
    if (event.type === AFTER_EVENT) clock.increment(CUTOVER_WAIT_MS);
    else actor.send(event as UnitTargetEvent);
  }
  const snapshot = actor.getSnapshot();
  return { log, states, clock, actor, value: String(snapshot.value), status: snapshot.status, output: snapshot.output as UnitTargetOutput | undefined };
}

test('the cutover-wait delay is the machine’s only delayed transition, on relayReady', () => {
  expect(AFTER_EVENT).toMatch(/^xstate\.after\./);
  for (const [key, node] of Object.entries(unitTargetMachine.states)) expect(node.after.length).toBe(key === 'relayReady' ? 1 : 0);
});

test('CUTOVER path: staging → relayReady → committing → open; not a fallback', () => {
  const r = drive([{ type: 'RESTORED' }, { type: 'CUTOVER' }, { type: 'COMMITTED' }]);
  expect(r.states).toEqual(['relayReady', 'committing', 'open']);
  expect(r.log).toEqual(['commitOwner', 'openDispatch']);
  expect(r.status).toBe('done');
  expect(r.output).toEqual({ opened: true, fellBack: false });
});

test('cutover arriving just before the wait ends: no fallback, and the cancelled delay never fires', () => {
  const r = drive([{ type: 'RESTORED' }]);
  r.clock.increment(CUTOVER_WAIT_MS - 1);
  expect(r.actor.getSnapshot().value).toBe('relayReady');
  r.actor.send({ type: 'CUTOVER' });
  r.clock.increment(CUTOVER_WAIT_MS);
  r.actor.send({ type: 'COMMITTED' });
  expect(r.actor.getSnapshot().output).toEqual({ opened: true, fellBack: false });
  expect(r.log.filter((a) => a === 'commitOwner')).toHaveLength(1);
});

test('cutover-wait fallback: no cutover for cutoverWaitMs → committing with fellBack true → open', () => {
  const r = drive([{ type: 'RESTORED' }]);
  r.clock.increment(CUTOVER_WAIT_MS - 1);
  expect(r.actor.getSnapshot().value).toBe('relayReady');
  r.clock.increment(1);
  expect(r.actor.getSnapshot().value).toBe('committing');
  expect(r.log).toEqual(['commitOwner']);
  // A late (retransmitted) cutover while committing changes nothing here.
  r.actor.send({ type: 'CUTOVER' });
  expect(r.actor.getSnapshot().value).toBe('committing');
  r.actor.send({ type: 'COMMITTED' });
  expect(r.actor.getSnapshot().output).toEqual({ opened: true, fellBack: true });
});

test('COMMIT_FAILED (restore validity over) → discarded, nothing opened', () => {
  const r = drive([{ type: 'RESTORED' }, { type: 'CUTOVER' }, { type: 'COMMIT_FAILED' }]);
  expect(r.value).toBe('discarded');
  expect(r.log).toEqual(['commitOwner', 'discard']);
  expect(r.output).toEqual({ opened: false, fellBack: false });
  const fb = drive([{ type: 'RESTORED' }, { type: AFTER_EVENT }, { type: 'COMMIT_FAILED' }]);
  expect(fb.output).toEqual({ opened: false, fellBack: true });
});

test.each(['ABORT', 'RESTORE_FAILED'] as const)('%s in staging → discarded without committing', (type) => {
  const r = drive([{ type }]);
  expect(r.value).toBe('discarded');
  expect(r.status).toBe('done');
  expect(r.log).toEqual(['discard']);
  expect(r.output).toEqual({ opened: false, fellBack: false });
});

test('ABORT after relay-ready is not accepted (the source crossed; only cutover or the fallback follow)', () => {
  const r = drive([{ type: 'RESTORED' }, { type: 'ABORT' }]);
  expect(r.value).toBe('relayReady');
  expect(r.actor.getSnapshot().can({ type: 'ABORT' })).toBe(false);
});

describe('every simple path (xstate/graph)', () => {
  const paths = getSimplePaths(unitTargetMachine, { input: { cutoverWaitMs: CUTOVER_WAIT_MS }, events: EVENTS as never });
  const terminal = paths.filter((p) => p.state.status === 'done');

  test('states that cannot move are exactly the final ones; both finals are reached', () => {
    for (const p of paths) {
      const moves = EVENTS.some((e) => p.state.can(e as never));
      expect(p.state.status === 'done').toBe(!moves);
    }
    expect(new Set(terminal.map((p) => String(p.state.value)))).toEqual(new Set(['open', 'discarded']));
    // staging: ABORT, RESTORE_FAILED; relayReady: CUTOVER | fallback, each × COMMITTED | COMMIT_FAILED.
    expect(terminal).toHaveLength(6);
  });

  test('replayed with a SimulatedClock, each final path ends done with the output its path implies', () => {
    for (const p of terminal) {
      const events = p.steps.map((s) => s.event as PathEvent).filter((e) => (e.type as string) !== 'xstate.init');
      const r = drive(events);
      expect(r.status).toBe('done');
      expect(r.value).toBe(String(p.state.value));
      expect(r.output).toEqual({
        opened: events.some((e) => e.type === 'COMMITTED'),
        fellBack: events.some((e) => e.type === AFTER_EVENT),
      });
      expect(r.log.includes('openDispatch')).toBe(r.value === 'open');
      expect(r.log.includes('discard')).toBe(r.value === 'discarded');
      expect(r.log.includes('commitOwner')).toBe(events.some((e) => e.type === 'CUTOVER' || e.type === AFTER_EVENT));
    }
  });
});
