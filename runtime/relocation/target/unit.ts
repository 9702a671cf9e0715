/**
 * One inbound relocation unit on the target (DESIGN.md "Unit handoff (target)"): its temporary queue group, the
 * restore, its relay span and its merge and dispatch opening (S3). Its lifecycle after restore is the machine of
 * the inbound parcel it is in (target-parcel.ts); before that it is only staged: the temporary queue is registered
 * (§10.3) and nothing of it runs. Nothing staged runs before the owner CAS applied.
 */
import type { NodeRef, OwnerCommitEntry } from '../../../stores/types';
import type { SpotDefinition } from '../../definitions';
import type { Envelope } from '../../envelope';
import { idOf, spotKey } from '../../keys';
import type { Lane, WorkItem } from '../../lane';
import type { Hosted } from '../../objects';
import { telemetry, unitKindAttributes } from '../../telemetry';
import type { UnitEvent } from '../events';
import type { UnitPayload } from '../payload';
import type { InboundPorts } from '../ports';
import type { CutoverMessage, PrepareUnit, RelayPartMessage } from '../protocol';
import type { TargetParcel } from './parcel';
import { FinishedUnit } from './finished-unit';

const NO_TICKS: ReadonlySet<string> = new Set();
/**
 * The one empty list every unit starts with and goes back to (no five arrays per unit, issue [6/10]). Frozen: a
 * push site replaces it with its own array first.
 */
const NONE: never[] = Object.freeze([]) as unknown as never[];


export class TargetUnit {
  readonly keys: string[];
  /** The inbound parcel machine this unit is in, from its restore on; undefined while staged. */
  parcel: TargetParcel | undefined;
  /** Dropped before its payload restored (abort, staging expiry, restore failure, §11). */
  abandoned = false;
  /** Its cutover (pre-boundary relay batch) arrived. */
  hasCutover = false;
  /** Saved work: the source's unexecuted queue, as captured. */
  private saved: WorkItem[] = NONE;
  /** The pre-boundary relay span; a retransmission replaces it whole (§13). */
  private relay: Envelope[] = NONE;
  /** Leading parts of the relay batch being received (a batch larger than one frame). */
  private incoming: Envelope[] = NONE;
  /** Remaining temporary work: what arrived here (followed or direct) after the relay, in arrival order. */
  private temporary: Envelope[] = NONE;
  restored: Hosted[] = NONE;
  private lane: Lane | undefined;
  private opened = false;
  /** Ids of the relayed messages, kept after opening only when a relay was non-empty (late retransmissions). */
  private relayIds: Set<string> | undefined;
  s2 = 0;

  constructor(
    private readonly ports: InboundPorts,
    readonly source: NodeRef,
    readonly prepare: PrepareUnit,
  ) {
    this.keys = prepare.keys;
  }

  get id(): string {
    return this.prepare.u;
  }

  get objectCount(): number {
    return this.keys.length;
  }

  /** Waiting for its payload (a parcel that cannot be read fails these explicitly, see coordinator). */
  get staged(): boolean {
    return !this.parcel && !this.abandoned;
  }

  /** The temporary queue of every object of this unit (§10.3: one group, each record keeps its target). */
  stage(env: Envelope): void {
    if (this.opened) return void this.ports.routes.dispatch(env, true);
    if (this.temporary === NONE) this.temporary = [];
    this.temporary.push(env);
  }

  /** Builds the unit's objects, paused: nothing runs before the owner CAS and the merge (§10.3). Throws on failure. */
  restore(payload: UnitPayload): void {
    const { objects } = this.ports;
    const lane = objects.newLane();
    lane.pause();
    this.lane = lane;
    const { queue } = payload;
    // Pending ticks and timer sequences only matter when something is queued (most units have an empty queue).
    let pendingTicks: Map<string, Set<string>> | undefined;
    for (const item of queue) if (item.k === 'tick') ((pendingTicks ??= new Map()).get(item.to) ?? pendingTicks.set(item.to, new Set()).get(item.to)!).add(item.name);
    const seqs = queue.length > 0 ? new Map<string, Map<string, number>>() : undefined;
    const sharedLane = payload.kind === 'spotWide';
    const restored: Hosted[] = [];
    try {
      for (const c of payload.objects) {
        const def = objects.definition(c.type);
        const ownLane = sharedLane || c.key === payload.objects[0]!.key ? lane : objects.newLane();
        const hosted = objects.newHosted(c.key, def, c.mode, ownLane, c.gen, c.auth, c.spot);
        const policy = def.relocation;
        // §9: PreserveStateWith restores the adapter's bytes; RecreateOnRelocation and PerActor shells run the factory.
        hosted.state = c.state !== undefined && policy.kind === 'preserve' ? policy.restore(Buffer.from(c.state.buffer, c.state.byteOffset, c.state.length)) : def.create(c.key.slice(2));
        if (c.ext !== undefined) objects.restoreExtensions(hosted, c.ext);
        if (c.timers.length > 0 || seqs) {
          const installed = hosted.timers.install(c.timers, pendingTicks?.get(c.key) ?? NO_TICKS);
          seqs?.set(c.key, installed);
        }
        restored.push(hosted);
      }
    } catch (error) {
      for (const o of restored) o.timers.clear();
      this.lane = undefined;
      throw error;
    }
    this.restored = restored;
    if (queue.length > 0)
      this.saved = queue.map((item): WorkItem => {
        if (item.k === 'msg') return { k: 'msg', to: item.to, env: item.env };
        return { k: 'tick', to: item.to, name: item.name, seq: seqs!.get(item.to)?.get(item.name) ?? -1 };
      });
  }

  /** A leading part of a relay batch too large for one frame; the batch's first frame starts the span afresh. */
  onRelayPart(message: RelayPartMessage): void {
    if (this.opened) return this.deliverLate(message.relay);
    if (message.first || this.incoming === NONE) this.incoming = [];
    for (const env of message.relay) this.incoming.push(env);
  }

  /** Records the relay span; returns true the first time (the parcel counts it), false for a retransmission. */
  onCutover(message: CutoverMessage): boolean {
    if (this.opened) {
      this.deliverLate(message.relay);
      return false;
    }
    // Full replacement of the pre-boundary span (§13) by the whole (re)transmitted batch, never a per-message merge.
    this.relay = message.first ? message.relay : [...this.incoming, ...message.relay];
    this.incoming = NONE;
    const first = !this.hasCutover;
    this.hasCutover = true;
    return first;
  }

  /** A late retransmission after dispatch opened: deliver only what was not relayed before. */
  private deliverLate(relay: readonly Envelope[]): void {
    for (const env of relay) if (!this.relayIds?.has(env.id)) this.ports.routes.dispatch(env, true);
  }

  /** The owner commit of a non-SpotWide unit's record to this node (S2). */
  commitEntry(): OwnerCommitEntry {
    const root = this.restored[0]!;
    return { object: idOf(root.key), expectedAuthorityGeneration: root.authorityGeneration, objectGeneration: root.objectGeneration };
  }

  /** Merge in order, switch the route, OnRelocationReadyCompleted, open dispatch (S3 = `s3`, one clock read per parcel). */
  open(s3: number): void {
    const { objects, routes } = this.ports;
    this.opened = true;
    if (this.relay.length > 0) this.relayIds = new Set(this.relay.map((env) => env.id));
    for (const o of this.restored) {
      objects.adopt(o);
      routes.invalidate(o.key);
    }
    const lane = this.lane!;
    const root = this.restored[0]!;
    if (this.prepare.kind === 'spotWide' && (root.def as SpotDefinition).readiness === 'ApplicationSignaled') objects.runReadyCompleted(root, 'Relocated');
    // Saved work, then the relay span, then the temporary work: in that order (§10.3). No merged copy of the three.
    const { saved, relay, temporary } = this;
    this.saved = NONE;
    this.temporary = NONE;
    this.relay = NONE;
    for (const item of saved) {
      const owner = objects.get(item.to);
      if (!owner) continue;
      if (item.k === 'msg') objects.deliver(item.env);
      else owner.lane.push(item);
    }
    for (const env of relay) if (objects.get(env.to)) objects.deliver(env);
    for (const env of temporary) if (objects.get(env.to)) objects.deliver(env);
    for (const o of this.restored) o.timers.start();
    for (const o of this.restored) if (o.lane !== lane) o.lane.resume();
    lane.resume();
    telemetry.targetResume(s3 - this.s2, unitKindAttributes(this.prepare.kind));
    this.event('opened', 'S3', s3);
    if (this.prepare.kind === 'perActorShell') {
      // Member Actors whose own units opened before this shell re-link to it now.
      for (const o of objects.values()) if (o.kind === 'actor' && o.spotId === root.id) root.members?.add(o.id);
    }
    if (root.kind === 'actor' && root.spotId !== undefined) objects.get(spotKey(root.spotId))?.members?.add(root.id);
  }

  /**
   * §11, before relay-ready (abort, restore failure, staging expiry): what was prepared is dropped and nothing of
   * the temporary queue runs here or gets a terminal from this target; it goes back to routing, which returns it
   * to its origin to re-resolve the owner (still the source, which kept processing).
   */
  abandon(): void {
    this.abandoned = true;
    this.event('discarded', undefined, this.ports.clock.now());
    const temporary = [...this.incoming, ...this.relay, ...this.temporary];
    this.release();
    for (const env of temporary) this.ports.routes.dispatch(env, true);
  }

  /** After the relay-ready boundary, a CAS that failed for good: the prepared objects and queue are removed (§11). */
  discard(): void {
    this.event('discarded', undefined, this.ports.clock.now());
    for (const o of this.restored) o.timers.clear();
    const ended = [...this.relay, ...this.temporary];
    this.release();
    // §11: nothing in the temporary queue ran; requests get their one terminal.
    for (const env of ended) this.ports.routes.terminal(env, { ok: false, kind: 'unavailable', error: `relocation of ${env.to} was discarded` });
  }

  /**
   * The unit ended: the coordinator keeps it a while longer to recognise a resent prepare or payload, so it lets
   * go of everything heavy now — the objects belong to the Object Server (issue [6/10] RSS: finished units held
   * ~7 KB each until their entry expired).
   */
  release(): void {
    this.restored = NONE;
    this.saved = NONE;
    this.relay = NONE;
    this.incoming = NONE;
    this.temporary = NONE;
    this.lane = undefined;
  }

  /** What the target keeps of this unit once it ended (finished-unit.ts), in place of the unit itself. */
  finished(): FinishedUnit {
    const end = this.opened ? 'opened' : this.abandoned ? 'abandoned' : 'discarded';
    return new FinishedUnit(this.prepare.u, this.source, end, this.relayIds, this.ports.routes);
  }

  /** One per unit and step (only built when someone listens); `fellBack` only on S2. Built as plain literals, no spreads. */
  event(state: UnitEvent['state'], point: UnitEvent['point'], at: number, fellBack?: boolean): void {
    const { unitEvents } = this.ports;
    if (!unitEvents.active) return;
    const { u, kind } = this.prepare;
    if (point === undefined) unitEvents.emit({ side: 'target', unit: u, kind, state, objects: this.keys, at });
    else if (fellBack === undefined) unitEvents.emit({ side: 'target', unit: u, kind, state, point, objects: this.keys, at });
    else unitEvents.emit({ side: 'target', unit: u, kind, state, point, objects: this.keys, at, fellBack });
  }
}
