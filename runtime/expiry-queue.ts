/**
 * Entries that expire after one fixed duration, in insertion order, behind a single timer. Message Follow
 * routes (S1 → S4) and cutover retransmission copies (S1 + cutover wait) both use it, so their cost per unit
 * is an array push, not a timer or a machine state per unit (DESIGN.md measured traps). Without a timer
 * (`{ timer: false }`) entries expire when the owner calls `expireDue()`: the router's moved-to hints, dropped at
 * each S4, which must not keep a process alive for restoreValidityMs after its last move.
 */
import type { Clock } from './clock';

export interface ExpiryQueueOptions {
  /** false: no timer; entries expire only at `expireDue()` (and `clear()`). Default true. */
  readonly timer?: boolean;
}

export class ExpiryQueue<T> {
  /**
   * Entries as two parallel arrays, not one `{ at, value }` object each: the due times stay unboxed doubles, and a
   * source unit's three entries (follow-window.ts) live for seconds and reach the old generation — three objects fewer
   * per unit for the scavenges to copy (issue [6/10]).
   */
  private dueAt: number[] = [];
  private items: T[] = [];
  private head = 0;
  private timer: unknown;
  private armedFor = Infinity;

  constructor(
    private readonly clock: Clock,
    private readonly durationMs: number,
    /** Called exactly once per entry: at expiry, or from clear(). */
    private readonly onExpire: (value: T, expiredAt: number) => void,
    private readonly options: ExpiryQueueOptions = {},
  ) {}

  get size(): number {
    return this.items.length - this.head;
  }

  push(value: T): void {
    this.dueAt.push(this.clock.now() + this.durationMs);
    this.items.push(value);
    if (this.options.timer !== false) this.arm();
  }

  *values(): IterableIterator<T> {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i]!;
  }

  /** Expires everything now (shutdown removes routes and copies with the transport, §14). */
  clear(): void {
    this.clock.clearTimeout(this.timer);
    this.armedFor = Infinity;
    const now = this.clock.now();
    const rest = this.items.slice(this.head);
    this.dueAt = [];
    this.items = [];
    this.head = 0;
    for (const value of rest) this.onExpire(value, now);
  }

  private arm(): void {
    if (this.head === this.items.length) return;
    const at = this.dueAt[this.head]!;
    if (at >= this.armedFor) return;
    this.clock.clearTimeout(this.timer);
    this.armedFor = at;
    this.timer = this.clock.setTimeout(() => this.fire(), Math.max(0, at - this.clock.now()));
  }

  /** Expires every entry that is due now, in order. */
  expireDue(): void {
    const now = this.clock.now();
    while (this.head < this.items.length && this.dueAt[this.head]! <= now) {
      const value = this.items[this.head]!;
      this.items[this.head++] = undefined as never;
      this.onExpire(value, now);
    }
    if (this.head === this.items.length) {
      this.dueAt = [];
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.dueAt = this.dueAt.slice(this.head);
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  private fire(): void {
    this.armedFor = Infinity;
    this.expireDue();
    this.arm();
  }
}
