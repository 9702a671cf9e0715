/**
 * In-flight payload budget of one peer connection (§7: paces how much moves concurrently; "when the budget is full,
 * the next unit waits before its source admission seal is applied"). Waiting never fails for lack of budget; it
 * ends only by grant, by the caller's abort, or by close.
 *
 * Rules:
 * - FIFO: a waiter is granted only when every earlier waiter was, so a large request is not starved by small ones.
 * - Lease growth (BudgetLease.grow) is queued ahead of fresh acquisitions: a unit that already holds budget and
 *   needs more is finishing work that frees budget, while a new acquisition only starts more.
 * - A request larger than the whole budget is charged at the budget's capacity (it waits for an empty budget and
 *   then goes alone), so no payload is refused for its size (§7 "reaching a limit doesn't fail a relocation").
 *   lease.bytes reports the requested bytes; the charge is min(requested, capacity).
 * - release() is idempotent; it also rejects a pending grow of that lease.
 */
import { abortError } from './errors';
import type { BudgetLease } from './types';

interface Waiter {
  readonly lease: Lease;
  /** Bytes to add to the charge when granted. */
  readonly delta: number;
  readonly requested: number;
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
  readonly cleanup: () => void;
}

class Lease implements BudgetLease {
  bytes: number;
  charged = 0;
  released = false;
  constructor(
    private readonly budget: PayloadBudget,
    requested: number,
  ) {
    this.bytes = requested;
  }
  grow(extra: number, signal?: AbortSignal): Promise<void> {
    checkBytes(extra, 'grow(extra)');
    return this.budget.grow(this, extra, signal);
  }
  release(): void {
    this.budget.release(this);
  }
}

function checkBytes(bytes: number, what: string): void {
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`${what} must be a non-negative safe integer, got ${bytes}`);
}

export class PayloadBudget {
  private used = 0;
  private readonly grows: Waiter[] = [];
  private readonly acquires: Waiter[] = [];
  private closedWith: (() => Error) | undefined;

  constructor(readonly capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError(`inFlightPayloadBudgetBytes must be a positive safe integer, got ${capacity}`);
  }

  /** Bytes currently charged (tests, diagnostics). */
  get inUse(): number {
    return this.used;
  }
  get waiting(): number {
    return this.grows.length + this.acquires.length;
  }

  acquire(bytes: number, signal?: AbortSignal): Promise<BudgetLease> {
    checkBytes(bytes, 'acquireBudget(bytes)');
    const lease = new Lease(this, 0);
    return this.enqueue(this.acquires, lease, Math.min(bytes, this.capacity), bytes, signal, 'acquireBudget').then(() => lease);
  }

  /**
   * A lease at once when the bytes fit and nobody waits ahead (FIFO holds), else undefined (then `acquire`). No
   * promise: a relocation asks for budget for every unit of a batch in one step (issue [6/10]).
   */
  tryAcquire(bytes: number): BudgetLease | undefined {
    checkBytes(bytes, 'tryAcquireBudget(bytes)');
    const charge = Math.min(bytes, this.capacity);
    if (this.closedWith || this.grows.length > 0 || this.acquires.length > 0 || this.used + charge > this.capacity) return undefined;
    const lease = new Lease(this, bytes);
    this.used += charge;
    lease.charged = charge;
    return lease;
  }

  grow(lease: Lease, extra: number, signal?: AbortSignal): Promise<void> {
    if (lease.released) return Promise.reject(new Error('BudgetLease.grow: the lease was already released'));
    const requested = lease.bytes + extra;
    const delta = Math.min(requested, this.capacity) - lease.charged;
    return this.enqueue(this.grows, lease, delta, requested, signal, 'BudgetLease.grow');
  }

  release(lease: Lease): void {
    if (lease.released) return;
    lease.released = true;
    this.used -= lease.charged;
    lease.charged = 0;
    for (let i = this.grows.length - 1; i >= 0; i--) {
      const w = this.grows[i]!;
      if (w.lease === lease) {
        this.grows.splice(i, 1);
        w.cleanup();
        w.reject(new Error('BudgetLease.grow: the lease was released while growing'));
      }
    }
    this.pump();
  }

  /** Rejects every waiter and every later call with `error()` (peer gone for good, or transport closed). */
  close(error: () => Error): void {
    if (this.closedWith) return;
    this.closedWith = error;
    for (const w of [...this.grows.splice(0), ...this.acquires.splice(0)]) {
      w.cleanup();
      w.reject(error());
    }
  }

  private enqueue(queue: Waiter[], lease: Lease, delta: number, requested: number, signal: AbortSignal | undefined, what: string): Promise<void> {
    if (this.closedWith) return Promise.reject(this.closedWith());
    if (signal?.aborted) return Promise.reject(abortError(signal, what));
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        const i = queue.indexOf(waiter);
        if (i < 0) return;
        queue.splice(i, 1);
        reject(abortError(signal, what));
        this.pump(); // a large waiter leaving the head may unblock smaller ones behind it
      };
      const waiter: Waiter = { lease, delta, requested, resolve, reject, cleanup: () => signal?.removeEventListener('abort', onAbort) };
      signal?.addEventListener('abort', onAbort, { once: true });
      queue.push(waiter);
      this.pump();
    });
  }

  private pump(): void {
    for (;;) {
      const queue = this.grows.length > 0 ? this.grows : this.acquires;
      const head = queue[0];
      if (!head || this.used + head.delta > this.capacity) return;
      queue.shift();
      head.cleanup();
      this.used += head.delta;
      head.lease.charged += head.delta;
      head.lease.bytes = head.requested;
      head.resolve();
    }
  }
}
