import { createActor } from 'xstate';
import { getSimplePaths } from 'xstate/graph';
import { unitTargetMachine, type UnitTargetEvent, type UnitTargetOutput } from './unit-target.machine';

const ACTIONS = ['commitOwner', 'openDispatch', 'discard', 'abandon'] as const;
type ActionName = (typeof ACTIONS)[number];

/** The cutover-wait fallback (§13) and the staging expiry (§11) are events from the coordinator's shared queues. */
const AFTER_EVENT = 'CUTOVER_WAIT_ENDED';
const EXPIRY_EVENT = 'STAGING_EXPIRED';
type PathEvent = UnitTargetEvent;

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
  const actor = createActor(unitTargetMachine.provide({ actions: spies })).start();
  const states: string[] = [];
  actor.subscribe((s) => states.push(String(s.value)));
  for (const event of events) actor.send(event);
  const snapshot = actor.getSnapshot();
  return { log, states, actor, value: String(snapshot.value), status: snapshot.status, output: snapshot.output as UnitTargetOutput | undefined };
}

test('the machine has no delayed transitions: its deadlines come as events from shared expiry queues', () => {
  for (const node of Object.values(unitTargetMachine.states)) expect(node.after).toHaveLength(0);
});

test('the hot path (RESTORED, CUTOVER, COMMITTED) runs no assign; only the cold timer transitions write context', () => {
  const assigning = (type: string) =>
    Object.values(unitTargetMachine.states)
      .flatMap((node) => node.transitions.get(type) ?? [])
      .flatMap((t) => t.actions)
      .filter((a) => typeof a === 'string' && a.startsWith('mark'));
  for (const type of ['RESTORED', 'CUTOVER', 'COMMITTED']) expect(assigning(type)).toEqual([]);
  expect(assigning(AFTER_EVENT)).toEqual(['markFallback']);
  expect(assigning(EXPIRY_EVENT)).toEqual(['markExpired']);
});

test('staging expires (restore validity over, §11) → abandoned, nothing committed or opened', () => {
  const r = drive([{ type: EXPIRY_EVENT }]);
  expect(r.value).toBe('abandoned');
  expect(r.log).toEqual(['abandon']);
  expect(r.output).toEqual({ opened: false, fellBack: false, expired: true });
});

test('a payload restored in time makes a later staging expiry a no-op', () => {
  const r = drive([{ type: 'RESTORED' }, { type: EXPIRY_EVENT }]);
  expect(r.log).not.toContain('abandon');
  expect(r.value).toBe('relayReady');
  expect(r.actor.getSnapshot().context.expired).toBe(false);
});

test('CUTOVER path: staging → relayReady → committing → open; not a fallback', () => {
  const r = drive([{ type: 'RESTORED' }, { type: 'CUTOVER' }, { type: 'COMMITTED' }]);
  expect(r.states).toEqual(['relayReady', 'committing', 'open']);
  expect(r.log).toEqual(['commitOwner', 'openDispatch']);
  expect(r.status).toBe('done');
  expect(r.output).toEqual({ opened: true, fellBack: false, expired: false });
});

test('cutover arriving before the wait ends: no fallback, and the late CUTOVER_WAIT_ENDED changes nothing', () => {
  const r = drive([{ type: 'RESTORED' }, { type: 'CUTOVER' }, { type: AFTER_EVENT }, { type: 'COMMITTED' }]);
  expect(r.output).toEqual({ opened: true, fellBack: false, expired: false });
  expect(r.log.filter((a) => a === 'commitOwner')).toHaveLength(1);
});

test('CUTOVER_WAIT_ENDED before staging ended is not accepted (the wait starts at relay-ready)', () => {
  const r = drive([{ type: AFTER_EVENT }]);
  expect(r.value).toBe('staging');
  expect(r.log).toEqual([]);
});

test('cutover-wait fallback: CUTOVER_WAIT_ENDED → committing with fellBack true → open', () => {
  const r = drive([{ type: 'RESTORED' }, { type: AFTER_EVENT }]);
  expect(r.value).toBe('committing');
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
  const paths = getSimplePaths(unitTargetMachine, { events: EVENTS as never });
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

  test('replayed, each final path ends done with the output its path implies', () => {
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
