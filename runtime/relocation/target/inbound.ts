/**
 * The target side of relocation (DESIGN.md "Unit handoff (target)", "Relocation at scale"; §9, §10.3, §11, §13):
 * batched `r.prepare` intake (types, capacity, the temporary queue of each unit), payload and parcel intake
 * (restore, relay-ready), cutover routing, and one machine per inbound parcel from relay-ready to open.
 *
 * A staged unit (prepared, payload not yet restored) has no machine yet: it is its registered temporary queue,
 * abandoned by an abort or by the shared staging expiry (§11: restore validity from prepare). The units of a
 * payload parcel that restore together start one parcel machine; its cutover wait is one entry of a shared queue.
 */
import { createActor } from 'xstate';
import { unitTargetMachine, type UnitTargetEvent, type UnitTargetOutput } from '../../../machines/unit-target.machine';
import { flatMachineLogic } from '../../flat-machine';
import type { NodeRef } from '../../../stores/types';
import type { Envelope } from '../../envelope';
import { nodeKey, sameNode, type ObjectKey } from '../../keys';
import { telemetry, unitKindAttributes } from '../../telemetry';
import { RelocationReason } from '../../../vocabulary';
import { compatible, describeType } from '../compatibility';
import { ExpiryQueue } from '../../expiry-queue';
import { decodeParcel, ParcelError } from '../parcel';
import { PARCEL_ID_PREFIX } from '../source/parcel-sender';
import { decodePayload } from '../payload';
import type { InboundPorts } from '../ports';
import type { CutoverMessage, PrepareMessage, PrepareUnit, RelayPartMessage } from '../protocol';
import { TargetParcel, type ParcelOwner, type UnitTargetLogic } from './parcel';
import { TargetUnit } from './unit';
import { FinishedUnit } from './finished-unit';

type PayloadResult = { ok: true; bytes: Buffer } | { ok: false; error: Error };

const INCOMPATIBLE = 'types, policies, adapters or capacity do not match this target';

/** A transport payload as received (Inbound.onPayload), until its intake turn. */
interface ReceivedPayload {
  readonly from: NodeRef;
  readonly payloadId: string;
  readonly result: PayloadResult;
}

export class Inbound implements ParcelOwner {
  /** Units in flight, and what is kept of ended ones while their finished window lasts (FinishedUnit). */
  private readonly units = new Map<string, TargetUnit | FinishedUnit>();
  private readonly stagingByKey = new Map<ObjectKey, TargetUnit>();
  private stagedObjects = 0;
  /** Units prepared and not yet ended (opened, discarded or abandoned): §4 accepted work, §14 step 3. */
  private active = 0;
  /** Finished units kept a while so late retransmissions and resent prepares are answered, then dropped. */
  private readonly finished: ExpiryQueue<readonly string[]>;
  /** §11: a staged unit whose payload does not arrive within restore validity is abandoned (unit ids). */
  private readonly stagingExpiry: ExpiryQueue<string>;
  /** §13: a parcel without its cutovers within the cutover wait falls back to the CAS. */
  private readonly cutoverWaits: ExpiryQueue<TargetParcel>;
  private readonly parcelByActor = new WeakMap<object, TargetParcel>();
  /** The unit-target machine with the drivers' actions, as each parcel's actor runs it (see TargetParcel). */
  private readonly machine: UnitTargetLogic;

  constructor(private readonly ports: InboundPorts) {
    const { clock, timing } = ports;
    this.finished = new ExpiryQueue(clock, Math.max(timing.relocationCutoverWaitTimeoutMs * 2, 5000), (ids) => {
      for (const id of ids) this.units.delete(id);
    });
    // Cleared by close() (§14): the transport is gone, no unit is advanced by a deadline any more.
    this.stagingExpiry = new ExpiryQueue(clock, timing.restoreValidityMs, (id) => {
      const unit = this.units.get(id);
      if (ports.closed() || !(unit instanceof TargetUnit) || !unit.staged) return;
      ports.logger.warn({ unit: id, source: unit.source.nodeId }, 'inbound relocation unit expired in staging (no payload within restore validity)');
      this.abandon(unit);
    });
    this.cutoverWaits = new ExpiryQueue(clock, timing.relocationCutoverWaitTimeoutMs, (parcel) => {
      if (!ports.closed() && parcel.actor.getSnapshot().status === 'active') parcel.actor.send({ type: 'CUTOVER_WAIT_ENDED' });
    });
    const parcel = (run: (p: TargetParcel) => void) => ({ self }: { self: object }) => {
      const p = this.parcelByActor.get(self);
      if (p) run(p);
    };
    this.machine = flatMachineLogic<UnitTargetEvent, UnitTargetOutput>(
      unitTargetMachine.provide({
        actions: {
          commitOwner: parcel((p) => p.commitOwner()),
          openDispatch: parcel((p) => p.openDispatch()),
          discard: parcel((p) => p.discard()),
        },
      }),
    );
  }

  /** Units prepared here and not yet ended. */
  get inFlight(): number {
    return this.active;
  }

  /** Objects of staged units: they count against capacity (§4). */
  get inboundObjects(): number {
    return this.stagedObjects;
  }

  /** The temporary queue for a key of a unit in flight here, if any. */
  staging(key: ObjectKey): ((env: Envelope) => void) | undefined {
    const unit = this.stagingByKey.get(key);
    return unit && ((env) => unit.stage(env));
  }

  unstage(unit: TargetUnit): void {
    let removed = false;
    for (const key of unit.keys) {
      if (this.stagingByKey.get(key) === unit) {
        this.stagingByKey.delete(key);
        removed = true;
      }
    }
    if (removed) this.stagedObjects -= unit.objectCount;
  }

  // ── intake ────────────────────────────────────────────────────────────────────────────

  /**
   * A batched `r.prepare`: each unit is handled exactly as if it had come alone (its own check, `r.prepared` or
   * `r.fail`, temporary queue and staging expiry); the type capabilities are checked once per message.
   */
  onPrepare(from: NodeRef, message: PrepareMessage): void {
    if (message.units.length === 0) return;
    // Once per message: the capabilities (§4 unit compatibility) and whether this host takes units at all. Replies
    // to the units do not change the host's state, so every unit of the message meets the same answers.
    const typeOk = message.types.map((cap) => {
      const def = this.ports.types.get(cap.type);
      return !!def && compatible(cap, describeType(def));
    });
    const refusal = this.ports.refusal();
    for (const p of message.units) this.prepareUnit(from, p, typeOk, refusal);
  }

  private prepareUnit(from: NodeRef, message: PrepareUnit, typeOk: readonly boolean[], refusal: string | undefined): void {
    const { ports } = this;
    // §17: resending the same relocation request does not create the temporary queue or Restore twice.
    if (this.units.has(message.u)) return void ports.replies.prepared(from, message.u);
    if (refusal !== undefined) return void ports.replies.fail(from, message.u, RelocationReason.RelocationFailed, refusal);
    // §4 unit compatibility: every type the unit uses, and room for its objects.
    for (const i of message.ty) if (!typeOk[i]) return void ports.replies.fail(from, message.u, RelocationReason.StateIncompatible, INCOMPATIBLE);
    if (ports.objects.size + this.stagedObjects + message.keys.length > ports.capacity) return void ports.replies.fail(from, message.u, RelocationReason.StateIncompatible, INCOMPATIBLE);
    for (const key of message.keys) {
      if (ports.objects.get(key) || this.stagingByKey.has(key))
        return void ports.replies.fail(from, message.u, RelocationReason.RelocationFailed, `object ${key} already exists on the target`);
    }
    const unit = new TargetUnit(ports, from, message);
    for (const key of unit.keys) this.stagingByKey.set(key, unit);
    this.stagedObjects += unit.objectCount;
    this.units.set(message.u, unit);
    this.active++;
    this.stagingExpiry.push(message.u);
    // The r.prepared replies of this turn go to the source as one message.
    ports.replies.prepared(from, message.u);
  }

  /**
   * A transport payload: one unit's (its id) or a parcel of many (`parcel:` id). Its intake (decode, restore,
   * relay-ready) runs in a turn of its own, oldest payload first, one per turn: the I/O that arrived with it —
   * cutovers and the owner CAS replies, which each unit's S2 waits for (§13) — is handled before it, not behind every
   * parcel of the same socket read. Measured with `npm run bench -- --n 100000` (parcels of 32 units, so several
   * arrive per read; the CAS sent in a microtask, owner-commit-batcher.ts): restored at once, the target CAS − S1 p99
   * was 55–57 ms (3 runs); deferred, 36–44 (6 runs). Measured again later on a faster machine (8 alternated pairs): at
   * once, the 100k move 12% shorter by the medians (a unit's stop is mostly this wait and the source's), but CAS − S1
   * p99 37–50 ms against 21–25: the busier target answers its CAS replies later. Taking in only the first payload of
   * a turn at once, or only while few CASes wait, gained nothing measurable.
   */
  onPayload(from: NodeRef, payloadId: string, result: PayloadResult): void {
    this.intake.push({ from, payloadId, result });
    if (this.intake.length === 1) setImmediate(() => this.takeIn());
  }

  /** Payloads received and not taken in yet (onPayload), oldest first. */
  private readonly intake: ReceivedPayload[] = [];

  /** Takes in the oldest payload received; the next one waits for a turn of its own. */
  private takeIn(): void {
    const next = this.intake.shift();
    if (!next) return;
    // Scheduled before this one runs: a throw here must not stall the ones behind it.
    if (this.intake.length > 0) setImmediate(() => this.takeIn());
    this.takeInPayload(next);
  }

  private takeInPayload({ from, payloadId, result }: ReceivedPayload): void {
    if (payloadId.startsWith(PARCEL_ID_PREFIX)) this.onParcel(from, payloadId, result);
    else {
      const restored: TargetUnit[] = [];
      this.restoreUnit(from, payloadId, result.ok ? result.bytes : result.error, restored);
      this.startParcel(restored);
    }
    // This payload's relay-ready (and failures) go now, one reply per payload: the source cuts its units over and
    // seals the next ones while this host takes in the payloads behind it.
    this.ports.replies.flush(from);
  }

  /**
   * A parcel: each unit inside goes its own way, exactly as if it had come alone — restored and answered
   * relay-ready, or (its own checksum failed) answered with an explicit failure so the source restores it (§13).
   * The units that restored start one parcel machine. A parcel the transport refused never reaches here whole: its
   * source learns it from the intake ack and aborts each unit it carried.
   */
  private onParcel(from: NodeRef, parcelId: string, result: PayloadResult): void {
    if (!result.ok) return this.ports.logger.warn({ parcel: parcelId, source: nodeKey(from), err: result.error }, 'inbound parcel failed intake');
    let decoded;
    try {
      decoded = decodeParcel(result.bytes);
    } catch (error) {
      if (!(error instanceof ParcelError)) throw error;
      // Which units it carried is unreadable: every unit from that source still waiting for its payload gets an
      // explicit failure before relay-ready (its source restores it, §11) rather than no reply at all.
      this.ports.logger.error({ parcel: parcelId, source: nodeKey(from), err: error }, 'inbound parcel is malformed; units awaiting a payload from it fail');
      for (const unit of [...this.units.values()]) if (unit instanceof TargetUnit && sameNode(unit.source, from) && unit.staged) this.failUnit(unit, `payload rejected: ${error.message}`);
      return;
    }
    const restored: TargetUnit[] = [];
    for (const u of decoded) this.restoreUnit(from, u.unit, u.ok ? u.payload : new Error(u.error), restored);
    this.startParcel(restored);
  }

  /** One unit's payload bytes, or why it has none (its checksum failed, or the transport refused it). */
  private restoreUnit(from: NodeRef, id: string, payload: Buffer | Error, restored: TargetUnit[]): void {
    const { ports } = this;
    const unit = this.units.get(id);
    if (!unit || !sameNode(unit.source, from)) {
      ports.logger.warn({ unit: id, source: nodeKey(from) }, 'payload matches no prepared unit');
      // An explicit failure before relay-ready: the source restores instead of crossing on silence (§11).
      if (!unit) ports.replies.fail(from, id, RelocationReason.RelocationFailed, 'no prepared unit on the target');
      return;
    }
    if (unit instanceof FinishedUnit ? unit.restored : unit.parcel) return void ports.replies.ready(unit.source, id); // resent: restore once
    // Abandoned before its payload came (expired, aborted): an explicit failure before relay-ready, so the source
    // restores its work (§11) instead of waiting for a reply that never comes.
    if (unit instanceof FinishedUnit || unit.abandoned) return void ports.replies.fail(from, id, RelocationReason.RelocationFailed, 'the target unit expired before its payload arrived');
    if (payload instanceof Error) return this.failUnit(unit, `payload rejected: ${payload.message}`);
    try {
      unit.restore(decodePayload(payload));
    } catch (error) {
      return this.failUnit(unit, `restore failed: ${(error as Error).message}`);
    }
    restored.push(unit);
    // Relay-ready of every unit restored in this turn goes to its source as one r.ready.
    ports.replies.ready(unit.source, id);
  }

  /** Restore failed (or its payload was refused): explicit failure before relay-ready; the source restores (§11). */
  private failUnit(unit: TargetUnit, error: string): void {
    this.ports.replies.fail(unit.source, unit.id, RelocationReason.RelocationFailed, error);
    this.abandon(unit);
  }

  /** The restored units of one payload start one parcel machine at relay-ready; the cutover wait starts now (§13). */
  private startParcel(units: TargetUnit[]): void {
    if (units.length === 0) return;
    const readyAt = this.ports.clock.now();
    for (const unit of units) unit.event('relayReady', undefined, readyAt);
    const parcel = this.newParcel(units, readyAt);
    this.cutoverWaits.push(parcel);
    parcel.cutoversBeforeStart();
  }

  newParcel(units: TargetUnit[], readyAt: number, commitFailed = false): TargetParcel {
    const parcel = new TargetParcel(this.ports, this, units, readyAt, commitFailed);
    const actor = createActor(this.machine, { inspect: this.ports.inspect as never });
    parcel.actor = actor;
    this.parcelByActor.set(actor, parcel);
    actor.subscribe({
      complete: () => this.parcelEnded(parcel, actor.getSnapshot().output as UnitTargetOutput),
      error: (error) => {
        this.ports.logger.error({ units: parcel.units.length, err: error }, 'inbound parcel machine failed');
        for (const unit of parcel.units) {
          this.unstage(unit);
          unit.discard();
        }
        this.unitsEnded(parcel.units);
      },
    });
    actor.start();
    return parcel;
  }

  private parcelEnded(parcel: TargetParcel, output: UnitTargetOutput): void {
    if (output.fellBack) for (const unit of parcel.units) telemetry.cutoverTimeout(unitKindAttributes(unit.prepare.kind));
    for (const unit of parcel.units) unit.release();
    this.unitsEnded(parcel.units);
    // The cutover wait queue keeps the parcel until its wait would have ended: not its units.
    parcel.units = [];
  }

  private unitsEnded(units: readonly TargetUnit[]): void {
    this.active -= units.length;
    for (const unit of units) this.units.set(unit.id, unit.finished());
    this.finished.push(units.map((u) => u.id));
    this.ports.unitsEnded();
  }

  // ── per-unit messages ─────────────────────────────────────────────────────────────────

  onRelayPart(message: RelayPartMessage): void {
    const unit = this.units.get(message.u);
    if (unit instanceof FinishedUnit) unit.lateRelay(message.relay);
    else unit?.onRelayPart(message);
  }

  onCutover(message: CutoverMessage): void {
    const unit = this.units.get(message.u);
    if (unit instanceof FinishedUnit) unit.lateRelay(message.relay);
    else if (unit && unit.onCutover(message)) unit.parcel?.onCutover();
  }

  /** The source gave up before its payload restored here (deadline, shutdown, a refused payload; §11). */
  onAbort(id: string): void {
    const unit = this.units.get(id);
    if (unit instanceof TargetUnit && unit.staged) this.abandon(unit);
  }

  private abandon(unit: TargetUnit): void {
    this.unstage(unit);
    unit.abandon();
    this.unitsEnded([unit]);
  }

  // ── shutdown and diagnostics ──────────────────────────────────────────────────────────

  /** §14: deadlines stop advancing units (the transport is gone). */
  close(): void {
    // Payloads received before the close are taken in as if they had been at once (their reads came first).
    for (let next = this.intake.shift(); next; next = this.intake.shift()) this.takeInPayload(next);
    this.finished.clear();
    this.stagingExpiry.clear();
    this.cutoverWaits.clear();
  }

  /** Units in flight here, for blockers (count-limited by the caller). */
  *inFlightUnits(): IterableIterator<TargetUnit> {
    for (const unit of this.units.values()) if (unit instanceof TargetUnit && (unit.staged || unit.parcel?.actor.getSnapshot().status === 'active')) yield unit;
  }
}
