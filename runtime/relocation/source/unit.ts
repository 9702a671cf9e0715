/**
 * Driver of one source unit: performs the I/O the unit-source machine's actions name and reports each
 * milestone back as one event (DESIGN.md "Unit handoff (source)"). It keeps no copy of the machine's state: where
 * it needs to know where the unit is, it reads the actor's snapshot. What it keeps is its own I/O progress
 * (lease, prepared, seal permit) and the per-unit data the machine does not hold (S0, S1, captured queue).
 *
 * The machine is created when the unit's turn comes — its payload budget granted and the unit within the pool's
 * lookahead of the seal window, in inventory order (source/pool.ts, §7) — or at once when the unit must act before
 * that (a close, §12). Until then the unit is in the machine's initial state by definition (`waiting`: queued or for
 * budget) and costs no actor: an actor per waiting unit was ~2.5 KB of heap each at 100k units (issue [6/10] RSS).
 * Every unit still exists and waits; no cap on concurrent units is set (§7).
 */
import type { UnitSourceEvent, UnitSourceOutput } from '../../../machines/unit-source.machine';
import type { FlatMachineLogic } from '../../flat-machine';
import type { FlatActor } from '../../flat-actor';
import type { NodeRef } from '../../../stores/types';
import type { BudgetLease, RuntimeMessage } from '../../../transport/types';
import type { SpotDefinition } from '../../definitions';
import type { Envelope } from '../../envelope';
import type { Lane, WorkItem } from '../../lane';
import { captureExtensions, type Hosted } from '../../objects';
import type { TimerRegistration } from '../../timers';
import { RelocationReason } from '../../../vocabulary';
import type { OutboundPorts } from '../ports';
import { unitObjects, type UnitPlan } from '../inventory';
import { encodePayload, PAYLOAD_VERSION, type CapturedItem, type CapturedObject } from '../payload';
import { describeType } from '../compatibility';
import { relayBatchMessages, RELOCATION_MESSAGE } from '../protocol';
import type { UnitEvent } from '../events';
import type { SealGate } from './seal-gate';
import { parcelUnitsFor } from './parcel-sender';

/** What a source unit reports to the follow window (coordinator). */
export interface FollowWindow {
  /** The payload reached the target: its reply is due within the wait (§8). */
  awaitReply(unit: SourceUnit): void;
  /** S1: Message Follow and the retransmission copy start (§13). */
  onCutOver(unit: SourceUnit, relay: Envelope[]): void;
}

/** How a unit's machine comes to exist, and how a unit that never got one ends (the pool). */
export interface UnitStarter {
  /** Creates and starts the unit's machine now (it enters `waiting`; its `prepare` takes the budget if it has none). */
  start(unit: SourceUnit): void;
  /** The unit's machine processed an event its driver sent: the starter reads where the unit is now. */
  stepped(unit: SourceUnit): void;
  /** Why a unit without a machine waits: for payload budget, or for its turn in the pipeline (diagnostics). */
  waitingReason(): 'budget' | 'queued';
  /** STOP reached a unit without a machine: it ends `notStarted` (nothing was taken or sent for it). */
  endUnstarted(unit: SourceUnit): void;
}

/**
 * How a unit's actor runs the unit-source machine: its declaration over a transition table (runtime/flat-machine.ts),
 * ~10 instead of ~50 µs per unit, and a fraction of the garbage (issue [6/10]).
 */
export type UnitSourceLogic = FlatMachineLogic<UnitSourceEvent, UnitSourceOutput>;
/** A unit's actor: the unit-source machine over that table, in a FlatActor (runtime/flat-actor.ts). */
export type SourceUnitActor = FlatActor<UnitSourceEvent, UnitSourceOutput>;

/** Shared empty lists of units not sealed (never written: the seal makes the unit its own). */
const NOTHING_HELD: Envelope[] = [];
const NOTHING_CAPTURED: WorkItem[] = [];

export class SourceUnit {
  /** The unit's machine, once started (see the header). */
  actor: SourceUnitActor | undefined;
  /** The pool's count: the machine is started and has not left `waiting` yet (it holds a place in the lookahead). */
  aheadOfSeal = false;
  readonly objects: Hosted[];
  /** The unit's object keys, root first (never changed: shared with follow entries, events and the prepare). */
  readonly keys: readonly string[];
  private keySet: Set<string> | undefined;
  /**
   * Ingress hold (§12): one array for the whole unit keeps arrival order across its objects. Made at the seal: every
   * unit of a batch is live at once (§7), most of them waiting long before it.
   */
  private hold: Envelope[] = NOTHING_HELD;
  /**
   * STOP or abandon reached this unit: a budget lease or seal permit that still comes is given back at once. No
   * AbortController per unit (issue [6/10] RSS: one and its listener maps cost ~0.7 KB, and every unit of a batch is
   * live at once); the pool stops the seal gate for all units together.
   */
  private stopped = false;
  private lease: BudgetLease | undefined;
  private paused = false;
  private prepareSent = false;
  /** The target registered its temporary queue (r.prepared). */
  private prepared = false;
  private captured: WorkItem[] = NOTHING_CAPTURED;
  /** Holds a seal permit (from before the safe point until the cutover submit, a restore or an abandon). */
  private permit = false;
  /** closeSpot reached this Instance Spot before the seal (§12): the unit ends `closed`, not `notStarted`. */
  private closedFirst = false;
  s0 = 0;
  s1 = 0;

  constructor(
    private readonly ports: OutboundPorts,
    /** The follow window (coordinator): reply waits, then Message Follow and the retransmission copy from S1. */
    private readonly window: FollowWindow,
    readonly plan: UnitPlan,
    readonly target: NodeRef,
    private readonly gate: SealGate,
    private readonly starter: UnitStarter,
  ) {
    this.objects = unitObjects(plan);
    this.keys = this.objects.map((o) => o.key);
  }

  private get isStopped(): boolean {
    return this.stopped;
  }

  /** Whether a key belongs to this unit (most units hold one object). */
  private holds(key: string): boolean {
    if (this.keys.length === 1) return this.keys[0] === key;
    return (this.keySet ??= new Set(this.keys)).has(key);
  }

  private get lane(): Lane {
    return this.plan.root.lane;
  }

  private send(message: RuntimeMessage): boolean {
    return this.ports.send(this.target, message);
  }

  /** The machine's current state (no copy kept here); a unit whose machine was not created yet is in its initial state. */
  get at(): string {
    return this.actor ? this.actor.getSnapshot().value : 'waiting';
  }

  /**
   * An event for the unit's machine (only sent once it exists: every caller runs after the machine started). Every
   * event before S1 comes through here, so the pool hears of each step once the machine has taken it. An event sent
   * from inside one of this machine's own actions is queued by xstate and taken before the outer send returns; that
   * outer call reports the step.
   */
  private tell(event: UnitSourceEvent): void {
    this.actor!.send(event);
    this.starter.stepped(this);
  }

  /** The pool granted this unit's payload budget before creating its machine (§7: budget first, then the rest). */
  granted(lease: BudgetLease): void {
    this.lease = lease;
  }

  /** A unit without a machine ended at STOP: `notStarted`, nothing to give back (no lease, permit or prepare). */
  endedUnstarted(): void {
    this.stopped = true;
    this.event('notStarted', undefined, this.ports.clock.now());
  }

  /** It ended before its machine was created (endedUnstarted; `abandon` stops only units that have one). */
  get ended(): boolean {
    return this.stopped && !this.actor;
  }

  /** Which §7 step a unit still `waiting` is at, for diagnostics (queued → budget → preparing → safePoint). */
  get waitingFor(): 'budget' | 'queued' | 'preparing' | 'safePoint' {
    if (!this.actor) return this.starter.waitingReason();
    return !this.lease ? 'budget' : !this.prepared ? 'preparing' : 'safePoint';
  }

  // ── actions of the unit-source machine ───────────────────────────────────────────────

  /**
   * Entry of `waiting` (§7): payload budget, then the target's temporary queue, then a seal permit and the safe
   * point, sequenced here; the machine hears one SAFE_POINT (or FAILED / STOP) at the end.
   */
  prepare(): void {
    if (this.lease) return this.prepareTarget();
    this.acquireBudget();
  }

  private acquireBudget(): void {
    const bytes = this.ports.estimateBytes(this.plan);
    const now = this.ports.tryAcquireBudget(this.target, bytes);
    if (now) {
      this.lease = now;
      return this.prepareTarget();
    }
    const budget = this.ports.acquireBudget(this.target, bytes);
    if (!budget) return void this.tell({ type: 'STOP' });
    budget.then(
      (lease) => {
        if (this.isStopped) return lease.release();
        this.lease = lease;
        this.prepareTarget();
      },
      () => {
        // The transport closed (peer gone for good, or shutdown): the machine is already ending or fails here.
        if (!this.isStopped) this.tell({ type: 'FAILED', reason: RelocationReason.RelocationFailed });
      },
    );
  }

  prepareTarget(): void {
    this.prepareSent = true;
    // One r.prepare per target per turn carries this unit with the others (DESIGN "Relocation at scale"); a message
    // the transport did not take fails each unit it carried, as a refused single send did.
    this.ports.control.prepare(this.target, { u: this.plan.id, kind: this.plan.kind, keys: this.keys as string[] }, this.typesInUse(), () => {
      if (this.at === 'waiting') this.tell({ type: 'FAILED', reason: RelocationReason.RelocationFailed });
    });
  }

  /** §11: `r.abort` never overtakes this unit's `r.prepare` still waiting in the turn's batch. */
  private sendAbort(): void {
    if (!this.prepareSent) return;
    this.ports.control.flush(this.target);
    this.send({ t: RELOCATION_MESSAGE.abort, u: this.plan.id });
  }

  /** r.prepared: the temporary queue is registered; wait for a seal permit and the safe point next. */
  onPrepared(): void {
    if (this.prepared || this.isStopped || this.at !== 'waiting') return;
    this.prepared = true;
    this.awaitSafePoint();
  }

  private typesInUse() {
    if (this.objects.length === 1) return [describeType(this.objects[0]!.def)];
    const seen = new Map<string, ReturnType<typeof describeType>>();
    for (const o of this.objects) if (!seen.has(o.def.type)) seen.set(o.def.type, describeType(o.def));
    return [...seen.values()];
  }

  private awaitSafePoint(): void {
    // §8 pacing: the unit seals only when the pipeline can carry it at once; it keeps serving while it waits.
    if (this.gate.tryAcquire()) return this.permitted();
    this.gate.enqueue(this);
  }

  /** The gate stopped (deadline, shutdown) before this unit's permit: the machine is ending (abandon). */
  gateStopped(): void {}

  /** The seal permit is this unit's (SealGate waiter). */
  permitted(): void {
    this.permit = true;
    if (this.isStopped) return this.releasePermit();
    this.awaitTurnEnd();
  }

  private releasePermit(stopMs?: number): void {
    if (!this.permit) return;
    this.permit = false;
    this.gate.release(stopMs);
  }

  private awaitTurnEnd(): void {
    const root = this.plan.root;
    if (this.plan.kind === 'spotWide' && (root.def as SpotDefinition).readiness === 'ApplicationSignaled') {
      // §7: the application registers the turn boundary with relocationReady().defer().
      this.ports.awaitDeferSignal(root.key, () => this.pauseLane());
      return;
    }
    this.pauseLane();
  }

  private pauseLane(): void {
    this.paused = true;
    // An idle lane is at its turn boundary now: the seal follows in the same step, no promise per unit.
    this.lane.pauseThen(() => {
      if (!this.isStopped) this.tell({ type: 'SAFE_POINT' });
    });
  }

  sealAndTransfer(): void {
    const clock = this.ports.clock;
    this.s0 = clock.now(); // S0: source admission seal (§8)
    const objects = this.objects;
    const timers: TimerRegistration[][] = new Array(objects.length);
    const shell = this.plan.kind === 'perActorShell';
    for (let i = 0; i < objects.length; i++) {
      const o = objects[i]!;
      o.hold = this.hold === NOTHING_HELD ? (this.hold = []) : this.hold;
      const regs = o.timers.freeze();
      // §12: Spot-level timers of a PerActor Spot do not move.
      timers[i] = shell ? [] : regs;
    }
    this.captured = this.lane.take((item) => item.k !== 'ctl' && this.holds(item.to));
    // Emitted once the seal is applied: what an observer sends from here on waits in the ingress hold.
    this.event('sealed', 'S0', this.s0);
    let bytes: Buffer;
    try {
      const captured: CapturedObject[] = new Array(objects.length);
      for (let i = 0; i < objects.length; i++) captured[i] = this.captureObject(objects[i]!, timers[i]!);
      const queue: CapturedItem[] = [];
      for (const item of this.captured) {
        if (item.k === 'msg') queue.push({ k: 'msg', to: item.to, env: movedEnvelope(item.env) });
        else if (item.k === 'tick' && !shell) queue.push({ k: 'tick', to: item.to, name: item.name });
      }
      bytes = encodePayload({ v: PAYLOAD_VERSION, unit: this.plan.id, kind: this.plan.kind, objects: captured, queue });
    } catch (error) {
      this.ports.logger.warn({ unit: this.plan.id, root: this.plan.root.key, err: error }, 'capture failed; the unit is restored (StateIncompatible)');
      return void this.tell({ type: 'FAILED', reason: RelocationReason.StateIncompatible });
    }
    this.ports.recordBytes(this.plan, bytes.length);
    this.transfer(bytes);
  }

  private captureObject(o: Hosted, timers: TimerRegistration[]): CapturedObject {
    const policy = o.def.relocation;
    const shell = this.plan.kind === 'perActorShell';
    let state: Uint8Array | undefined;
    if (!shell && policy.kind === 'preserve') state = policy.capture(o.state);
    // Component state bound to the object (STREAM session bindings, §12) moves with it whatever its policy.
    const ext = shell ? undefined : captureExtensions(o);
    // Optional fields are added, not spread: no temporary object per optional field, one shape for every unit.
    const captured: { -readonly [K in keyof CapturedObject]: CapturedObject[K] } = {
      key: o.key,
      type: o.def.type,
      gen: o.objectGeneration,
      auth: o.authorityGeneration,
      mode: o.mode,
      timers,
    };
    if (o.spotId !== undefined) captured.spot = o.spotId;
    if (state !== undefined) captured.state = state;
    if (ext !== undefined) captured.ext = ext;
    return captured;
  }

  private transfer(bytes: Buffer): void {
    // §7: a sealed unit never waits for a limit. When the estimate taken before the seal was low, the payload
    // goes on the lease it has (the budget is overrun once by the estimate's error, and the running estimate
    // corrects the next units). Growing here instead deadlocks once every holder waits to grow.
    // Units sealed together travel in parcels (source/parcel-sender.ts); each still has its own bytes and checksum.
    const done = (error?: Error) => (error ? this.transferFailed(error) : this.transferred());
    this.ports.parcels.send(this.target, this.plan.id, bytes, this.lease!, done, parcelUnitsFor(this.gate.size));
  }

  private transferFailed(error: Error): void {
    this.lease!.release();
    if (this.at !== 'sealed') return;
    const name = error.name;
    // Nothing reached the target, or it explicitly rejected the chunks: a safe abort (§11, §13).
    if (name === 'PeerUnavailableError' || name === 'PayloadRejectedError') return void this.tell({ type: 'FAILED', reason: RelocationReason.RelocationFailed });
    // Anything else: the target may have restored and replied; never reopen the source (§8).
    this.tell({ type: 'REPLY_INDETERMINATE' });
    this.ports.control.flush(this.target); // S1 is the submit (§8): its cutover goes now
  }

  private transferred(): void {
    if (this.at !== 'sealed') return;
    // The target restores on intake and answers at once; no answer by then is indeterminate (§8). One shared
    // timer for all units (DESIGN.md "Known performance traps"), not one per unit.
    this.window.awaitReply(this);
  }

  /** The reply wait ended: without relay-ready or a failure by now the outcome is indeterminate (§8). */
  replyWaitEnded(): void {
    if (this.at !== 'sealed') return;
    this.tell({ type: 'REPLY_INDETERMINATE' });
    this.ports.control.flush(this.target); // S1 is the submit (§8): its cutover goes now
  }

  /** r.ready from the target (one entry of a batched reply, §13). */
  onRelayReady(): void {
    this.tell({ type: 'RELAY_READY' });
  }

  /** r.fail from the target: an explicit failure before relay-ready (§11). */
  onFail(reason: RelocationReason): void {
    this.tell({ type: 'FAILED', reason });
  }

  /** Entry of `following`: ordered relay, one-way cutover submit (S1), Message Follow from here until S4 (§8, §13). */
  relayAndCutover(): void {
    const { clock, routes, objects, control } = this.ports;
    // Ordered relay of held messages, then the one-way cutover, as one batch (§13 retransmission unit).
    const relay = this.hold.length === 0 ? NOTHING_HELD : this.hold.map(movedEnvelope);
    let submitted: boolean | undefined;
    if (relay.length === 0) {
      // Nothing held (the common case): the cutover joins the step's `r.cutovers`, flushed before the step returns
      // and before any Message Follow message to the target (router), so nothing of this unit overtakes it.
      const listening = this.ports.unitEvents.active;
      control.cutover(this.target, this.plan.id, listening ? (ok) => this.event('cutOver', 'S1', this.s1, { submitOk: ok }) : undefined);
    } else {
      control.flush(this.target);
      submitted = relayBatchMessages(this.plan.id, relay, false).every((message) => this.send(message));
    }
    this.s1 = clock.now(); // S1: terminal of the one-way cutover submit
    for (const o of this.objects) {
      o.hold = undefined;
      // From here arriving messages follow to the target over the same connection, after the cutover.
      routes.setFollow(o.key, this.target);
      objects.forget(o.key);
    }
    // The relay copy is what the retransmission window keeps (§13); the hold and the captured queue are done with.
    this.hold = NOTHING_HELD;
    this.captured = NOTHING_CAPTURED;
    this.releasePermit(this.s1 - this.s0);
    this.window.onCutOver(this, relay);
    // The submit result stays here (unit event, retransmission copy): either way the unit never goes back (§13).
    if (submitted !== undefined) this.event('cutOver', 'S1', this.s1, { submitOk: submitted });
  }

  restoreSource(): void {
    const objects = this.ports.objects;
    // §11: original queue first, then what arrived during the hold, in arrival order.
    const held: WorkItem[] = this.hold.map((env) => ({ k: 'msg', to: env.to, env }));
    for (const o of this.objects) {
      o.hold = undefined;
      o.timers.thaw();
    }
    this.lane.unshift([...this.captured, ...held]);
    this.releasePermit();
    this.event('restored', undefined, this.ports.clock.now());
    this.resumeLane();
    this.lease?.release();
    this.sendAbort();
    const root = this.plan.root;
    if (this.plan.kind === 'spotWide' && (root.def as SpotDefinition).readiness === 'ApplicationSignaled') objects.runReadyCompleted(root, 'Continued');
  }

  abandon(): void {
    this.stopped = true;
    this.event(this.closedFirst ? 'closed' : 'notStarted', undefined, this.ports.clock.now());
    this.lease?.release();
    this.releasePermit();
    this.ports.cancelDeferSignal(this.plan.root.key);
    this.resumeLane();
    this.sendAbort();
  }

  /** Whether the unit sealed its objects (§12: from the seal on, relocation came first and a close ends `moving`). */
  get sealed(): boolean {
    const at = this.at;
    return at !== 'waiting' && at !== 'closing' && at !== 'closed';
  }

  /** §12: the application closed this Instance Spot before the seal; the unit does not move it. */
  closeFirst(): void {
    if (!this.actor && !this.stopped) this.starter.start(this); // it must act now: its machine starts here
    if (this.at !== 'waiting' || !this.actor) return;
    this.closedFirst = true;
    this.tell({ type: 'CLOSED' });
  }

  /** The close that came first finished: the unit ends (`closed`). */
  closeDone(): void {
    if (this.at === 'closing') this.tell({ type: 'CLOSE_DONE' });
  }

  /** STOP (deadline, shutdown): honoured only before the seal (and by a unit that waits for a close, §12). */
  requestStop(): void {
    if (!this.actor) return this.starter.endUnstarted(this);
    const at = this.at;
    if (at === 'waiting' || at === 'closing') this.tell({ type: 'STOP' });
  }

  private event(state: UnitEvent['state'], point: UnitEvent['point'], at: number, extra: Partial<UnitEvent> = {}): void {
    if (!this.ports.unitEvents.active) return;
    this.ports.unitEvents.emit({ side: 'source', unit: this.plan.id, kind: this.plan.kind, batch: this.plan.batch, state, ...(point ? { point } : {}), objects: this.keys, at, ...extra });
  }

  private resumeLane(): void {
    if (!this.paused) return;
    this.paused = false;
    this.lane.resume();
  }
}

/** Marks work that crosses to the target inside a unit: a request among it completes after relocation (§9). */
function movedEnvelope(env: Envelope): Envelope {
  return env.req && !env.moved ? { ...env, moved: 1 } : env;
}
