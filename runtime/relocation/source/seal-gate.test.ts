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

  test('by default no more than 128 units are sealed at once, however fast they complete', async () => {
    const gate = new SealGate();
    expect(SEAL_GATE_DEFAULTS.maxWindow).toBe(128);
    let sealed = 0;
    let most = 0;
    // A thousand units that each cut over in 1 ms: every round stays under the target, so the window only grows.
    const units = Array.from({ length: 1000 }, () =>
      acquire(gate).then(async () => {
        most = Math.max(most, ++sealed);
        await flush();
        sealed--;
        gate.release(1);
      }),
    );
    await Promise.all(units);
    expect(gate.size).toBe(128);
    expect(most).toBe(128);
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
