import { SimulatedClock } from 'xstate';
import type { Clock } from './clock';
import { ExpiryQueue } from './expiry-queue';

/** A SimulatedClock that counts the timeouts currently armed on it. */
function countingClock() {
  const sim = new SimulatedClock();
  const live = new Set<unknown>();
  let armed = 0;
  let maxLive = 0;
  const clock: Clock = {
    now: () => sim.now(),
    setTimeout: (fn, ms) => {
      armed++;
      const handle = sim.setTimeout(() => {
        live.delete(handle);
        fn();
      }, ms);
      live.add(handle);
      maxLive = Math.max(maxLive, live.size);
      return handle;
    },
    clearTimeout: (handle) => {
      live.delete(handle);
      sim.clearTimeout(handle as number);
    },
  };
  return { sim, clock, stats: () => ({ live: live.size, maxLive, armed }) };
}

function queue(durationMs = 100) {
  const c = countingClock();
  const expired: [string, number][] = [];
  const q = new ExpiryQueue<string>(c.clock, durationMs, (value, at) => expired.push([value, at]));
  return { ...c, q, expired };
}

test('entries expire in insertion order, each durationMs after its push, with the expiry time', () => {
  const { sim, q, expired } = queue(100);
  q.push('a');
  sim.increment(10);
  q.push('b');
  sim.increment(10);
  q.push('c');
  expect(q.size).toBe(3);
  sim.increment(79); // t=99
  expect(expired).toEqual([]);
  sim.increment(1); // t=100
  expect(expired).toEqual([['a', 100]]);
  expect(q.size).toBe(2);
  expect([...q.values()]).toEqual(['b', 'c']);
  sim.increment(10);
  expect(expired).toEqual([['a', 100], ['b', 110]]);
  sim.increment(10);
  expect(expired).toEqual([['a', 100], ['b', 110], ['c', 120]]);
  expect(q.size).toBe(0);
  expect([...q.values()]).toEqual([]);
});

test('entries pushed at the same time expire together, in FIFO order', () => {
  const { sim, q, expired } = queue(50);
  for (const v of ['1', '2', '3']) q.push(v);
  sim.increment(50);
  expect(expired.map(([v]) => v)).toEqual(['1', '2', '3']);
});

test('one timer for the whole queue, however many entries it holds', () => {
  const { sim, q, expired, stats } = queue(1000);
  for (let i = 0; i < 5000; i++) {
    q.push(String(i));
    if (i % 10 === 9) sim.increment(1);
  }
  expect(stats().live).toBe(1);
  expect(stats().maxLive).toBe(1);
  expect(stats().armed).toBe(1); // pushes behind an armed head do not re-arm
  // Entry i was pushed at t = floor(i / 10). At t = 1100 the entries pushed up to t = 100 (i <= 1009) are gone,
  // in order, and the rest waits behind one timer.
  sim.increment(600);
  expect(expired.map(([v]) => Number(v))).toEqual(Array.from({ length: 1010 }, (_, i) => i));
  expect(q.size).toBe(5000 - 1010);
  expect(stats().live).toBe(1);
  sim.increment(1000);
  expect(expired).toHaveLength(5000);
  expect(expired.map(([v]) => Number(v))).toEqual(Array.from({ length: 5000 }, (_, i) => i));
  expect(stats().live).toBe(0);
  expect(stats().maxLive).toBe(1);
  expect(q.size).toBe(0);
});

test('clear() expires every entry exactly once, now, and cancels the timer', () => {
  const { sim, q, expired, stats } = queue(100);
  q.push('a');
  sim.increment(60);
  q.push('b');
  sim.increment(40); // a expires at 100
  q.push('c');
  expect(expired).toEqual([['a', 100]]);
  sim.increment(5);
  q.clear();
  expect(expired).toEqual([['a', 100], ['b', 105], ['c', 105]]);
  expect(q.size).toBe(0);
  expect(stats().live).toBe(0);
  sim.increment(10_000);
  expect(expired).toHaveLength(3);
  q.clear();
  expect(expired).toHaveLength(3);
});

test('the queue works again after clear()', () => {
  const { sim, q, expired } = queue(100);
  q.push('old');
  q.clear();
  q.push('new');
  sim.increment(100);
  expect(expired.map(([v]) => v)).toEqual(['old', 'new']);
});

test('clear() from inside an expiry callback expires the rest exactly once', () => {
  const c = countingClock();
  const expired: string[] = [];
  const q: ExpiryQueue<string> = new ExpiryQueue<string>(c.clock, 10, (v) => {
    expired.push(v);
    if (v === 'a') q.clear();
  });
  q.push('a');
  q.push('b');
  c.sim.increment(5);
  q.push('c');
  c.sim.increment(5);
  expect(expired).toEqual(['a', 'b', 'c']);
  c.sim.increment(100);
  expect(expired).toEqual(['a', 'b', 'c']);
});

test('a push from inside an expiry callback expires a full duration later', () => {
  const c = countingClock();
  const expired: [string, number][] = [];
  const q: ExpiryQueue<string> = new ExpiryQueue<string>(c.clock, 10, (v, at) => {
    expired.push([v, at]);
    if (v === 'a') q.push('again');
  });
  q.push('a');
  c.sim.increment(10);
  c.sim.increment(9);
  expect(expired).toEqual([['a', 10]]);
  c.sim.increment(1);
  expect(expired).toEqual([['a', 10], ['again', 20]]);
  expect(c.stats().live).toBe(0);
});

test('without a timer nothing is armed: due entries expire at expireDue(), in order, and the rest wait', () => {
  const c = countingClock();
  const expired: [string, number][] = [];
  const q = new ExpiryQueue<string>(c.clock, 100, (value, at) => expired.push([value, at]), { timer: false });
  q.push('a');
  c.sim.increment(50);
  q.push('b');
  c.sim.increment(60); // t=110: a is due, b is not
  expect(expired).toEqual([]);
  q.expireDue();
  expect(expired).toEqual([['a', 110]]);
  expect([...q.values()]).toEqual(['b']);
  c.sim.increment(1000);
  expect(expired).toEqual([['a', 110]]); // still no timer
  q.push('c');
  q.clear();
  expect(expired).toEqual([['a', 110], ['b', 1110], ['c', 1110]]);
  expect(c.stats().armed).toBe(0);
});
