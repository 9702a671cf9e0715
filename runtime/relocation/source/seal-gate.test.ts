import { SealGate } from './seal-gate';

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

  test('grows while units stop the source under the target, halves when they do not', () => {
    const gate = new SealGate({ targetStopMs: 20, initialWindow: 8, minWindow: 2, maxWindow: 64 });
    for (let i = 0; i < 8; i++) void acquire(gate);
    for (let i = 0; i < 2; i++) gate.release(2);
    expect(gate.size).toBe(10);
    for (let i = 0; i < 5; i++) gate.release(100);
    expect(gate.size).toBe(5);
    // One slow burst decreases once per window of completions, never below the minimum.
    for (let i = 0; i < 40; i++) {
      void acquire(gate);
      gate.release(100);
    }
    expect(gate.size).toBe(2);
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
