/**
 * The pool that owns the source unit actors of one Relocate (DESIGN.md measured traps): the supervisor
 * machine sends START_BATCH and gets one BATCH_DONE per batch; units live in a Map here, created with
 * createActor (same inspect observer), so supervisor work per event does not grow with the unit count.
 */
import { createActor } from 'xstate';
import type { PoolReport } from '../../machines/relocation-supervisor.machine';
import type { UnitSourceOutput } from '../../machines/unit-source.machine';
import type { NodeRef } from '../../stores/types';
import type { SpotDefinition } from '../definitions';
import { RelocationReason } from '../wire';
import type { RelocationCoordinator } from './coordinator';
import type { Inventory, UnitPlan } from './inventory';
import { SealGate } from './seal-gate';
import { SourceUnit } from './source-unit';

export class UnitPool {
  private stopping = false;
  private readonly live = new Set<SourceUnit>();
  /** PerActor shells that cut over: closed with RelocationOut once their member Actors moved (§10.2 step 6). */
  private readonly movedShells: UnitPlan[] = [];
  /** Bounds the units between seal and cutover submit by their observed stop time (§8 pacing). */
  readonly sealGate = new SealGate();

  constructor(
    private readonly coord: RelocationCoordinator,
    readonly inventory: Inventory,
  ) {}

  startBatch(batch: 1 | 2 | 3, target: NodeRef | undefined, report: (event: PoolReport) => void): void {
    const plans = this.inventory.batches[batch - 1];
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
      const unit = new SourceUnit(this.coord, plan, target, this.sealGate);
      const actor = createActor(this.coord.sourceMachine, { inspect: this.coord.host.options.inspect as never, clock: this.coord.host.clock });
      unit.actor = actor;
      this.coord.registerSource(actor, unit);
      this.live.add(unit);
      actor.subscribe({
        complete: () => {
          const output = actor.getSnapshot().output as UnitSourceOutput;
          this.live.delete(unit);
          this.coord.unregisterSource(actor, unit);
          if (output.kind === 'restored') failure ??= output.reason;
          else if (output.kind === 'notStarted') failure ??= output.reason ?? RelocationReason.DeadlineExceeded;
          else if (plan.kind === 'perActorShell') this.movedShells.push(plan);
          if (--remaining === 0) finish();
        },
        error: (error) => {
          this.coord.host.log('error', `relocation unit ${plan.id} machine failed`, error);
          this.live.delete(unit);
          failure ??= RelocationReason.RelocationFailed;
          if (--remaining === 0) finish();
        },
      });
      actor.start();
    }
  }

  /** §8: after the deadline (or on Shutdown) no new unit starts; started units go on to a safe terminal. */
  stopStarting(): void {
    this.stopping = true;
    for (const unit of this.live) unit.requestStop();
  }

  private closeMovedShells(): void {
    for (const plan of this.movedShells.splice(0)) this.coord.closeRelocatedOut(plan.root, (plan.root.def as SpotDefinition).onClosing);
  }
}
