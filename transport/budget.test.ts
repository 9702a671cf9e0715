import { PayloadBudget } from './budget';

describe('PayloadBudget', () => {
  it('caps a request larger than the budget at the budget and serves it when the budget is empty', async () => {
    const b = new PayloadBudget(100);
    const small = await b.acquire(10);
    let big = false;
    const p = b.acquire(1000).then((l) => ((big = true), l));
    await new Promise((r) => setImmediate(r));
    expect(big).toBe(false);
    small.release();
    const lease = await p;
    expect([lease.bytes, b.inUse]).toEqual([1000, 100]);
    lease.release();
    expect(b.inUse).toBe(0);
  });

  it('tryAcquire: a lease at once when the bytes fit and nobody waits ahead; never ahead of a waiter; none after close', async () => {
    const b = new PayloadBudget(100);
    const first = b.tryAcquire(60)!;
    expect([first.bytes, b.inUse]).toEqual([60, 60]);
    expect(b.tryAcquire(50)).toBeUndefined(); // does not fit
    let waiterGranted = false;
    const waiter = b.acquire(50).then((l) => ((waiterGranted = true), l));
    expect(b.tryAcquire(10)).toBeUndefined(); // fits, but a waiter is ahead (FIFO)
    first.release();
    const lease = await waiter;
    expect(waiterGranted).toBe(true);
    expect(b.tryAcquire(1000)).toBeUndefined(); // charged at the capacity: waits for an empty budget
    lease.release();
    const whole = b.tryAcquire(1000)!;
    expect([whole.bytes, b.inUse]).toEqual([1000, 100]);
    whole.release();
    b.close(() => new Error('closed'));
    expect(b.tryAcquire(1)).toBeUndefined();
    expect(() => b.tryAcquire(-1)).toThrow(RangeError);
  });

  it('grow is served before fresh acquisitions; release rejects a pending grow', async () => {
    const b = new PayloadBudget(100);
    const l1 = await b.acquire(60);
    const l2 = await b.acquire(40);
    const order: string[] = [];
    const fresh = b.acquire(30).then(() => order.push('fresh'));
    const grow = l1.grow(30).then(() => order.push('grow'));
    l2.release();
    await Promise.all([grow, Promise.resolve()]);
    expect(order).toEqual(['grow']);
    l1.release();
    await fresh;
    expect(order).toEqual(['grow', 'fresh']);
    const b2 = new PayloadBudget(10);
    const full = await b2.acquire(10);
    const l3 = await b2.acquire(0);
    const pending = l3.grow(5);
    l3.release();
    await expect(pending).rejects.toThrow(/released/);
    full.release();
  });

  it('close rejects every waiter and later calls', async () => {
    const b = new PayloadBudget(10);
    await b.acquire(10);
    const w = b.acquire(1);
    b.close(() => new Error('closed'));
    await expect(w).rejects.toThrow('closed');
    await expect(b.acquire(1)).rejects.toThrow('closed');
    expect(() => b.acquire(-1)).toThrow(RangeError);
  });
});
