/**
 * Pacing by stop time (§7, §8; DESIGN "Relocation at scale"): a unit seals only when the pipeline can carry it at
 * once. The payload budget bounds bytes in flight, but small units all fit it at once, and then every unit's
 * S0→S1 is the whole wave (measured: 1.2–4.5 s at 10k units). So the units between their seal (S0) and their
 * cutover submit (S1) are also bounded by a window that adapts to the stop time they observe, one decision per round
 * of completions: it grows by a quarter after a round that stayed under the target, and shrinks by a quarter after
 * one where more than an eighth of the units went over it. After a decrease the units still in flight — admitted under
 * the larger window — complete before the next round counts: deciding on every completion collapsed a 1,024 window to
 * 4 within one batched reply and then grew it back, over and over (logged at 100k units): the pipeline swung between
 * a thousand units queued and almost none. The target is never below a few times the shortest S0→S1 seen: a unit's
 * own round trips (payload, intake, relay-ready) set a floor that a smaller window cannot lower, so shrinking below it
 * would only cost throughput (delay-based, as TCP Vegas tells queueing from base latency).
 *
 * A unit asks for a permit before its safe point, so while it waits its lane keeps processing messages (§7: waiting
 * happens before the source admission seal) and the wait is excluded from the interruption measurement (§8).
 */
export interface SealGateOptions {
  /** S0→S1 the window aims under. Well below the §8 1 s target, so a slow unit still stays far inside it. */
  readonly targetStopMs: number;
  readonly initialWindow: number;
  readonly minWindow: number;
  readonly maxWindow: number;
  /**
   * Above this many sealed units the window grows only while the recent S0→S1 tail (p99 of the last TAIL_SAMPLES
   * stops) is under 4/5 of `targetStopMs`, and falls back to it as soon as the tail goes over `targetStopMs`, trying
   * again only after twice as many stops as the last time (see SEAL_GATE_DEFAULTS). Without it (tests) the window may
   * grow to `maxWindow` on the round rule alone.
   */
  readonly softWindow?: number;
  /**
   * The recent S0→S1 tail (p99 of the last TAIL_SAMPLES stops, at least TAIL_DECIDE of them) the window keeps under at
   * any size: over it the window shrinks by a quarter, never below half the soft window, and grows again only once as
   * many later stops show a tail under 4/5 of it (see SEAL_GATE_DEFAULTS). Never lower than a few times the shortest
   * stop seen, as the round rule's bar. Without it (tests) only the round rule and the soft window decide.
   */
  readonly tailLimitMs?: number;
}

/**
 * At most 128 units sealed at once unless the tail has room (`softWindow`; fewer for small relocations:
 * sealWindowBound). A stall on either side — a 20–40 ms scavenge, a descheduled process — delays every sealed unit
 * together, so the sealed set, not the typical round trip, sets the S0→S1 tail; and a large set moves as convoys, each
 * step of a few hundred units one task on each side. Measured with `npm run bench -- --n 100000` (2 cores): with up to
 * 1,024 the window moved between about 100 and 900 units, S0→S1 p99 was 83–121 ms, and the 2% slowest units of a 10k
 * move were all sealed within 10 ms of each other (one stall); with 128, p99 40–62 ms (p50 8–11 ms); 160 gave p99
 * 53–59 ms. The price of a fixed 128: at most 128 units per seal-to-cutover round trip. On a faster 2-core machine
 * (floor ~0.85 s at 100k) the window stays at 128 through the move with S0→S1 p99 15–25 ms, and its rate (128 over
 * the mean S0→S1) bounds the move. So past 128 (`softWindow`), up to 256, the window grows only while the p99 of the
 * last 2,048 stops is under 4/5 of the target, falls back to 128 as soon as it is over the target, and tries again
 * only after twice as many stops as the last wait. Alternated runs against a fixed 128 on that machine: the move
 * 0.75–0.97× as long (four pairs, median 0.875×), p99 22–30 ms against 21–25; beside a busy loop (a loaded machine),
 * p99 32–36 against 28–42 (three pairs). Without the hysteresis and the wait, p99 under load was 32–40 ms; up to 512
 * (the 1/256 share: 390) gained less (median 0.95×, five pairs) with p99 29–40 ms: a stall then delays more units
 * than the window gains.
 *
 * The tail limit (40 ms) is for the other way round: in a slow phase of the same machine (100k floor 1.5–2.0 s, the
 * move 7.2–11 s) 128 sealed units left S0→S1 p99 at 37–54 ms and owner CAS − S1 p99 at 39–55 ms (nine runs), the
 * round rule unmoved (its bar is an eighth of a round over the target, not 1%). With the limit, four alternated pairs:
 * p99 32 / 43 / 36 / 33 against 40 / 46 / 37 / 40 ms, CAS − S1 p99 35 / 44 / 38 / 31 against 55 / 46 / 39 / 41, the
 * move 0.89–1.10× as long (median 1.0×), 98–120 units sealed on average against 113–118.
 */
export const SEAL_GATE_DEFAULTS: Required<SealGateOptions> = Object.freeze({
  targetStopMs: 25,
  initialWindow: 16,
  minWindow: 4,
  softWindow: 128,
  maxWindow: 256,
  tailLimitMs: 40,
});

/**
 * The bound for one relocation of `units` units: at most 256 (SEAL_GATE_DEFAULTS), and at most 1/256 of its units
 * (never under 32). A stall delays every sealed unit at once, so this also bounds the share of a host's units one
 * stall can push over the target: under 0.4% from 8,192 units up (below that the floor of 32 is the bound, a larger
 * share of a small move), so it takes three stalls, not two, to reach the 1% slowest. At 10k units
 * the whole move is V8's cold start on both hosts, where stalls come closest together (the first third of the units
 * had the tail). Measured with `npm run bench -- --n 10000` on a 2-core machine, three sets of alternated runs (4, 4
 * and 5 pairs, in three different hours), 1/128 (78 sealed) against 1/256 (39): S0→S1 p99 medians 55.5 → 34, 39 → 26
 * and 55 → 36 ms (ranges 30–63 → 24–39), owner CAS − S1 p99 32–68 → 21–43 ms; the move as long in the first set and
 * longer in the others (medians +15% and +29%: smaller batches, more CPU per unit), with runs of one code varying
 * 1.5× within a set. Tried before the seal window moved as a stream of small parcels, 1/256 made the move 20–70% longer.
 * The tail is what §8 bounds per unit; a 10k move stays far inside its deadline. Up to 32,768 units the bound is
 * at most the soft window (128), so only larger moves can go past it (from 65,536 units: 256).
 */
export function sealWindowBound(units: number): number {
  return Math.min(SEAL_GATE_DEFAULTS.maxWindow, Math.max(MIN_BOUND, Math.floor(units / SHARE_DIVISOR)));
}
const SHARE_DIVISOR = 256;
const MIN_BOUND = 32;

/**
 * Where the window starts for one relocation of `units` units: at the soft window (128) when the relocation is large
 * enough for its bound to reach it (from 32,768 units), else at SEAL_GATE_DEFAULTS.initialWindow (16) and up by the
 * round rule. Measured with `npm run bench` on a 2-core machine, fifteen alternated 100k pairs (three sets of five in
 * one hour, the last with this code): starting at 128 made the move 0.63–1.10× as long (median 0.92, shorter in 13 of
 * 15), with S0→S1 p99 22–35 ms against 24–32; in the first ten, more units were sealed at once on average through the
 * whole move in 8. A 10k move is the other way round:
 * started at its bound (39), four alternated pairs were 1.10–1.45× as long (median 1.29) with p99 21–23 ms against
 * 14–23 — the whole of a 10k move is the hosts' cold start, where a full window of slow units costs more than the
 * ramp. So smaller relocations keep the ramp.
 */
export function initialSealWindow(units: number): number {
  const bound = sealWindowBound(units);
  return bound >= SEAL_GATE_DEFAULTS.softWindow ? SEAL_GATE_DEFAULTS.softWindow : Math.min(SEAL_GATE_DEFAULTS.initialWindow, bound);
}

/** How many times the shortest observed S0→S1 (the base latency of one unit) still counts as not queueing. */
const BASE_LATENCY_FACTOR = 4;
/** A round whose completions went over the bar in more than 1 / OVER_SHARE of cases shrinks the window. */
const OVER_SHARE = 8;
/**
 * The recent tail (past the soft window, and the tail limit at any size): p99 of the last TAIL_SAMPLES stops, in 1 ms
 * buckets up to TAIL_BUCKETS ms (longer stops count in the last one). A fixed ring and histogram: the same work per completion whatever the move's size.
 */
const TAIL_SAMPLES = 2048;
const TAIL_BUCKETS = 256;
const TAIL_SHARE = 100;
/** The share of the target the recent p99 must stay under for the window to grow past the soft window. */
const TAIL_GROW_SHARE = 0.8;
/** Stops the tail limit decides on: after it shrank the window, the ring starts again and fills this far first. */
const TAIL_DECIDE = TAIL_SAMPLES / 2;

/** A unit waiting for its permit: told once, `permitted` or `gateStopped` (the unit itself: no allocation per waiter). */
export interface PermitWaiter {
  permitted(): void;
  gateStopped(reason: Error): void;
}

export class SealGate {
  private window: number;
  private inFlight = 0;
  /** FIFO of waiting units; `head` instead of shift(), which is O(n) on 100k waiters. */
  private waiters: PermitWaiter[] = [];
  private head = 0;
  /** Completions of the current round, and how many of them went over the bar. */
  private seen = 0;
  private over = 0;
  /** Completions still to come from units admitted before the last decrease: they do not count for the next round. */
  private skip = 0;
  private minStopMs = Number.POSITIVE_INFINITY;
  private stopped: Error | undefined;
  private readonly softWindow: number;
  /** The last TAIL_SAMPLES stops (ms, bucketed) and their histogram: the recent tail. */
  private readonly recent = new Uint8Array(TAIL_SAMPLES);
  private readonly histogram = new Uint32Array(TAIL_BUCKETS);
  private recentCount = 0;
  private recentNext = 0;
  /** Stops recorded, and from which count the window may go past the soft window again (after a fall back). */
  private stops = 0;
  private retryAt = 0;
  private holdoff = TAIL_SAMPLES;
  /** The tail limit shrank the window: it grows only once the tail is back under 4/5 of the limit. */
  private tailLimited = false;

  constructor(private readonly options: SealGateOptions = SEAL_GATE_DEFAULTS) {
    this.window = options.initialWindow;
    this.softWindow = Math.min(options.softWindow ?? options.maxWindow, options.maxWindow);
  }

  get size(): number {
    return this.window;
  }

  get sealed(): number {
    return this.inFlight;
  }

  get waiting(): number {
    return this.waiters.length - this.head;
  }

  /**
   * Waits in FIFO order for a permit (after a `tryAcquire` that failed): `waiter.permitted()` runs when it is
   * granted, `waiter.gateStopped(reason)` when the gate stops first. Always later, never inside this call. A unit that
   * no longer wants its permit takes it when it comes and gives it back at once (one stop for all units, not a
   * signal per unit: an AbortSignal shared by 100k waiters walks its listener list on every add and remove).
   */
  enqueue(waiter: PermitWaiter): void {
    if (this.stopped) {
      const reason = this.stopped;
      return void queueMicrotask(() => waiter.gateStopped(reason));
    }
    this.waiters.push(waiter);
    this.admit();
  }

  /** A permit now, when one is free and nobody waits for it first (FIFO); false otherwise (then `enqueue`). */
  tryAcquire(): boolean {
    if (this.stopped || this.inFlight >= this.window || this.head !== this.waiters.length) return false;
    this.inFlight++;
    return true;
  }

  /** §8 deadline or shutdown: no unit starts its seal any more; every waiter is rejected with `reason`. */
  stop(reason: Error): void {
    if (this.stopped) return;
    this.stopped = reason;
    const waiting = this.waiters.slice(this.head);
    this.waiters = [];
    this.head = 0;
    for (const waiter of waiting) waiter.gateStopped(reason);
  }

  /**
   * A permit comes back: at the unit's cutover submit with its S0→S1 (`stopMs`), or without one when the unit
   * restored or never sealed.
   */
  release(stopMs?: number): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    if (stopMs !== undefined) this.observe(stopMs);
    this.admit();
  }

  private observe(stopMs: number): void {
    const { targetStopMs, minWindow, maxWindow } = this.options;
    this.minStopMs = Math.min(this.minStopMs, stopMs);
    if (this.softWindow < maxWindow || this.options.tailLimitMs !== undefined) this.record(stopMs);
    if (this.skip > 0) return void this.skip--;
    this.seen++;
    // Queueing is told from base latency (a few times the shortest stop seen), not from the target alone: on a slow or
    // loaded machine a fixed bar shrinks the window down to its minimum, and units prepared on the target then wait
    // for permits past its staging expiry (measured: a RollingUpdate under a loaded test run failed that way).
    if (stopMs > Math.max(targetStopMs, BASE_LATENCY_FACTOR * this.minStopMs)) this.over++;
    if (this.seen < Math.max(1, this.window >> 1)) return;
    const tailLimit = this.tailLimit();
    if (this.over * OVER_SHARE > this.seen) {
      this.window = Math.max(minWindow, this.window - Math.max(1, this.window >> 2));
      this.skip = this.inFlight;
    } else if (this.window > this.softWindow && this.tailOver(targetStopMs)) {
      // Past the soft window the extra units are only worth it while the tail has room: back to it at once, and the
      // next try only after twice as many stops as the last wait (a machine where stalls keep coming stops trying).
      this.window = this.softWindow;
      this.skip = this.inFlight;
      this.retryAt = this.stops + this.holdoff;
      this.holdoff *= 2;
    } else if (tailLimit !== undefined && this.window > this.tailFloor() && this.recentCount >= TAIL_DECIDE && this.p99Over(tailLimit)) {
      // §8's own target is 1 s, but a slow or loaded machine's stalls (scavenges of 30–74 ms) reached more than 1% of
      // the units at 128 sealed: fewer sealed units, fewer caught by each stall. The ring starts again, so the next
      // decision sees only stops sealed under the smaller window.
      this.window = Math.max(this.tailFloor(), this.window - Math.max(1, this.window >> 2));
      this.skip = this.inFlight;
      this.tailLimited = true;
      this.clearTail();
    } else if (this.over === 0 && !this.heldByTail()) {
      // Growing past it takes a tail well under the target (hysteresis): a tail that hovers at the target, as on a
      // loaded machine, keeps the soft window instead of going past it and back.
      const grown = this.window + Math.max(1, this.window >> 2);
      const room = grown <= this.softWindow || (this.stops >= this.retryAt && !this.tailOver(targetStopMs * TAIL_GROW_SHARE));
      this.window = Math.min(room ? maxWindow : Math.max(this.window, this.softWindow), grown);
    }
    this.seen = 0;
    this.over = 0;
  }

  private record(stopMs: number): void {
    const bucket = Math.min(TAIL_BUCKETS - 1, Math.max(0, Math.floor(stopMs)));
    if (this.recentCount === TAIL_SAMPLES) this.histogram[this.recent[this.recentNext]!]!--;
    else this.recentCount++;
    this.stops++;
    this.recent[this.recentNext] = bucket;
    this.histogram[bucket]!++;
    this.recentNext = (this.recentNext + 1) % TAIL_SAMPLES;
  }

  /** The tail limit in force: never under a few times the shortest stop seen (a unit's own round trips). */
  private tailLimit(): number | undefined {
    const limit = this.options.tailLimitMs;
    return limit === undefined ? undefined : Math.max(limit, BASE_LATENCY_FACTOR * this.minStopMs);
  }

  /** The tail limit shrinks the window to half the soft window at most: past that, fewer units cost more than they save. */
  private tailFloor(): number {
    return Math.max(this.options.minWindow, this.softWindow >> 1);
  }

  /** After the tail limit shrank the window: no growth until enough later stops show a tail under 4/5 of the limit. */
  private heldByTail(): boolean {
    if (!this.tailLimited) return false;
    if (this.recentCount < TAIL_DECIDE || this.p99Over(this.tailLimit()! * TAIL_GROW_SHARE)) return true;
    this.tailLimited = false;
    return false;
  }

  private clearTail(): void {
    this.histogram.fill(0);
    this.recentCount = 0;
    this.recentNext = 0;
  }

  /**
   * Whether the recent p99 S0→S1 is over `barMs` (or too few stops were seen to tell: a full ring first). Walks the
   * histogram from the top: at most TAIL_BUCKETS steps, once per round (at least 64 completions past the soft window).
   */
  private tailOver(barMs: number): boolean {
    return this.recentCount < TAIL_SAMPLES || this.p99Over(barMs);
  }

  /** Whether more than 1% of the stops in the ring were over `barMs`. */
  private p99Over(barMs: number): boolean {
    let above = 0;
    const allowed = Math.floor(this.recentCount / TAIL_SHARE);
    for (let ms = TAIL_BUCKETS - 1; ms >= barMs; ms--) {
      above += this.histogram[ms]!;
      if (above > allowed) return true;
    }
    return false;
  }

  /** Permits granted and not told yet: told together in one microtask (after the step that freed them). */
  private granted: PermitWaiter[] = [];

  private admit(): void {
    while (this.inFlight < this.window && this.head < this.waiters.length) {
      const waiter = this.waiters[this.head]!;
      // The slot is cleared: a waiter is a unit, with the objects it moves; the gate must not keep it alive.
      this.waiters[this.head++] = undefined as unknown as PermitWaiter;
      this.inFlight++;
      if (this.granted.push(waiter) === 1) queueMicrotask(() => this.tellGranted());
    }
    if (this.head === this.waiters.length) {
      this.waiters = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.waiters.length) {
      this.waiters = this.waiters.slice(this.head);
      this.head = 0;
    }
  }

  private tellGranted(): void {
    const granted = this.granted;
    this.granted = [];
    for (const waiter of granted) waiter.permitted();
  }
}
