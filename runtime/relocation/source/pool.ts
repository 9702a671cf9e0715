/**
 * The pool that owns the source unit actors of one Relocate (DESIGN.md measured traps, "Relocation at scale"): the
 * supervisor machine sends START_BATCH and gets one BATCH_DONE per batch. Each unit is created with
 * `createActor(machine, { parent: poolActor, id })`: a child of the invoked pool actor (an inspector sees
 * relocationSupervisor → pool → units; same system, clock and inspect observer), never in the supervisor's snapshot
 * `children`, so supervisor work per event does not grow with the unit count.
 *
 * A unit counts for its batch once it settles: detached at S1 (entering `following`, §13: Relocated at the cutover
 * submit terminal, not S4), restored or not started. From then the pool holds nothing of it; a detached unit's machine
 * is held only by the coordinator's Message Follow expiry queue until S4 (or Shutdown, §14).
 */
import { createActor, type AnyActorRef } from 'xstate';
import type { PoolReport } from '../../../machines/relocation-supervisor.machine';
import { DETACHED_STATES, type unitSourceMachine, type UnitSourceOutput } from '../../../machines/unit-source.machine';
import type { NodeRef } from '../../../stores/types';
import type { SpotDefinition } from '../../definitions';
import { RelocationReason } from '../../../vocabulary';
import type { Hosted } from '../../objects';
import type { OutboundPorts } from '../ports';
import type { FollowWindow } from './unit';
import type { Inventory, UnitPlan } from '../inventory';
import { SealGate } from './seal-gate';
import { SourceUnit } from './unit';

/** What the pool needs from the operation that owns it (the coordinator). */
export interface UnitPoolOwner {
  readonly outbound: OutboundPorts;
  /** Reply waits, Message Follow and retransmission copies. */
  readonly window: FollowWindow;
  /** The unit-source machine with the driver's actions provided. */
  readonly sourceMachine: typeof unitSourceMachine;
  registerSource(actor: object, unit: SourceUnit): void;
  unregisterSource(actor: object, unit: SourceUnit): void;
  /** §10.2 step 6: OnClosing(RelocationOut) on a moved PerActor shell. */
  closeRelocatedOut(spot: Hosted, onClosing: SpotDefinition['onClosing']): void;
}

export class UnitPool {
  private stopping = false;
  private readonly live = new Set<SourceUnit>();
  /** PerActor shells that cut over: closed with RelocationOut once their member Actors moved (§10.2 step 6). */
  private readonly movedShells: UnitPlan[] = [];
  /** Bounds the units between seal and cutover submit by their observed stop time (§8 pacing). */
  readonly sealGate = new SealGate();

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
  }

  /** `parent` is the invoked pool actor: the units become its children. */
  startBatch(batch: 1 | 2 | 3, target: NodeRef | undefined, parent: AnyActorRef, report: (event: PoolReport) => void): void {
    // §12: an Instance Spot closed since the inventory was fixed is not carried (Close came first); one still closing
    // gets a unit that only waits for its close to finish.
    const objects = this.coord.outbound.objects;
    const plans = this.batches[batch - 1]!.filter((plan) => plan.root.closing === undefined || objects.get(plan.root.key) === plan.root);
    this.batches[batch - 1] = [];
    let remaining = plans.length;
    let failure: RelocationReason | undefined;
    const finish = () => {
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
    for (const plan of plans) {
      const unit = new SourceUnit(this.coord.outbound, this.coord.window, plan, target, this.sealGate);
      // Clock and inspect observer come from the parent's system.
      const actor = createActor(this.coord.sourceMachine, { parent, id: plan.id });
      unit.actor = actor;
      this.coord.registerSource(actor, unit);
      this.live.add(unit);
      const settle = (failed?: RelocationReason) => {
        subscription.unsubscribe();
        this.live.delete(unit);
        this.coord.unregisterSource(actor, unit);
        if (failed !== undefined) failure ??= failed;
        else if (plan.kind === 'perActorShell') this.movedShells.push(plan);
        if (--remaining === 0) finish();
      };
      const subscription = actor.subscribe({
        next: (snapshot) => {
          if (DETACHED_STATES.has(snapshot.value)) return settle();
          if (snapshot.status !== 'done') return;
          const output = snapshot.output as UnitSourceOutput;
          // `closed` (§12) is no failure: the Spot closed first and there is nothing left to move.
          settle(output.kind === 'restored' ? output.reason : output.kind === 'notStarted' ? (output.reason ?? RelocationReason.DeadlineExceeded) : undefined);
        },
        error: (error) => {
          this.coord.outbound.logger.error({ unit: plan.id, err: error }, 'relocation unit machine failed');
          settle(RelocationReason.RelocationFailed);
        },
      });
      actor.start();
      if (plan.root.closing !== undefined) unit.closeFirst();
    }
  }

  /** §8: after the deadline (or on Shutdown) no new unit starts; started units go on to a safe terminal. */
  stopStarting(): void {
    this.stopping = true;
    for (const unit of this.live) unit.requestStop();
    // Units still waiting for a seal permit stop waiting; a permit never comes after this.
    this.sealGate.stop(new Error('relocation stopped starting units (deadline or shutdown)'));
  }

  private closeMovedShells(): void {
    for (const plan of this.movedShells.splice(0)) this.coord.closeRelocatedOut(plan.root, (plan.root.def as SpotDefinition).onClosing);
  }
}
