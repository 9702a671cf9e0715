/**
 * One turn at a time per lane. A SpotWide Spot and its members share one lane; a PerActor Spot has its
 * own lane and each member Actor another; Entry Spot Actors and Instance Spots have their own.
 *
 * A lane can be paused at a turn boundary (relocation seal, membership change): `pause()` resolves once the
 * running turn ended, and items that arrive meanwhile wait in order.
 */
import type { ObjectKey } from './keys';
import type { Envelope } from './envelope';

export type WorkItem =
  /** A message for `to`; moves with a relocation unit. */
  | { readonly k: 'msg'; readonly to: ObjectKey; readonly env: Envelope }
  /** A pending timer tick (§12); `seq` identifies the registration it belongs to. */
  | { readonly k: 'tick'; readonly to: ObjectKey; readonly name: string; readonly seq: number }
  /** Local control (membership callbacks, closing); never moves — preflight waits for it (§4). */
  | { readonly k: 'ctl'; readonly to: ObjectKey; readonly run: () => unknown };

export class Lane {
  private queue: WorkItem[] = [];
  private head = 0;
  private running = false;
  private pumping = false;
  private pauses = 0;
  private posted = false;
  /** Waiters, allocated on first use: most lanes never have one (issue [6/10] RSS, one lane per Actor). */
  private turnEnd: (() => void)[] | undefined;
  private idle: (() => void)[] | undefined;

  constructor(private readonly execute: (item: WorkItem) => unknown) {}

  get length(): number {
    return this.queue.length - this.head;
  }

  /** A turn is running (sync or async). */
  get busy(): boolean {
    return this.running || this.pumping;
  }

  push(item: WorkItem): void {
    this.queue.push(item);
    this.pump();
  }

  /**
   * Enqueues without running: the turn starts in a later microtask, never inside the caller's stack — so a
   * handler's local send does not run the receiver inside its own turn (DESIGN.md: local delivery is asynchronous
   * and in order). Order with push() is queue order.
   */
  post(item: WorkItem): void {
    this.queue.push(item);
    if (this.posted) return;
    this.posted = true;
    queueMicrotask((this.pumpPosted ??= () => {
      this.posted = false;
      this.pump();
    }));
  }

  /** Callbacks bound on first use (one lane per Actor; most never post or run an async turn). */
  private pumpPosted: (() => void) | undefined;
  private afterAsyncTurn: (() => void) | undefined;

  /** Puts items back in front, in their order (§11: restored to the source queue in arrival order). */
  unshift(items: readonly WorkItem[]): void {
    if (items.length === 0) return;
    this.queue = [...items, ...this.queue.slice(this.head)];
    this.head = 0;
    this.pump();
  }

  /** Stops dispatch after the running turn; resolves at that turn boundary. Pauses nest. */
  pause(): Promise<void> {
    this.pauses++;
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve) => (this.turnEnd ??= []).push(resolve));
  }

  /**
   * pause() with a callback: `atBoundary` runs at once when no turn is running (no promise, no microtask: a
   * relocation seals thousands of idle lanes in one step, issue [6/10]), else in a microtask after the running turn
   * ends, as pause() resolves — never inside the lane's own bookkeeping.
   */
  pauseThen(atBoundary: () => void): void {
    this.pauses++;
    if (!this.busy) return atBoundary();
    (this.turnEnd ??= []).push(() => queueMicrotask(atBoundary));
  }

  resume(): void {
    if (this.pauses === 0) return;
    this.pauses--;
    this.pump();
  }

  get paused(): boolean {
    return this.pauses > 0;
  }

  /** Removes and returns the unexecuted items that `select` accepts, keeping the others in order. */
  take(select: (item: WorkItem) => boolean = () => true): WorkItem[] {
    const taken: WorkItem[] = [];
    const kept: WorkItem[] = [];
    for (let i = this.head; i < this.queue.length; i++) {
      const item = this.queue[i]!;
      (select(item) ? taken : kept).push(item);
    }
    this.queue = kept;
    this.head = 0;
    return taken;
  }

  /** Resolves when nothing is queued or running (paused lanes with queued work are not idle). */
  whenIdle(): Promise<void> {
    if (!this.running && this.length === 0) return Promise.resolve();
    return new Promise((resolve) => (this.idle ??= []).push(resolve));
  }

  private pump(): void {
    // Re-entrant pushes from inside a turn only enqueue: one turn at a time.
    if (this.running || this.pumping) return;
    this.pumping = true;
    try {
      while (this.pauses === 0 && this.head < this.queue.length) {
        const item = this.queue[this.head]!;
        this.queue[this.head++] = undefined as unknown as WorkItem;
        if (this.head > 1024 && this.head * 2 > this.queue.length) {
          this.queue = this.queue.slice(this.head);
          this.head = 0;
        }
        let result: unknown;
        try {
          result = this.execute(item);
        } catch {
          // execute() reports handler failures itself; a lane never stops on one.
          result = undefined;
        }
        if (isThenable(result)) {
          this.running = true;
          const after = (this.afterAsyncTurn ??= () => {
            this.running = false;
            this.settle();
            this.pump();
          });
          result.then(after, after);
          return;
        }
        this.releaseTurnWaiters();
      }
    } finally {
      this.pumping = false;
    }
    this.settle();
  }

  private releaseTurnWaiters(): void {
    const waiters = this.turnEnd;
    if (!waiters || waiters.length === 0) return;
    this.turnEnd = undefined;
    for (const w of waiters) w();
  }

  private settle(): void {
    if (this.running) return;
    this.releaseTurnWaiters();
    if (this.length === 0 && this.idle?.length) {
      const waiters = this.idle;
      this.idle = undefined;
      for (const w of waiters) w();
    }
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
