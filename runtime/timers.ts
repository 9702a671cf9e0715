/**
 * Timers as logical registrations (§12): name, next fire time, period and whether a tick is pending.
 * The runtime handle and continuation never move; a relocation captures registrations (with the time left,
 * never an absolute time of another node's clock) and the pending ticks that sit in the queue.
 */
import type { Clock } from './clock';
import type { TimerSpec } from './definitions';
import { ArgumentError } from './errors';
import type { TimerApi } from './context';

export interface TimerRegistration {
  readonly name: string;
  /** ms until the next fire, as of capture. */
  readonly remainingMs: number;
  readonly periodMs?: number;
}

interface Entry {
  seq: number;
  dueAt: number;
  periodMs?: number;
  handle: unknown;
  /** A tick for this registration is queued and not yet run: periodic fires coalesce into it. */
  pending: boolean;
}

let nextSeq = 1;

/** Shared by every table without timers; never written (see `writable`). */
const NO_TIMERS: Map<string, Entry> = new Map();

/** Where a table's ticks go: its object, which queues each into its lane (an object, not a closure per table). */
export interface TimerOwner {
  timerFired(name: string, seq: number): void;
}

export class TimerTable implements TimerApi {
  /** Most objects never schedule a timer: they share one empty map until their first (issue [6/10] RSS). */
  private entries: Map<string, Entry> = NO_TIMERS;
  private frozen = false;

  constructor(
    private readonly clock: Clock,
    /**
     * Queues a tick into the owner's lane. The owner itself rather than a closure over it: every hosted object has a
     * table, and a closure and its context were ~100 B more per object (issue [6/10] RSS).
     */
    private readonly owner: TimerOwner,
  ) {}

  private writable(): Map<string, Entry> {
    if (this.entries === NO_TIMERS) this.entries = new Map();
    return this.entries;
  }

  schedule(name: string, spec: TimerSpec): void {
    if (typeof name !== 'string' || name.length === 0) throw new ArgumentError('name', 'must be a non-empty string');
    if (typeof spec !== 'object' || spec === null) throw new ArgumentError('spec', 'must be { dueMs, periodMs? }');
    if (!Number.isFinite(spec.dueMs) || spec.dueMs < 0) throw new ArgumentError('spec.dueMs', 'must be a finite number >= 0');
    if (spec.periodMs !== undefined && (!Number.isFinite(spec.periodMs) || spec.periodMs <= 0))
      throw new ArgumentError('spec.periodMs', 'must be a finite number > 0');
    this.cancel(name);
    const entry: Entry = { seq: nextSeq++, dueAt: this.clock.now() + spec.dueMs, periodMs: spec.periodMs, handle: undefined, pending: false };
    this.writable().set(name, entry);
    this.arm(name, entry);
  }

  cancel(name: string): boolean {
    const entry = this.entries.get(name);
    if (!entry) return false;
    this.clock.clearTimeout(entry.handle);
    this.entries.delete(name);
    return true;
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  get size(): number {
    return this.entries.size;
  }

  /** Called by the lane when a tick runs. false = the registration was cancelled or replaced: skip the tick. */
  beginTick(name: string, seq: number): boolean {
    const entry = this.entries.get(name);
    if (!entry || entry.seq !== seq) return false;
    entry.pending = false;
    if (entry.periodMs === undefined) this.entries.delete(name);
    return true;
  }

  /** Seal: stop firing (ticks would land in a queue that is moving) and report the registrations. */
  freeze(): TimerRegistration[] {
    this.frozen = true;
    const now = this.clock.now();
    const out: TimerRegistration[] = [];
    for (const [name, e] of this.entries) {
      this.clock.clearTimeout(e.handle);
      out.push({ name, remainingMs: Math.max(0, e.dueAt - now), periodMs: e.periodMs });
    }
    return out;
  }

  /** §11: restore on the source after an explicit failure before relay-ready. */
  thaw(): void {
    this.frozen = false;
    for (const [name, e] of this.entries) this.arm(name, e);
  }

  /** Target side: install captured registrations; their queued ticks arrive with the queue. */
  install(registrations: readonly TimerRegistration[], pendingTicks: ReadonlySet<string>): Map<string, number> {
    const seqs = new Map<string, number>();
    const now = this.clock.now();
    for (const r of registrations) {
      const entry: Entry = { seq: nextSeq++, dueAt: now + r.remainingMs, periodMs: r.periodMs, handle: undefined, pending: pendingTicks.has(r.name) };
      this.writable().set(r.name, entry);
      seqs.set(r.name, entry.seq);
    }
    return seqs;
  }

  /** Arms every installed registration (when dispatch opens on the target, S3). */
  start(): void {
    this.frozen = false;
    for (const [name, e] of this.entries) this.arm(name, e);
  }

  /** Current sequence of a registration, for rewriting moved tick items. */
  seqOf(name: string): number | undefined {
    return this.entries.get(name)?.seq;
  }

  clear(): void {
    // Most objects have no timers: no iterator and no fresh table (Map#clear allocates one) per forgotten object.
    if (this.entries.size === 0) return;
    for (const e of this.entries.values()) this.clock.clearTimeout(e.handle);
    this.entries.clear();
  }

  private arm(name: string, entry: Entry): void {
    if (this.frozen) return;
    this.clock.clearTimeout(entry.handle);
    const delay = Math.max(0, entry.dueAt - this.clock.now());
    entry.handle = this.clock.setTimeout(() => this.onDue(name, entry), delay);
  }

  private onDue(name: string, entry: Entry): void {
    if (this.frozen || this.entries.get(name) !== entry) return;
    if (!entry.pending) {
      entry.pending = true;
      this.owner.timerFired(name, entry.seq);
    }
    if (entry.periodMs !== undefined) {
      entry.dueAt += entry.periodMs;
      // A host that fell behind does not fire a burst: the next fire is at least one period away.
      if (entry.dueAt < this.clock.now()) entry.dueAt = this.clock.now() + entry.periodMs;
      this.arm(name, entry);
    }
  }
}
