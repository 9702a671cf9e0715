import { createActor, SimulatedClock } from 'xstate';
import { getSimplePaths } from 'xstate/graph';
import { unitTargetMachine, type UnitTargetEvent, type UnitTargetOutput } from './unit-target.machine';

const CUTOVER_WAIT_MS = 1_000;
const STAGING_VALIDITY_MS = 5_000;
const INPUT = { cutoverWaitMs: CUTOVER_WAIT_MS, stagingValidityMs: STAGING_VALIDITY_MS };
const ACTIONS = ['commitOwner', 'openDispatch', 'discard', 'abandon'] as const;
type ActionName = (typeof ACTIONS)[number];

/** The synthetic event of relayReady's cutover-wait delay; a replay maps it to clock.increment. */
const AFTER_EVENT = unitTargetMachine.states.relayReady!.after[0]!.eventType;
/** The synthetic event of staging's expiry (restore validity, §11). */
const EXPIRY_EVENT = unitTargetMachine.states.staging!.after[0]!.eventType;
type PathEvent = UnitTargetEvent | { type: typeof AFTER_EVENT } | { type: typeof EXPIRY_EVENT };

const EVENTS: readonly PathEvent[] = [
  { type: 'RESTORED' },
  { type: 'RESTORE_FAILED' },
  { type: 'ABORT' },
  { type: 'CUTOVER' },
  { type: 'COMMITTED' },
  { type: 'COMMIT_FAILED' },
  { type: AFTER_EVENT },
  { type: EXPIRY_EVENT },
];

function drive(events: readonly PathEvent[]) {
  const log: ActionName[] = [];
  const spies = Object.fromEntries(ACTIONS.map((name) => [name, () => void log.push(name)])) as Record<ActionName, () => void>;
  const clock = new SimulatedClock();
  const actor = createActor(unitTargetMachine.provide({ actions: spies }), { input: INPUT, clock }).start();
  const states: string[] = [];
  actor.subscribe((s) => states.push(String(s.value)));
  for (const event of events) {
    if (event.type === AFTER_EVENT) clock.increment(CUTOVER_WAIT_MS);
    else if (event.type === EXPIRY_EVENT) clock.increment(STAGING_VALIDITY_MS);
    else actor.send(event as UnitTargetEvent);
  }
  const snapshot = actor.getSnapshot();
  return { log, states, clock, actor, value: String(snapshot.value), status: snapshot.status, output: snapshot.output as UnitTargetOutput | undefined };
}

test('the delayed transitions are exactly the cutover wait on relayReady and the staging expiry', () => {
  expect(AFTER_EVENT).toMatch(/^xstate\.after\./);
  expect(EXPIRY_EVENT).toMatch(/^xstate\.after\./);
  for (const [key, node] of Object.entries(unitTargetMachine.states)) expect(node.after.length).toBe(key === 'relayReady' || key === 'staging' ? 1 : 0);
});

test('staging expires after restore validity → abandoned, nothing committed or opened (§11)', () => {
  const r = drive([]);
  r.clock.increment(STAGING_VALIDITY_MS - 1);
  expect(r.actor.getSnapshot().value).toBe('staging');
  r.clock.increment(1);
  const snapshot = r.actor.getSnapshot();
  expect(snapshot.value).toBe('abandoned');
  expect(r.log).toEqual(['abandon']);
  expect(snapshot.output).toEqual({ opened: false, fellBack: false, expired: true });
});

test('a payload restored in time cancels the staging expiry', () => {
  const r = drive([{ type: 'RESTORED' }]);
  r.clock.increment(STAGING_VALIDITY_MS);
  expect(r.log).not.toContain('abandon');
  expect(r.actor.getSnapshot().value).toBe('committing'); // the cutover-wait fallback, not an expiry
});

test('CUTOVER path: staging → relayReady → committing → open; not a fallback', () => {
  const r = drive([{ type: 'RESTORED' }, { type: 'CUTOVER' }, { type: 'COMMITTED' }]);
  expect(r.states).toEqual(['relayReady', 'committing', 'open']);
  expect(r.log).toEqual(['commitOwner', 'openDispatch']);
  expect(r.status).toBe('done');
  expect(r.output).toEqual({ opened: true, fellBack: false, expired: false });
});

test('cutover arriving just before the wait ends: no fallback, and the cancelled delay never fires', () => {
  const r = drive([{ type: 'RESTORED' }]);
  r.clock.increment(CUTOVER_WAIT_MS - 1);
  expect(r.actor.getSnapshot().value).toBe('relayReady');
  r.actor.send({ type: 'CUTOVER' });
  r.clock.increment(CUTOVER_WAIT_MS);
  r.actor.send({ type: 'COMMITTED' });
  expect(r.actor.getSnapshot().output).toEqual({ opened: true, fellBack: false, expired: false });
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
  expect(r.actor.getSnapshot().output).toEqual({ opened: true, fellBack: true, expired: false });
});

test('COMMIT_FAILED (restore validity over) → discarded, nothing opened', () => {
  const r = drive([{ type: 'RESTORED' }, { type: 'CUTOVER' }, { type: 'COMMIT_FAILED' }]);
  expect(r.value).toBe('discarded');
  expect(r.log).toEqual(['commitOwner', 'discard']);
  expect(r.output).toEqual({ opened: false, fellBack: false, expired: false });
  const fb = drive([{ type: 'RESTORED' }, { type: AFTER_EVENT }, { type: 'COMMIT_FAILED' }]);
  expect(fb.output).toEqual({ opened: false, fellBack: true, expired: false });
});

test.each(['ABORT', 'RESTORE_FAILED'] as const)('%s in staging → abandoned without committing', (type) => {
  const r = drive([{ type }]);
  expect(r.value).toBe('abandoned');
  expect(r.status).toBe('done');
  expect(r.log).toEqual(['abandon']);
  expect(r.output).toEqual({ opened: false, fellBack: false, expired: false });
});

test('ABORT after relay-ready is not accepted (the source crossed; only cutover or the fallback follow)', () => {
  const r = drive([{ type: 'RESTORED' }, { type: 'ABORT' }]);
  expect(r.value).toBe('relayReady');
  expect(r.actor.getSnapshot().can({ type: 'ABORT' })).toBe(false);
});

describe('every simple path (xstate/graph)', () => {
  const paths = getSimplePaths(unitTargetMachine, { input: INPUT, events: EVENTS as never });
  const terminal = paths.filter((p) => p.state.status === 'done');

  test('states that cannot move are exactly the final ones; every final is reached', () => {
    for (const p of paths) {
      const moves = EVENTS.some((e) => p.state.can(e as never));
      expect(p.state.status === 'done').toBe(!moves);
    }
    expect(new Set(terminal.map((p) => String(p.state.value)))).toEqual(new Set(['open', 'discarded', 'abandoned']));
    // staging: ABORT, RESTORE_FAILED, expiry; relayReady: CUTOVER | fallback, each × COMMITTED | COMMIT_FAILED.
    expect(terminal).toHaveLength(7);
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
        expired: events.some((e) => e.type === EXPIRY_EVENT),
      });
      expect(r.log.includes('openDispatch')).toBe(r.value === 'open');
      expect(r.log.includes('discard')).toBe(r.value === 'discarded');
      expect(r.log.includes('abandon')).toBe(r.value === 'abandoned');
      expect(r.log.includes('commitOwner')).toBe(events.some((e) => e.type === 'CUTOVER' || e.type === AFTER_EVENT));
    }
  });
});
