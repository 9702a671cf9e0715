import { SimulatedClock } from 'xstate';
import { TimerTable } from './timers';
import { ArgumentError } from './errors';

/** A table on a simulated clock that records every fire as [time, name, seq]. */
function table(clock = new SimulatedClock()) {
  const fires: [number, string, number][] = [];
  const timers = new TimerTable(clock, { timerFired: (name, seq) => void fires.push([clock.now(), name, seq]) });
  return { clock, timers, fires, times: () => fires.map(([t, n]) => `${n}@${t}`) };
}

test('a one-shot timer fires once at its due time; its tick begins once and removes it', () => {
  const { clock, timers, fires } = table();
  timers.schedule('t', { dueMs: 100 });
  expect(timers.has('t')).toBe(true);
  clock.increment(99);
  expect(fires).toEqual([]);
  clock.increment(1);
  expect(fires.map(([t, n]) => [t, n])).toEqual([[100, 't']]);
  const seq = fires[0]![2];
  expect(timers.seqOf('t')).toBe(seq);
  expect(timers.beginTick('t', seq)).toBe(true);
  expect(timers.has('t')).toBe(false);
  expect(timers.beginTick('t', seq)).toBe(false);
  clock.increment(1000);
  expect(fires).toHaveLength(1);
});

test('dueMs 0 fires on the next clock turn', () => {
  const { clock, timers, times } = table();
  timers.schedule('now', { dueMs: 0 });
  clock.increment(0);
  expect(times()).toEqual(['now@0']);
});

test('cancel stops a timer before it fires; cancel of an unknown name returns false', () => {
  const { clock, timers, fires } = table();
  timers.schedule('t', { dueMs: 100 });
  expect(timers.cancel('t')).toBe(true);
  expect(timers.cancel('t')).toBe(false);
  expect(timers.cancel('never')).toBe(false);
  clock.increment(200);
  expect(fires).toEqual([]);
  expect(timers.size).toBe(0);
});

test('scheduling the same name replaces the registration: only the new one fires, with a new seq', () => {
  const { clock, timers, fires, times } = table();
  timers.schedule('t', { dueMs: 100 });
  const oldSeq = timers.seqOf('t')!;
  clock.increment(50);
  timers.schedule('t', { dueMs: 100 });
  const newSeq = timers.seqOf('t')!;
  expect(newSeq).not.toBe(oldSeq);
  clock.increment(60); // t=110: the old one would have fired at 100
  expect(fires).toEqual([]);
  clock.increment(40);
  expect(times()).toEqual(['t@150']);
  expect(fires[0]![2]).toBe(newSeq);
  expect(timers.names()).toEqual(['t']);
  expect(timers.size).toBe(1);
});

test('beginTick skips ticks of cancelled or replaced registrations', () => {
  const { clock, timers, fires } = table();
  timers.schedule('p', { dueMs: 10, periodMs: 10 });
  clock.increment(10);
  const queuedSeq = fires[0]![2];
  // The tick sits in the lane; the timer is replaced meanwhile.
  timers.schedule('p', { dueMs: 10, periodMs: 10 });
  expect(timers.beginTick('p', queuedSeq)).toBe(false);
  expect(timers.has('p')).toBe(true); // the replacement is untouched
  timers.schedule('c', { dueMs: 5 });
  clock.increment(5);
  const cSeq = fires.find(([, n]) => n === 'c')![2];
  timers.cancel('c');
  expect(timers.beginTick('c', cSeq)).toBe(false);
  expect(timers.beginTick('unknown', 1)).toBe(false);
});

test('periodic ticks coalesce while a tick is pending, and resume once it began', () => {
  const { clock, timers, fires, times } = table();
  timers.schedule('p', { dueMs: 100, periodMs: 100 });
  clock.increment(100);
  expect(times()).toEqual(['p@100']);
  // Not begun: the fires at 200 and 300 coalesce into the pending tick.
  clock.increment(100);
  clock.increment(100);
  expect(times()).toEqual(['p@100']);
  expect(timers.beginTick('p', fires[0]![2])).toBe(true);
  expect(timers.has('p')).toBe(true); // periodic registrations stay
  clock.increment(100);
  expect(times()).toEqual(['p@100', 'p@400']);
  expect(fires[1]![2]).toBe(fires[0]![2]); // same registration
  timers.beginTick('p', fires[1]![2]);
  clock.increment(100);
  expect(times()).toEqual(['p@100', 'p@400', 'p@500']);
});

test('a periodic timer that fell behind fires once, then at least one period later (no burst)', () => {
  const { clock, timers, fires, times } = table();
  timers.schedule('p', { dueMs: 100, periodMs: 100 });
  clock.increment(350);
  expect(times()).toEqual(['p@350']);
  timers.beginTick('p', fires[0]![2]);
  clock.increment(99);
  expect(fires).toHaveLength(1);
  clock.increment(1);
  expect(times()).toEqual(['p@350', 'p@450']);
});

test('schedule argument errors name their field', () => {
  const { timers } = table();
  const fieldOf = (f: () => void) => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(ArgumentError);
      return (e as ArgumentError).field;
    }
    throw new Error('did not throw');
  };
  expect(fieldOf(() => timers.schedule('', { dueMs: 1 }))).toBe('name');
  expect(fieldOf(() => timers.schedule(7 as never, { dueMs: 1 }))).toBe('name');
  expect(fieldOf(() => timers.schedule('t', null as never))).toBe('spec');
  expect(fieldOf(() => timers.schedule('t', { dueMs: -1 }))).toBe('spec.dueMs');
  expect(fieldOf(() => timers.schedule('t', { dueMs: Infinity }))).toBe('spec.dueMs');
  expect(fieldOf(() => timers.schedule('t', { dueMs: 1, periodMs: 0 }))).toBe('spec.periodMs');
  expect(fieldOf(() => timers.schedule('t', { dueMs: 1, periodMs: NaN }))).toBe('spec.periodMs');
  expect(timers.size).toBe(0);
});

test('a failed schedule leaves an existing registration of that name in place', () => {
  const { clock, timers, times } = table();
  timers.schedule('t', { dueMs: 100 });
  expect(() => timers.schedule('t', { dueMs: -5 })).toThrow(ArgumentError);
  clock.increment(100);
  expect(times()).toEqual(['t@100']);
});

test('freeze reports the time left (never an absolute time) and stops firing', () => {
  const { clock, timers, fires } = table();
  timers.schedule('once', { dueMs: 1000 });
  timers.schedule('tick', { dueMs: 250, periodMs: 500 });
  clock.increment(250);
  clock.increment(50); // t=300: tick fired at 250; its next fire is 750
  expect(fires.map(([t, n]) => `${n}@${t}`)).toEqual(['tick@250']);
  const regs = timers.freeze();
  expect(regs).toEqual([
    { name: 'once', remainingMs: 700, periodMs: undefined },
    { name: 'tick', remainingMs: 450, periodMs: 500 },
  ]);
  clock.increment(5000);
  expect(fires).toHaveLength(1);
  // Scheduling while frozen does not arm either.
  timers.schedule('late', { dueMs: 1 });
  clock.increment(10);
  expect(fires).toHaveLength(1);
});

test('freeze of an overdue timer reports 0 remaining', () => {
  const { clock, timers } = table();
  timers.schedule('t', { dueMs: 100 });
  timers.freeze();
  clock.increment(500);
  expect(timers.freeze()).toEqual([{ name: 't', remainingMs: 0, periodMs: undefined }]);
});

test('thaw re-arms every registration at its original due time (§11 source restore)', () => {
  const { clock, timers, times } = table();
  timers.schedule('a', { dueMs: 1000 });
  timers.schedule('b', { dueMs: 400 });
  clock.increment(300);
  timers.freeze();
  clock.increment(200); // t=500: b was due at 400 while frozen
  expect(times()).toEqual([]);
  timers.thaw();
  clock.increment(0);
  expect(times()).toEqual(['b@500']);
  clock.increment(499);
  expect(times()).toEqual(['b@500']);
  clock.increment(1);
  expect(times()).toEqual(['b@500', 'a@1000']);
});

test('install + start on another table (another clock) fires once at the remaining time', () => {
  const source = table();
  source.timers.schedule('once', { dueMs: 1000 });
  source.timers.schedule('tick', { dueMs: 200, periodMs: 300 });
  source.clock.increment(100);
  const regs = source.timers.freeze();

  const targetClock = new SimulatedClock();
  targetClock.set(1_000_000); // a different clock: only remaining times travel
  const target = table(targetClock);
  const seqs = target.timers.install(regs, new Set());
  expect([...seqs.keys()].sort()).toEqual(['once', 'tick']);
  expect(seqs.get('once')).toBe(target.timers.seqOf('once'));
  // Installed, not armed: nothing fires before dispatch opens (S3).
  targetClock.increment(2000);
  expect(target.fires).toEqual([]);
  // Re-install on a fresh target to measure from start().
  const target2 = table(new SimulatedClock());
  target2.timers.install(regs, new Set());
  target2.timers.start();
  target2.clock.increment(100);
  expect(target2.times()).toEqual(['tick@100']);
  for (let t = 100; t < 900; t += 100) {
    const last = target2.fires.at(-1)!;
    if (last[1] === 'tick') target2.timers.beginTick('tick', last[2]); // the lane ran the tick
    target2.clock.increment(100);
  }
  expect(target2.times()).toEqual(['tick@100', 'tick@400', 'tick@700', 'once@900']);
  expect(target2.fires.filter(([, n]) => n === 'once')).toHaveLength(1);
  target2.clock.increment(10_000);
  expect(target2.fires.filter(([, n]) => n === 'once')).toHaveLength(1);
  // The source table stays frozen: it never fires what it handed over.
  source.clock.increment(10_000);
  expect(source.fires).toEqual([]);
});

test('install with a pending tick: the first due fire coalesces into the moved tick', () => {
  const { clock, timers, fires } = table();
  const seqs = timers.install([{ name: 'p', remainingMs: 50, periodMs: 100 }], new Set(['p']));
  timers.start();
  clock.increment(50);
  expect(fires).toEqual([]); // the moved pending tick is still in the queue
  expect(timers.beginTick('p', seqs.get('p')!)).toBe(true);
  clock.increment(100);
  expect(fires.map(([t, n]) => `${n}@${t}`)).toEqual(['p@150']);
});

test('clear cancels everything', () => {
  const { clock, timers, fires } = table();
  timers.schedule('a', { dueMs: 10 });
  timers.schedule('b', { dueMs: 10, periodMs: 10 });
  timers.clear();
  expect(timers.size).toBe(0);
  expect(timers.names()).toEqual([]);
  clock.increment(100);
  expect(fires).toEqual([]);
});
