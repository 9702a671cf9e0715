/**
 * Driver of one target unit (DESIGN.md "Unit handoff (target)"): the temporary queue group, restore, the
 * owner CAS (S2), the ordered merge and dispatch opening (S3). Nothing staged runs before the CAS applied.
 */
import type { Actor } from 'xstate';
import type { unitTargetMachine } from '../../machines/unit-target.machine';
import { StoreUnavailableError, type NodeRef, type ObjectId } from '../../stores/types';
import { sleep } from '../clock';
import type { SpotDefinition } from '../definitions';
import type { Envelope } from '../envelope';
import { idOf, spotKey } from '../keys';
import type { Lane, WorkItem } from '../lane';
import type { Hosted } from '../objects';
import { telemetry } from '../telemetry';
import { RelocationReason } from '../../vocabulary';
import type { RelocationCoordinator } from './coordinator';
import { decodePayload, type UnitPayload } from './payload';
import { RELOCATION_MESSAGE, type CutoverMessage, type PrepareUnit, type RelayPartMessage } from './protocol';
import type { UnitEvent } from './events';

export class TargetUnit {
  actor!: Actor<typeof unitTargetMachine>;
  readonly keys: string[];
  /** Saved work: the source's unexecuted queue, as captured. */
  private saved: WorkItem[] = [];
  /** The pre-boundary relay span; a retransmission replaces it whole (§13). */
  private relay: Envelope[] = [];
  /** Leading parts of the relay batch being received (a batch larger than one frame). */
  private incoming: Envelope[] = [];
  /** Remaining temporary work: what arrived here (followed or direct) after the relay, in arrival order. */
  private temporary: Envelope[] = [];
  private restored: Hosted[] = [];
  private lane: Lane | undefined;
  /** The payload arrived and was restored (a resent payload is answered, never restored twice). */
  private payloadRestored = false;

  /** Still waiting for its payload (a parcel that cannot be read fails these explicitly, see coordinator). */
  get awaitingPayload(): boolean {
    return !this.payloadRestored && this.actor.getSnapshot().status === 'active';
  }

  /**
   * The unit ended (dispatch opened, or discarded): the coordinator keeps it a while longer to recognise a resent
   * prepare or payload, so it lets go of everything heavy now — the objects belong to the Object Server (issue
   * [6/10] RSS: finished units held ~7 KB each until their entry expired).
   */
  releaseFinished(): void {
    this.restored = [];
    this.saved = [];
    this.relay = [];
    this.incoming = [];
    this.temporary = [];
    this.lane = undefined;
  }
  private readyAt = 0;
  private s2 = 0;
  private opened = false;
  private relayIds = new Set<string>();

  constructor(
    private readonly coord: RelocationCoordinator,
    readonly source: NodeRef,
    readonly prepare: PrepareUnit,
  ) {
    this.keys = prepare.keys;
  }

  get objectCount(): number {
    return this.keys.length;
  }

  /**
   * Checks types and capacity before registering the temporary queue. `typeOk[i]`: whether the prepare message's
   * i-th capability matches this target (checked once per message, §4 unit compatibility).
   */
  check(typeOk: readonly boolean[]): RelocationReason | undefined {
    const host = this.coord.host;
    for (const i of this.prepare.ty) if (!typeOk[i]) return RelocationReason.StateIncompatible;
    if (host.objects.size + this.coord.inboundObjects + this.keys.length > host.options.capacity) return RelocationReason.StateIncompatible;
    return undefined;
  }

  /** The temporary queue of every object of this unit (§10.3: one group, each record keeps its target). */
  stage = (env: Envelope): void => {
    if (this.opened) return void this.coord.host.router.dispatch(env, true);
    this.temporary.push(env);
  };

  onPayload(result: { ok: true; bytes: Buffer } | { ok: false; error: Error }): void {
    if (this.payloadRestored) return void this.coord.control.ready(this.source, this.prepare.u); // resent: restore once
    // Abandoned before its payload came (expired, aborted): an explicit failure before relay-ready, so the source
    // restores its work (§11) instead of waiting for a reply that never comes.
    if (this.actor.getSnapshot().status !== 'active')
      return void this.reply({ t: RELOCATION_MESSAGE.fail, u: this.prepare.u, reason: RelocationReason.RelocationFailed, error: 'the target unit expired before its payload arrived' });
    if (!result.ok) return this.fail(RelocationReason.RelocationFailed, `payload rejected: ${result.error.message}`);
    try {
      this.restore(decodePayload(result.bytes));
      this.payloadRestored = true;
    } catch (error) {
      this.restored = [];
      return this.fail(RelocationReason.RelocationFailed, `restore failed: ${(error as Error).message}`);
    }
    this.readyAt = this.coord.host.clock.now();
    // Relay-ready of every unit restored in this turn goes to its source as one r.ready.
    this.coord.control.ready(this.source, this.prepare.u);
    this.event('relayReady', undefined, this.readyAt);
    this.actor.send({ type: 'RESTORED' });
    this.coord.awaitCutover(this);
  }

  private restore(payload: UnitPayload): void {
    const host = this.coord.host;
    const lane = host.objects.newLane();
    lane.pause(); // nothing runs before the owner CAS and the merge (§10.3)
    this.lane = lane;
    const pendingTicks = new Map<string, Set<string>>();
    for (const item of payload.queue) if (item.k === 'tick') (pendingTicks.get(item.to) ?? pendingTicks.set(item.to, new Set()).get(item.to)!).add(item.name);
    const seqs = new Map<string, Map<string, number>>();
    const sharedLane = payload.kind === 'spotWide';
    for (const c of payload.objects) {
      const def = host.objects.definition(c.type);
      const ownLane = sharedLane || c.key === payload.objects[0]!.key ? lane : host.objects.newLane();
      const hosted = host.objects.newHosted(c.key, def, c.mode, ownLane, c.gen, c.auth, c.spot);
      const policy = def.relocation;
      // §9: PreserveStateWith restores the adapter's bytes; RecreateOnRelocation and PerActor shells run the factory.
      hosted.state = c.state !== undefined && policy.kind === 'preserve' ? policy.restore(Buffer.from(c.state.buffer, c.state.byteOffset, c.state.length)) : def.create(c.key.slice(2));
      seqs.set(c.key, hosted.timers.install(c.timers, pendingTicks.get(c.key) ?? new Set()));
      this.restored.push(hosted);
    }
    this.saved = payload.queue.map((item): WorkItem => {
      if (item.k === 'msg') return { k: 'msg', to: item.to, env: item.env };
      return { k: 'tick', to: item.to, name: item.name, seq: seqs.get(item.to)?.get(item.name) ?? -1 };
    });
  }

  /** A leading part of a relay batch too large for one frame; the batch's first frame starts the span afresh. */
  onRelayPart(message: RelayPartMessage): void {
    if (this.opened) return this.deliverLate(message.relay);
    if (message.first) this.incoming = [];
    for (const env of message.relay) this.incoming.push(env);
  }

  onCutover(message: CutoverMessage): void {
    if (this.opened) return this.deliverLate(message.relay);
    // Full replacement of the pre-boundary span (§13) by the whole (re)transmitted batch, never a per-message merge.
    this.relay = message.first ? message.relay : [...this.incoming, ...message.relay];
    this.incoming = [];
    this.actor.send({ type: 'CUTOVER' });
  }

  /** A late retransmission after dispatch opened: deliver only what was not relayed before. */
  private deliverLate(relay: readonly Envelope[]): void {
    for (const env of relay) if (!this.relayIds.has(env.id)) this.coord.host.router.dispatch(env, true);
  }

  onAbort(): void {
    this.actor.send({ type: 'ABORT' });
  }

  /** Per-unit (rare): after any batched reply of this turn, so it never overtakes this unit's `r.prepared`. */
  private reply(message: { t: string } & Record<string, unknown>): void {
    this.coord.control.flush(this.source);
    this.coord.host.transport?.send(this.source, message);
  }

  private fail(reason: RelocationReason, error: string): void {
    this.reply({ t: RELOCATION_MESSAGE.fail, u: this.prepare.u, reason, error });
    this.actor.send({ type: 'RESTORE_FAILED' });
  }

  // ── actions of the unit-target machine ───────────────────────────────────────────────

  /** S2: CAS source → target, retried on store errors until restore validity ends (§11). */
  commitOwner(): void {
    void this.commitLoop();
  }

  private async commitLoop(): Promise<void> {
    const host = this.coord.host;
    const validUntil = this.readyAt + host.options.timing.restoreValidityMs;
    const opId = `reloc:${this.prepare.u}`;
    for (let attempt = 0; ; attempt++) {
      try {
        const ok = await this.cas(opId);
        if (ok) {
          this.s2 = host.clock.now();
          this.event('committed', 'S2', this.s2, { fellBack: this.fellBack });
          return void this.actor.send({ type: 'COMMITTED' });
        }
        host.logger.error({ unit: this.prepare.u }, 'inbound relocation unit: owner changed under the unit; prepared objects discarded');
        return void this.actor.send({ type: 'COMMIT_FAILED' });
      } catch (error) {
        if (!(error instanceof StoreUnavailableError) || host.clock.now() >= validUntil || this.coord.closed) {
          host.logger.error({ unit: this.prepare.u, err: error }, 'inbound relocation unit: target ownership not confirmed before restore validity ended');
          return void this.actor.send({ type: 'COMMIT_FAILED' });
        }
        await sleep(host.clock, Math.min(1000, 20 * 2 ** attempt)).catch(() => undefined);
      }
    }
  }

  private async cas(opId: string): Promise<boolean> {
    const host = this.coord.host;
    const location = host.stores.location;
    const root = this.restored[0]!;
    const rootId: ObjectId = idOf(root.key);
    if (this.prepare.kind === 'spotWide') {
      const members = this.restored.slice(1);
      const header = await location.stageAggregate({
        relocationId: this.prepare.u,
        spot: rootId,
        expectedSpotAuthorityGeneration: root.authorityGeneration,
        members: members.map((m) => ({ object: idOf(m.key), expectedAuthorityGeneration: m.authorityGeneration })),
        opId: `${opId}:stage`,
      });
      const result = await location.commitAggregate({ relocationId: this.prepare.u, spot: rootId, owner: host.self, opId, header });
      await location.discardAggregate(this.prepare.u, rootId).catch(() => undefined);
      if (result.status === 'data-lost') {
        // §13: unrecoverable; never guessed or rolled back.
        host.logger.error({ unit: this.prepare.u }, 'inbound relocation unit: SpotWide target list does not match its header (DataLost)');
        return false;
      }
      if (result.status !== 'applied') return false;
      root.authorityGeneration = result.spot!.authorityGeneration;
      for (const m of members) m.authorityGeneration += 1; // the flip bumps every member's fencing token once
      return true;
    }
    // One coalesced casMany per tick for every unit committing now (per-unit result, per-unit retry).
    const result = await this.coord.casBatcher.cas({ object: rootId, opId, expectedAuthorityGeneration: root.authorityGeneration, owner: host.self });
    if (result.status !== 'applied') return false;
    root.authorityGeneration = result.record!.authorityGeneration;
    return true;
  }

  /** Merge in order, switch the route, OnRelocationReadyCompleted, open dispatch (S3). */
  openDispatch(): void {
    const host = this.coord.host;
    this.opened = true;
    for (const env of this.relay) this.relayIds.add(env.id);
    for (const o of this.restored) {
      host.objects.adopt(o);
      host.router.invalidate(o.key);
    }
    this.coord.unstage(this);
    const lane = this.lane!;
    const root = this.restored[0]!;
    if (this.prepare.kind === 'spotWide' && (root.def as SpotDefinition).readiness === 'ApplicationSignaled') host.objects.runReadyCompleted(root, 'Relocated');
    const items: WorkItem[] = [...this.saved, ...this.relay.map((env): WorkItem => ({ k: 'msg', to: env.to, env })), ...this.temporary.map((env): WorkItem => ({ k: 'msg', to: env.to, env }))];
    this.saved = [];
    this.temporary = [];
    for (const item of items) {
      const owner = host.objects.get(item.to);
      if (!owner) continue;
      if (item.k === 'msg') host.objects.deliver(item.env);
      else owner.lane.push(item);
    }
    for (const o of this.restored) o.timers.start();
    for (const o of this.restored) if (o.lane !== lane) o.lane.resume();
    lane.resume();
    const s3 = host.clock.now();
    telemetry.targetResume(s3 - this.s2, { unitKind: this.prepare.kind });
    this.event('opened', 'S3', s3);
    if (this.prepare.kind === 'perActorShell') {
      // Member Actors whose own units opened before this shell re-link to it now.
      for (const o of host.objects.values()) if (o.kind === 'actor' && o.spotId === root.id) root.members?.add(o.id);
    }
    if (root.kind === 'actor' && root.spotId !== undefined) host.objects.get(spotKey(root.spotId))?.members?.add(root.id);
  }

  /**
   * §11, before relay-ready (abort, restore failure, staging expiry): what was prepared is dropped and nothing of
   * the temporary queue runs here or gets a terminal from this target; it goes back to routing, which returns it
   * to its origin to re-resolve the owner (still the source, which kept processing).
   */
  abandon(): void {
    const host = this.coord.host;
    this.event('discarded', undefined, host.clock.now());
    this.coord.unstage(this);
    for (const o of this.restored) o.timers.clear();
    this.restored = [];
    this.lane = undefined;
    const temporary = [...this.incoming, ...this.relay, ...this.temporary];
    this.incoming = [];
    this.relay = [];
    this.temporary = [];
    this.saved = [];
    for (const env of temporary) host.router.dispatch(env, true);
  }

  /** After the relay-ready boundary, a CAS that failed for good: the prepared objects and queue are removed (§11). */
  discard(): void {
    const host = this.coord.host;
    this.event('discarded', undefined, host.clock.now());
    this.coord.unstage(this);
    for (const o of this.restored) o.timers.clear();
    this.restored = [];
    // §11: nothing in the temporary queue ran; requests get their one terminal.
    for (const env of [...this.relay, ...this.temporary]) host.router.terminal(env, { ok: false, kind: 'unavailable', error: `relocation of ${env.to} was discarded` });
    this.relay = [];
    this.temporary = [];
    this.saved = [];
  }

  private event(state: UnitEvent['state'], point: UnitEvent['point'], at: number, extra: Partial<UnitEvent> = {}): void {
    if (!this.coord.unitEvents.active) return;
    this.coord.emitUnit({ side: 'target', unit: this.prepare.u, kind: this.prepare.kind, state, ...(point ? { point } : {}), objects: this.keys, at, ...extra });
  }

  get fellBack(): boolean {
    return this.actor.getSnapshot().context.fellBack;
  }
}
