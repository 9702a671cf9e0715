import { SEAL_GATE_DEFAULTS, SealGate } from './seal-gate';

const flush = () => new Promise((resolve) => setImmediate(resolve));

/** How a unit asks (source/unit.ts): a free permit at once, else a place in the FIFO — as a promise, for the tests. */
const acquire = (gate: SealGate): Promise<void> =>
  gate.tryAcquire() ? Promise.resolve() : new Promise((resolve, reject) => gate.enqueue({ permitted: resolve, gateStopped: reject }));

describe('SealGate', () => {
  test('admits up to the window and the rest in arrival order as permits come back', async () => {
    const gate = new SealGate({ targetStopMs: 20, initialWindow: 2, minWindow: 1, maxWindow: 8 });
    const order: number[] = [];
    const all = [1, 2, 3, 4].map((n) => acquire(gate).then(() => order.push(n)));
    await flush();
    expect(order).toEqual([1, 2]);
    expect(gate.waiting).toBe(2);
    gate.release(); // a unit that restored: no stop time
    await flush();
    expect(order).toEqual([1, 2, 3]);
    gate.release(5);
    await Promise.all(all);
    expect(order).toEqual([1, 2, 3, 4]);
  });

  test('tryAcquire takes a free permit at once, never ahead of a waiter, and never after stop', async () => {
    const gate = new SealGate({ targetStopMs: 20, initialWindow: 1, minWindow: 1, maxWindow: 8 });
    expect(gate.tryAcquire()).toBe(true);
    expect(gate.tryAcquire()).toBe(false); // the window is full
    let waiterAdmitted = false;
    void acquire(gate).then(() => (waiterAdmitted = true));
    gate.release(); // the permit goes to the waiter (FIFO), not to a later tryAcquire
    expect(gate.tryAcquire()).toBe(false);
    await flush();
    expect(waiterAdmitted).toBe(true);
    gate.release();
    gate.stop(new Error('deadline'));
    expect(gate.tryAcquire()).toBe(false);
  });

  test('enqueue: waiters (the units themselves) are told their permits together, after the step that freed them', async () => {
    const gate = new SealGate({ targetStopMs: 20, initialWindow: 2, minWindow: 1, maxWindow: 8 });
    const told: string[] = [];
    const waiter = (name: string) => ({ permitted: () => told.push(`${name} permitted`), gateStopped: (e: Error) => told.push(`${name} ${e.message}`) });
    expect(gate.tryAcquire()).toBe(true);
    expect(gate.tryAcquire()).toBe(true);
    for (const name of ['a', 'b', 'c']) gate.enqueue(waiter(name));
    gate.release(); // no stop time: the window stays 2
    gate.release();
    expect(told).toEqual([]); // never inside release()
    await flush();
    expect(told).toEqual(['a permitted', 'b permitted']);
    gate.stop(new Error('stopped'));
    expect(told).toEqual(['a permitted', 'b permitted', 'c stopped']);
    gate.enqueue(waiter('d'));
    await flush();
    expect(told.at(-1)).toBe('d stopped');
  });

  test('grows by a quarter after a round under the target, shrinks by a quarter after a round over it', () => {
    const gate = new SealGate({ targetStopMs: 20, initialWindow: 8, minWindow: 2, maxWindow: 64 });
    const fill = () => {
      while (gate.tryAcquire());
    };
    fill(); // 8 sealed
    for (let i = 0; i < 4; i++) gate.release(2); // a round (half a window) under the target
    expect(gate.size).toBe(10);
    fill();
    for (let i = 0; i < 5; i++) gate.release(100); // a round over it
    expect(gate.size).toBe(8);
    // The 5 still sealed were admitted under the larger window: their stops do not shrink it again (deciding on
    // every completion collapsed a large window to its minimum within one batched reply).
    for (let i = 0; i < 5; i++) gate.release(100);
    expect(gate.size).toBe(8);
    fill();
    for (let i = 0; i < 4; i++) gate.release(100); // units admitted after the decrease, still over: again
    expect(gate.size).toBe(6);
    // Sustained, it goes down round by round, never below the minimum.
    for (let round = 0; round < 20; round++) {
      fill();
      for (let i = gate.sealed; i > 0; i--) gate.release(100);
    }
    expect(gate.size).toBe(2);
  });

  test('a round with a few units over the target (an eighth or fewer) neither grows nor shrinks the window', () => {
    const gate = new SealGate({ targetStopMs: 20, initialWindow: 16, minWindow: 2, maxWindow: 64 });
    while (gate.tryAcquire());
    for (let i = 0; i < 8; i++) gate.release(i === 7 ? 100 : 2);
    expect(gate.size).toBe(16);
    for (let i = 0; i < 8; i++) gate.release(i >= 6 ? 100 : 2); // a quarter over: shrinks
    expect(gate.size).toBe(12);
  });

  test('a stop time that is the units\' own base latency is not read as queueing', () => {
    const gate = new SealGate({ targetStopMs: 20, initialWindow: 8, minWindow: 2, maxWindow: 64 });
    // Every unit needs ~30 ms of round trips on this link, whatever the window: the window must not collapse.
    for (let i = 0; i < 40; i++) {
      void acquire(gate);
      gate.release(30 + (i % 3));
    }
    expect(gate.size).toBeGreaterThanOrEqual(8);
  });

  test('by default 128 units at once until 2,048 stops show the tail has room, then more, up to the bound', async () => {
    const gate = new SealGate();
    expect([SEAL_GATE_DEFAULTS.softWindow, SEAL_GATE_DEFAULTS.maxWindow]).toEqual([128, 256]);
    let sealed = 0;
    let most = 0;
    // Units that each cut over in 1 ms: every round stays under the target, so the window only grows.
    const run = (count: number) =>
      Promise.all(
        Array.from({ length: count }, () =>
          acquire(gate).then(async () => {
            most = Math.max(most, ++sealed);
            await flush();
            sealed--;
            gate.release(1);
          }),
        ),
      );
    await run(2000);
    expect(gate.size).toBe(128); // fewer stops than the tail needs: the soft window holds
    expect(most).toBe(128);
    await run(4000);
    expect(gate.size).toBe(256);
    expect(most).toBe(256);
  });

  /**
   * Fills the window and gives every permit back with the stop `stopMs(k)` (k counts over every call), `rounds`
   * times; answers the largest window seen on the way.
   */
  const counter = { k: 0 };
  const cycle = (gate: SealGate, rounds: number, stopMs: (k: number) => number): number => {
    let largest = gate.size;
    for (let r = 0; r < rounds; r++) {
      while (gate.tryAcquire());
      for (let i = gate.sealed; i > 0; i--) {
        gate.release(stopMs(counter.k++));
        largest = Math.max(largest, gate.size);
      }
    }
    return largest;
  };
  const fast = () => 2;
  /** One stop in 16 over the target: the p99 goes over it, an eighth of a large round does not. */
  const someSlow = (k: number) => (k % 16 === 0 ? 100 : 2);

  test('past the soft window it grows only while the recent p99 stays under the target, and falls back at once when not', () => {
    const gate = new SealGate({ targetStopMs: 20, initialWindow: 8, minWindow: 2, softWindow: 8, maxWindow: 32 });
    expect(cycle(gate, 200, fast)).toBe(8); // 1,600 stops: too few to tell the tail (the ring holds 2,048)
    cycle(gate, 100, fast);
    expect(gate.size).toBe(32);
    // At 32 a round is 16 stops, one of them slow: the round rule keeps the window; the tail takes it back to 8
    // once more than 1% of the last 2,048 stops were slow (~340 stops in).
    expect(cycle(gate, 9, someSlow)).toBe(32);
    expect(gate.size).toBe(32);
    cycle(gate, 3, someSlow);
    expect(gate.size).toBe(8);
    // While the tail stays over the target the window never goes past the soft bound (below it the round rule
    // decides, as without one), not until the slow stops have left the ring.
    expect(cycle(gate, 200, someSlow)).toBeLessThanOrEqual(8);
    expect(cycle(gate, 100, fast)).toBeLessThanOrEqual(8);
    cycle(gate, 300, fast);
    expect(gate.size).toBe(32);
  });

  test('it goes past the soft window only with a tail under four fifths of the target, and stays past it up to the target', () => {
    const gate = new SealGate({ targetStopMs: 20, initialWindow: 8, minWindow: 2, softWindow: 8, maxWindow: 32 });
    /** One stop in 16 at 18 ms: under the target, over four fifths of it. */
    const nearTarget = (k: number) => (k % 16 === 0 ? 18 : 2);
    expect(cycle(gate, 600, nearTarget)).toBe(8); // a tail that hovers near the target keeps the soft window
    cycle(gate, 600, fast);
    expect(gate.size).toBe(32);
    expect(cycle(gate, 300, nearTarget)).toBe(32); // once past it, a tail under the target does not take it back
    expect(gate.size).toBe(32);
  });

  test('after each fall back it waits twice as many stops as the last time before it goes past the soft window again', () => {
    const gate = new SealGate({ targetStopMs: 20, initialWindow: 8, minWindow: 2, softWindow: 8, maxWindow: 32 });
    cycle(gate, 300, fast);
    expect(gate.size).toBe(32);
    const fallBack = () => {
      for (let n = 0; gate.size > 8 && n < 100; n++) cycle(gate, 1, someSlow);
      expect(gate.size).toBe(8);
    };
    fallBack();
    cycle(gate, 300, fast); // 2,400 stops: the slow ones left the ring, and the first wait (2,048 stops) is over
    expect(gate.size).toBe(32);
    fallBack();
    cycle(gate, 300, fast); // the ring is clean again, but the second wait is 4,096 stops
    expect(gate.size).toBe(8);
    cycle(gate, 250, fast);
    expect(gate.size).toBe(32);
  });

  /** One stop in 32 at 60 ms (3%: over the p99, far under the round rule's eighth), the rest 5 ms. */
  const stalls = (k: number) => (k % 32 === 0 ? 60 : 5);

  test('by default a recent p99 over 40 ms shrinks the window by a quarter a time, to half the soft window at most', () => {
    const gate = new SealGate({ ...SEAL_GATE_DEFAULTS, initialWindow: 128 });
    expect(SEAL_GATE_DEFAULTS.tailLimitMs).toBe(40);
    cycle(gate, 7, stalls); // 896 stops: fewer than the 1,024 the tail limit decides on
    expect(gate.size).toBe(128);
    cycle(gate, 1, stalls);
    expect(gate.size).toBe(96);
    // The ring started again: the next cut needs 1,024 more stops, and the window never goes under 64.
    cycle(gate, 8, stalls);
    expect(gate.size).toBe(96);
    cycle(gate, 40, stalls);
    expect(gate.size).toBe(64);
  });

  test('after the tail limit cut it the window grows only once enough later stops show a tail under 4/5 of the limit', () => {
    const gate = new SealGate({ ...SEAL_GATE_DEFAULTS, initialWindow: 128 });
    cycle(gate, 8, stalls);
    expect(gate.size).toBe(96);
    // 12 stops at 35 ms (under the limit: no cut; over 4/5 of it) among the next 192, three a round (the round rule
    // neither shrinks nor grows), then only 5 ms: rounds with nothing over the target, which alone would grow it.
    let j = 0;
    const after = () => (++j <= 192 && j % 16 === 0 ? 35 : 5);
    expect(cycle(gate, 10, after)).toBe(96); // 960 stops: too few to tell, then 12 of 1,024 over 32 ms
    cycle(gate, 30, after); // from 1,200 stops the 12 are 1% or less
    expect(gate.size).toBeGreaterThanOrEqual(128);
  });

  test('the tail limit is never under four times the shortest stop seen (a slow link is not a stall)', () => {
    const gate = new SealGate({ ...SEAL_GATE_DEFAULTS, initialWindow: 128 });
    // Every unit's own round trips take 30–45 ms here: p99 45 ms is the link, not queueing behind a stall.
    cycle(gate, 40, (k) => 30 + (k % 16));
    expect(gate.size).toBe(128);
  });

  test('a stopped gate rejects every waiter and every later wait with the reason; permits still come back', async () => {
    const gate = new SealGate({ targetStopMs: 20, initialWindow: 1, minWindow: 1, maxWindow: 4 });
    await acquire(gate);
    const waiting = [acquire(gate), acquire(gate)];
    gate.stop(new Error('deadline'));
    for (const w of waiting) await expect(w).rejects.toThrow('deadline');
    await expect(acquire(gate)).rejects.toThrow('deadline');
    expect(gate.waiting).toBe(0);
    gate.release();
    expect(gate.sealed).toBe(0);
  });
});
