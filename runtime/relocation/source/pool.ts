/**
 * The pool that owns the source unit actors of one Relocate (DESIGN.md measured traps, "Relocation at scale"): the
 * supervisor machine sends START_BATCH and gets one BATCH_DONE per batch. Each unit's actor is a FlatActor
 * (`new FlatActor(logic, { parent: poolActor, id })`, runtime/flat-actor.ts: an xstate ActorRef of the same system,
 * without the ~1.3 KB per actor of xstate's `Actor` that a unit kept to S4), `logic` being the unit-source machine run
 * over its transition table (runtime/flat-machine.ts: the same declaration, and xstate's inspection events when the
 * host inspects): a child of the invoked pool actor (an inspector sees relocationSupervisor → pool → units; same
 * system and inspect observer), never in the supervisor's snapshot `children`, so supervisor work per event does not
 * grow with the unit count. A unit's machine is created when its payload budget is granted and it is within the
 * lookahead of the seal window, in inventory order (§7); until then the unit waits, in flight, without an actor. Its
 * driver (SourceUnit) is made when its turn comes
 * too, or at the start of the batch when it may have to act before (an Instance Spot closeSpot can reach, §12, or a
 * Spot already closing): a unit still queued is its plan, counted in flight through `queued()` (diagnostics) and ended
 * by `stopStarting`. Making 100k drivers up front kept them all alive until their turn, so most were promoted to the
 * old generation and died there, and every reply looked its unit up in a 100k-entry map (measured with
 * `npm run bench -- --n 100000`, three alternated pairs: the source's CPU per unit 7–12% lower without).
 *
 * A unit counts for its batch once it settles: detached at S1 (entering `following`, §13: Relocated at the cutover
 * submit terminal, not S4), restored or not started. From then the pool holds nothing of it; a detached unit's machine
 * is held only by the coordinator's Message Follow expiry queue until S4 (or Shutdown, §14).
 */
import type { AnyActorRef } from 'xstate';
import { FlatActor } from '../../flat-actor';
import type { PoolReport } from '../../../machines/relocation-supervisor.machine';
import { DETACHED_STATES, type UnitSourceOutput } from '../../../machines/unit-source.machine';
import type { NodeRef } from '../../../stores/types';
import type { SpotDefinition } from '../../definitions';
import { RelocationReason } from '../../../vocabulary';
import type { Hosted } from '../../objects';
import type { OutboundPorts } from '../ports';
import type { FollowWindow } from './unit';
import type { Inventory, UnitPlan } from '../inventory';
import { initialSealWindow, SEAL_GATE_DEFAULTS, SealGate, sealWindowBound } from './seal-gate';
import { SourceUnit, type UnitSourceLogic, type UnitStarter } from './unit';

/** What the pool needs from the operation that owns it (the coordinator). */
export interface UnitPoolOwner {
  readonly outbound: OutboundPorts;
  /** Reply waits, Message Follow and retransmission copies. */
  readonly window: FollowWindow;
  /** The unit-source machine with the driver's actions provided, as each unit's actor runs it (source/unit.ts). */
  readonly sourceLogic: UnitSourceLogic;
  /** Whether the units' actor system has an inspection observer (FlatActorOptions.inspected). */
  readonly inspected: boolean;
  /** A unit of the started batch (in flight from here: diagnostics, closeSpot ordering, §14 step 3). */
  registerSource(unit: SourceUnit): void;
  unregisterSource(unit: SourceUnit): void;
  /** §10.2 step 6: OnClosing(RelocationOut) on a moved PerActor shell. */
  closeRelocatedOut(spot: Hosted, onClosing: SpotDefinition['onClosing']): void;
}

/** Unit machines created per event-loop turn (each costs ~30–50 µs; more would stall replies to units in flight). */
const START_PER_TURN = 64;
/** Machines started ahead of the seal window at least (see `lookahead`). */
const LOOKAHEAD_MIN = 256;

/** The batch being started: its units in inventory order, and how far their machines were created. */
interface Run {
  readonly target: NodeRef;
  readonly parent: AnyActorRef;
  /**
   * The batch's plans in inventory order. Slots before `head` are cleared as it passes them: a started unit is held
   * by the coordinator until it settles, and this array must not keep every moved object of the batch alive (and in
   * the heap every major GC marks) until the whole batch ends (measured earlier: ~3.6 KB per unit).
   */
  readonly plans: (UnitPlan | undefined)[];
  /** Units made before their turn (see the header), by plan; taken from here when `head` reaches them. */
  readonly early: Map<UnitPlan, SourceUnit>;
  /** The next unit without a machine (earlier ones were started, or ended without one). */
  head: number;
  /** A budget wait is out for the unit at `head` (one at a time: the others wait behind it, §7 FIFO). */
  acquiring: boolean;
  /** More units were granted than one turn starts: the rest start in the next turn. */
  resume: NodeJS.Immediate | undefined;
  /** Units with a machine that have not sealed yet (prepared or preparing on the target, waiting for a permit). */
  unsealed: number;
  readonly settle: (unit: SourceUnit, failed?: RelocationReason) => void;
}

/** The unit at `head` has its machine (or ended): the run lets go of it. */
function advance(run: Run): void {
  if (run.early.size > 0) run.early.delete(run.plans[run.head]!);
  run.plans[run.head++] = undefined;
}

export class UnitPool implements UnitStarter {
  private stopping = false;
  private readonly live = new Set<SourceUnit>();
  /** PerActor shells that cut over: closed with RelocationOut once their member Actors moved (§10.2 step 6). */
  private readonly movedShells: UnitPlan[] = [];
  /** Bounds the units between seal and cutover submit by their observed stop time (§8 pacing). */
  readonly sealGate: SealGate;
  private run: Run | undefined;

  /**
   * The plans not started yet. A batch's plans are dropped once its units start: units in `following` keep this pool
   * (their parent) reachable until S4, and with it any plan it still held — the moved objects themselves (measured:
   * ~3.6 KB per unit kept alive through the Message Follow window).
   */
  private readonly batches: UnitPlan[][];

  constructor(
    private readonly coord: UnitPoolOwner,
    inventory: Inventory,
  ) {
    this.batches = inventory.batches.map((plans) => [...plans]);
    const units = inventory.batches[0].length + inventory.batches[1].length + inventory.batches[2].length;
    this.sealGate = new SealGate({ ...SEAL_GATE_DEFAULTS, initialWindow: initialSealWindow(units), maxWindow: sealWindowBound(units) });
  }

  /**
   * `parent` is the invoked pool actor: the units become its children. Every unit of the batch is in flight from
   * here (§7: no cap on concurrent units); each unit's machine is created in inventory order once its payload budget
   * is granted and it is within the lookahead of the seal window (see source/unit.ts), so units waiting their turn
   * cost no actor.
   */
  startBatch(batch: 1 | 2 | 3, target: NodeRef | undefined, parent: AnyActorRef, report: (event: PoolReport) => void): void {
    // §12: an Instance Spot closed since the inventory was fixed is not carried (Close came first); one still closing
    // gets a unit that only waits for its close to finish.
    const objects = this.coord.outbound.objects;
    const plans = this.batches[batch - 1]!.filter((plan) => plan.root.closing === undefined || objects.get(plan.root.key) === plan.root);
    this.batches[batch - 1] = [];
    let remaining = plans.length;
    let failure: RelocationReason | undefined;
    const finish = () => {
      this.run = undefined;
      if (batch === 2) this.closeMovedShells();
      report({ type: 'BATCH_DONE', batch, ...(failure !== undefined ? { failure } : {}) });
    };
    if (remaining === 0 || this.stopping || !target) {
      if (!target && remaining > 0) failure = RelocationReason.RelocationFailed; // units need a target (never for an empty host)
      // Reported asynchronously: the supervisor is still inside the transition that sent START_BATCH.
      if (this.stopping && remaining > 0) failure = RelocationReason.DeadlineExceeded;
      queueMicrotask(finish);
      return;
    }
    const run: Run = {
      target,
      parent,
      plans,
      early: new Map(),
      head: 0,
      acquiring: false,
      resume: undefined,
      unsealed: 0,
      settle: (unit, failed) => {
        this.live.delete(unit);
        this.coord.unregisterSource(unit);
        if (failed !== undefined) failure ??= failed;
        else if (unit.plan.kind === 'perActorShell') this.movedShells.push(unit.plan);
        if (--remaining === 0) finish();
      },
    };
    this.run = run;
    for (const plan of plans) if (plan.kind === 'instance' || plan.root.closing !== undefined) run.early.set(plan, this.makeUnit(run, plan));
    for (const unit of run.early.values()) if (unit.plan.root.closing !== undefined) unit.closeFirst();
    this.startGranted(run);
  }

  /** A unit's driver, registered in flight with the coordinator (replies, diagnostics, §14 step 3). */
  private makeUnit(run: Run, plan: UnitPlan): SourceUnit {
    const unit = new SourceUnit(this.coord.outbound, this.coord.window, plan, run.target, this.sealGate, this);
    this.coord.registerSource(unit);
    return unit;
  }

  /** The unit of the plan at `index`: made before (see `early`) or now. */
  private unitAt(run: Run, index: number): SourceUnit {
    const plan = run.plans[index]!;
    return (run.early.size > 0 && run.early.get(plan)) || this.makeUnit(run, plan);
  }

  /**
   * The units of the batch still queued without a driver (diagnostics: in flight, waiting for their turn or, behind
   * the head unit's budget wait, for payload budget).
   */
  *queued(): Iterable<UnitPlan> {
    const run = this.run;
    if (!run) return;
    for (let i = run.head; i < run.plans.length; i++) {
      const plan = run.plans[i];
      if (plan && !run.early.has(plan)) yield plan;
    }
  }

  /**
   * Creates the machines of the next units in inventory order (§7 FIFO) while they are within the lookahead of the
   * seal window: each with its payload budget, taken at once while the budget has room, else by one budget wait for
   * the unit at the head (the units behind it wait with it); at most START_PER_TURN per turn.
   */
  private startGranted(run: Run): void {
    const { outbound } = this.coord;
    let started = 0;
    while (run.head < run.plans.length && !run.acquiring && !this.stopping && run.unsealed < this.lookahead()) {
      if (started === START_PER_TURN) {
        // The rest in a later turn: creating thousands of machines at once blocks the event loop, and with it the
        // replies that end other units' source stop (S0→S1, §8). Measured: 630 ms for 10k units in one go.
        return this.resumeLater(run);
      }
      const unit = this.unitAt(run, run.head);
      if (unit.actor || unit.ended) {
        advance(run); // started early (a close) or ended without a machine
        continue;
      }
      const bytes = outbound.estimateBytes(unit.plan);
      const lease = outbound.tryAcquireBudget(run.target, bytes);
      if (lease) {
        advance(run);
        unit.granted(lease);
        this.start(unit);
        started++;
        continue;
      }
      // Kept while it waits, so that it is the unit found again (diagnostics, a STOP) until its turn.
      run.early.set(unit.plan, unit);
      const waiting = outbound.acquireBudget(run.target, bytes);
      // No transport: the units do not start (as a STOP before the seal).
      if (!waiting) return this.endUnstartedFrom(run, undefined);
      run.acquiring = true;
      waiting.then(
        (granted) => {
          run.acquiring = false;
          if (this.stopping || unit.actor || unit.ended) granted.release();
          else {
            advance(run);
            unit.granted(granted);
            this.start(unit);
          }
          this.startGranted(run);
        },
        () => {
          // The transport closed (peer gone for good, or shutdown): the units left fail before their seal.
          run.acquiring = false;
          this.endUnstartedFrom(run, RelocationReason.RelocationFailed);
        },
      );
    }
  }

  private resumeLater(run: Run): void {
    if (!run.resume) run.resume = setImmediate(() => ((run.resume = undefined), this.startGranted(run)));
  }

  /**
   * Machines started ahead of the seal window: enough that a permit always finds a prepared unit, few enough that a
   * unit prepared on the target seals soon after (its temporary queue expires after restoreValidityMs, §11) and
   * that machine creation does not crowd the turns that cut other units over. Units behind it stay in flight,
   * waiting without a machine (`queued`).
   */
  private lookahead(): number {
    return Math.max(LOOKAHEAD_MIN, 2 * this.sealGate.size);
  }

  /** Why a unit without a machine waits (diagnostics): for payload budget, or for its turn in the pipeline. */
  waitingReason(): 'budget' | 'queued' {
    return this.run?.acquiring ? 'budget' : 'queued';
  }

  /** Creates and starts a unit's machine (UnitStarter): a child of the pool actor, with this unit as its driver. */
  start(unit: SourceUnit): void {
    const run = this.run;
    if (!run || unit.actor) return;
    // Clock and inspect observer come from the parent's system.
    const actor = new FlatActor(this.coord.sourceLogic, { parent: run.parent, id: unit.plan.id, inspected: this.coord.inspected });
    unit.actor = actor;
    this.live.add(unit);
    run.unsealed++;
    unit.aheadOfSeal = true;
    actor.start();
    this.stepped(unit); // its entry action may have ended it at once (no budget, no transport)
  }

  /**
   * The unit's machine took a step (UnitStarter): every event before S1 reaches it through its driver, which reports
   * here once the machine has processed it, so the pool reads where the unit is from the machine's snapshot — no
   * subscription per unit (an observer, its closures and xstate's per-update notification: 2–3% of the source's CPU
   * in `npm run bench -- --n 100000`, three alternated pairs). Events after S1 (FOLLOW_EXPIRED, ROUTE_CUT) come from the follow window and
   * need no accounting here: the unit settled at S1.
   */
  stepped(unit: SourceUnit): void {
    const snapshot = unit.actor!.getSnapshot();
    if (snapshot.status === 'active' && snapshot.value === 'waiting') return;
    if (snapshot.value === 'sealed' && snapshot.status === 'active') return this.leftWaiting(unit);
    if (!this.live.has(unit)) return; // settled before
    if (snapshot.status === 'error') {
      this.coord.outbound.logger.error({ unit: unit.plan.id, err: snapshot.error }, 'relocation unit machine failed');
      return this.settle(unit, RelocationReason.RelocationFailed);
    }
    if (DETACHED_STATES.has(snapshot.value)) return this.settle(unit);
    if (snapshot.status !== 'done') return; // closing (§12): it ends when the close does
    const output = snapshot.output as UnitSourceOutput;
    // `closed` (§12) is no failure: the Spot closed first and there is nothing left to move.
    this.settle(unit, output.kind === 'restored' ? output.reason : output.kind === 'notStarted' ? (output.reason ?? RelocationReason.DeadlineExceeded) : undefined);
  }

  /** The unit left `waiting` (sealed, or ended before its seal): the next unit behind the lookahead may start. */
  private leftWaiting(unit: SourceUnit): void {
    const run = this.run;
    if (!unit.aheadOfSeal || !run) return;
    unit.aheadOfSeal = false;
    run.unsealed--;
    this.resumeLater(run);
  }

  /** Detached at S1, restored, not started or closed: the unit counts for its batch (see the header). */
  private settle(unit: SourceUnit, failed?: RelocationReason): void {
    this.leftWaiting(unit);
    this.run?.settle(unit, failed);
  }

  /** STOP reached a unit without a machine (UnitStarter): it ends `notStarted`. */
  endUnstarted(unit: SourceUnit, reason: RelocationReason = RelocationReason.DeadlineExceeded): void {
    const run = this.run;
    if (!run || unit.actor || unit.ended) return;
    unit.endedUnstarted();
    run.settle(unit, reason);
  }

  private endUnstartedFrom(run: Run, reason: RelocationReason | undefined): void {
    // Made first: ending the last unit finishes the batch, and the next batch may start meanwhile.
    const units: SourceUnit[] = [];
    for (let i = run.head; i < run.plans.length; i++) if (run.plans[i]) units.push(this.unitAt(run, i));
    for (const unit of units) this.endUnstarted(unit, reason);
  }

  /** §8: after the deadline (or on Shutdown) no new unit starts; started units go on to a safe terminal. */
  stopStarting(): void {
    this.stopping = true;
    for (const unit of this.live) unit.requestStop();
    if (this.run) this.endUnstartedFrom(this.run, undefined);
    // Units still waiting for a seal permit stop waiting; a permit never comes after this.
    this.sealGate.stop(new Error('relocation stopped starting units (deadline or shutdown)'));
  }

  private closeMovedShells(): void {
    for (const plan of this.movedShells.splice(0)) this.coord.closeRelocatedOut(plan.root, (plan.root.def as SpotDefinition).onClosing);
  }
}
