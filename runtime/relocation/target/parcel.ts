/**
 * Driver of one inbound parcel's machine (machines/unit-target.machine.ts): the units that restored together go
 * through relay-ready, cutover, the owner CAS (S2) and dispatch opening (S3) together. Per-unit semantics stay:
 * each unit has its own cutover, its own CAS result and retries, its own checksum and failure. When units of one
 * parcel diverge, the driver splits them into a parcel of their own, so a unit's state is always its machine's:
 * - cutovers that came in one turn go on without waiting for the parcel's other units (those keep their wait);
 * - units whose CAS failed for good leave the parcel and are discarded; the rest open.
 */
import type { Actor } from 'xstate';
import { FALLBACK_STATES, type UnitTargetEvent, type UnitTargetOutput } from '../../../machines/unit-target.machine';
import type { FlatMachineLogic } from '../../flat-machine';
import { StoreUnavailableError } from '../../../stores/types';
import { sleep } from '../../clock';
import { idOf } from '../../keys';
import type { CommitOutcome } from '../owner-commit-batcher';
import type { InboundPorts } from '../ports';
import type { TargetUnit } from './unit';

/** What the parcel needs from the intake that holds it. */
export interface ParcelOwner {
  /** Starts a parcel machine for these units (each unit's `parcel` is set to it). */
  newParcel(units: TargetUnit[], readyAt: number, commitFailed?: boolean): TargetParcel;
  /** The unit's temporary queue is no longer needed: later messages route to its adopted objects. */
  unstage(unit: TargetUnit): void;
}

/**
 * How a parcel's actor runs the unit-target machine: its declaration over a transition table (runtime/flat-machine.ts),
 * as the source's unit machines run (issue [6/10]).
 */
export type UnitTargetLogic = FlatMachineLogic<UnitTargetEvent, UnitTargetOutput>;

export class TargetParcel {
  actor!: Actor<UnitTargetLogic>;
  /** Units whose first cutover arrived (counted once each). */
  private cutovers = 0;
  private checkScheduled = false;

  constructor(
    private readonly ports: InboundPorts,
    private readonly owner: ParcelOwner,
    public units: TargetUnit[],
    /** Relay-ready of these units: restore validity (§11) counts from here. */
    readonly readyAt: number,
    /** Split off after its CAS failed for good: `committing` ends at once in `discarded`. */
    private readonly commitFailed = false,
  ) {
    for (const unit of units) {
      unit.parcel = this;
      if (unit.hasCutover) this.cutovers++;
    }
  }

  get state(): string {
    return this.actor.getSnapshot().value;
  }

  /** A unit of this parcel got its first cutover. */
  onCutover(): void {
    this.cutovers++;
    this.goOnIfCutOver();
  }

  /**
   * Units whose cutover came before their payload was restored (a source whose reply wait ended cuts over without
   * relay-ready, §8; the payload read before it is taken in a turn later) go on as if it came now, not at the
   * cutover-wait fallback.
   */
  cutoversBeforeStart(): void {
    if (this.cutovers > 0) this.goOnIfCutOver();
  }

  private goOnIfCutOver(): void {
    if (this.state !== 'relayReady') return;
    if (this.cutovers === this.units.length) return void this.actor.send({ type: 'CUTOVER' });
    // Cutovers of one parcel normally come in one turn; the ones that did go on at the end of it.
    if (this.checkScheduled) return;
    this.checkScheduled = true;
    setImmediate(() => {
      this.checkScheduled = false;
      this.goOnWithCutOver();
    });
  }

  private goOnWithCutOver(): void {
    if (this.state !== 'relayReady' || this.cutovers === 0) return;
    if (this.cutovers === this.units.length) return void this.actor.send({ type: 'CUTOVER' });
    const cutOver = this.units.filter((u) => u.hasCutover);
    this.units = this.units.filter((u) => !u.hasCutover);
    this.cutovers = 0;
    this.owner.newParcel(cutOver, this.readyAt).actor.send({ type: 'CUTOVER' });
  }

  // ── actions of the unit-target machine ───────────────────────────────────────────────

  /** S2: CAS source → target for every unit, each retried on store errors until restore validity ends (§11). */
  commitOwner(): void {
    if (this.commitFailed) return queueMicrotask(() => this.actor.send({ type: 'COMMIT_FAILED' }));
    const failed: TargetUnit[] = [];
    let remaining = this.units.length;
    // Read at the first result, not here: this entry action runs before the machine's snapshot names the state it
    // enters (`committing`, or `committingAfterFallback` after CUTOVER_WAIT_ENDED).
    let fellBack: boolean | undefined;
    // S2 of each unit is when its own CAS result arrived (the units of one store reply share one clock read).
    const settle = (unit: TargetUnit, ok: boolean, s2: number) => {
      if (ok) {
        fellBack ??= this.fellBack;
        unit.s2 = s2;
        unit.event('committed', 'S2', s2, fellBack);
      } else failed.push(unit);
      if (--remaining === 0) this.committed(failed);
    };
    const single: TargetUnit[] = [];
    for (const unit of this.units) {
      if (unit.prepare.kind === 'spotWide') void this.commitAggregate(unit).then((ok) => settle(unit, ok, this.ports.clock.now()));
      else single.push(unit);
    }
    if (single.length > 0) this.commitRecords(single, 0, settle);
  }

  private committed(failed: TargetUnit[]): void {
    if (failed.length === 0) return void this.actor.send({ type: 'COMMITTED' });
    if (failed.length === this.units.length) return void this.actor.send({ type: 'COMMIT_FAILED' });
    const lost = new Set(failed);
    this.units = this.units.filter((u) => !lost.has(u));
    this.owner.newParcel(failed, this.readyAt, true).actor.send({ type: 'CUTOVER' });
    this.actor.send({ type: 'COMMITTED' });
  }

  /** One coalesced owner commit per tick for every unit committing now (per-unit result, per-unit retry). */
  private commitRecords(units: TargetUnit[], attempt: number, settle: (unit: TargetUnit, ok: boolean, s2: number) => void): void {
    this.ports.owners.submit(
      units.map((u) => u.commitEntry()),
      (outcomes: CommitOutcome[]) => {
        const retry: TargetUnit[] = [];
        let lastError: unknown;
        const now = this.ports.clock.now();
        for (let i = 0; i < outcomes.length; i++) {
          const outcome = outcomes[i]!;
          const unit = units[i]!;
          if ('error' in outcome) {
            if (this.mayRetry(outcome.error)) retry.push(unit);
            else settle(unit, this.gaveUp(unit, outcome.error), now);
            lastError = outcome.error;
            continue;
          }
          if (outcome.status !== 'applied') {
            this.ports.logger.error({ unit: unit.id }, 'owner changed under the relocation unit; prepared objects discarded');
            settle(unit, false, now);
            continue;
          }
          unit.restored[0]!.authorityGeneration = outcome.record!.authorityGeneration;
          settle(unit, true, now);
        }
        if (retry.length === 0) return;
        void sleep(this.ports.clock, Math.min(1000, 20 * 2 ** attempt))
          .catch(() => undefined)
          .then(() => {
            if (this.mayRetry(lastError)) this.commitRecords(retry, attempt + 1, settle);
            else for (const unit of retry) settle(unit, this.gaveUp(unit, lastError), this.ports.clock.now());
          });
      },
    );
  }

  private mayRetry(error: unknown): boolean {
    return error instanceof StoreUnavailableError && this.ports.clock.now() < this.readyAt + this.ports.timing.restoreValidityMs && !this.ports.closed();
  }

  private gaveUp(unit: TargetUnit, error: unknown): false {
    this.ports.logger.error({ unit: unit.id, err: error }, 'target ownership not confirmed before restore validity ended');
    return false;
  }

  /** §10.3: a SpotWide Spot and its members flip in one aggregate commit. */
  private async commitAggregate(unit: TargetUnit): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.aggregateOnce(unit);
      } catch (error) {
        if (!this.mayRetry(error)) return this.gaveUp(unit, error);
        await sleep(this.ports.clock, Math.min(1000, 20 * 2 ** attempt)).catch(() => undefined);
      }
    }
  }

  private async aggregateOnce(unit: TargetUnit): Promise<boolean> {
    const { location, self } = this.ports;
    const relocationId = unit.id;
    const opId = `reloc:${relocationId}`;
    const root = unit.restored[0]!;
    const spot = idOf(root.key);
    const members = unit.restored.slice(1);
    const header = await location.stageAggregate({
      relocationId,
      spot,
      expectedSpotAuthorityGeneration: root.authorityGeneration,
      members: members.map((m) => ({ object: idOf(m.key), expectedAuthorityGeneration: m.authorityGeneration })),
      opId: `${opId}:stage`,
    });
    const result = await location.commitAggregate({ relocationId, spot, owner: self, opId, header });
    await location.discardAggregate(relocationId, spot).catch(() => undefined);
    if (result.status === 'data-lost') {
      // §13: unrecoverable; never guessed or rolled back.
      this.ports.logger.error({ unit: relocationId }, 'SpotWide target list does not match its header (DataLost)');
      return false;
    }
    if (result.status !== 'applied') return false;
    root.authorityGeneration = result.spot!.authorityGeneration;
    for (const m of members) m.authorityGeneration += 1; // the flip bumps every member's fencing token once
    return true;
  }

  /** S3 for every unit: merge in order, switch the route, open dispatch. */
  openDispatch(): void {
    const s3 = this.ports.clock.now();
    for (const unit of this.units) {
      this.owner.unstage(unit);
      unit.open(s3);
    }
  }

  /** After the CAS failed for good (§11): nothing staged ran; requests get their one terminal. */
  discard(): void {
    for (const unit of this.units) {
      this.owner.unstage(unit);
      unit.discard();
    }
  }

  /** The cutover-wait fallback (§13), not a cutover, led to this parcel's CAS: which state it is in says so. */
  get fellBack(): boolean {
    return FALLBACK_STATES.has(this.state);
  }
}
