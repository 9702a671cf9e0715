/**
 * The source's windows after a unit's seal (§8, §13, §14; DESIGN.md "Unit handoff (source)"): the reply wait after
 * the payload went out, then from S1 the Message Follow route (until S4) and the retransmission copy of the relay
 * batch and cutover (until the cutover wait ends). One shared timer per window kind, never one per unit (DESIGN.md
 * "Known performance traps"); a unit's machine stays in `following` until this window sends FOLLOW_EXPIRED.
 */
import type { NodeRef } from '../../stores/types';
import type { PeerInfo, RuntimeMessage } from '../../transport/types';
import type { Clock } from '../clock';
import type { Envelope } from '../envelope';
import { sameNode, type ObjectKey } from '../keys';
import type { RuntimeLog } from '../logger';
import type { Timing } from '../options';
import type { Router } from '../router';
import { telemetry, unitKindAttributes } from '../telemetry';
import type { UnitEvent } from './events';
import { ExpiryQueue } from '../expiry-queue';
import { relayBatchMessages } from './protocol';
import type { SourceUnit, FollowWindow as UnitFollowWindow, SourceUnitActor } from './source/unit';

/** §8: per-unit source stop target (S0→S1), a warning threshold only. */
export const INTERRUPTION_TARGET_MS = 1000;

export interface FollowWindowPorts {
  readonly clock: Clock;
  readonly logger: RuntimeLog;
  readonly timing: Pick<Timing, 'messageFollowDurationMs' | 'relocationCutoverWaitTimeoutMs'>;
  readonly routes: Pick<Router, 'removeFollow'>;
  readonly unitEvents: { readonly active: boolean; emit(event: UnitEvent): void };
  /** One message to a peer (a retransmission); false when the transport did not take it. */
  send(to: NodeRef, message: RuntimeMessage): boolean;
  /** A sealed unit still in flight, by id (a reply wait holds ids, not units). */
  sourceUnit(id: string): SourceUnit | undefined;
  /** S1 of a SpotWide or Instance unit: OnClosing(RelocationOut) on the detached source instance (§10.5). */
  closeRelocatedOut(unit: SourceUnit): void;
  /** Shutdown cut the windows (§14): routes end without S4. */
  closed(): boolean;
  /** A follow route or retransmission copy ended: SafeToShutdown may now hold. */
  windowEnded(): void;
}

interface FollowEntry {
  /** The unit's machine, in `following` until this entry expires (S4) or Shutdown cuts it (§14). */
  readonly actor: SourceUnitActor;
  readonly unit: string;
  readonly keys: readonly ObjectKey[];
  readonly s1: number;
  readonly kind: UnitEvent['kind'];
}

interface RetransmissionCopy {
  readonly unit: string;
  readonly target: NodeRef;
  readonly relay: Envelope[];
}

export class FollowWindow implements UnitFollowWindow {
  private readonly follows: ExpiryQueue<FollowEntry>;
  private readonly copies: ExpiryQueue<RetransmissionCopy>;
  /**
   * Sealed source units waiting for the target's reply (relay-ready or a failure). Unit ids, not units: a unit that
   * cut over is not kept alive (with its objects) until the wait would have ended.
   */
  private readonly replyWaits: ExpiryQueue<string>;
  /** Cleaned retransmission copies (each exactly once, §13) and retransmissions sent. */
  copiesCleaned = 0;
  retransmissionsSent = 0;
  /** §8 warnings of the current operation: units whose S0→S1 exceeded the target. */
  private overTarget = { count: 0, maxMs: 0 };

  constructor(private readonly ports: FollowWindowPorts) {
    const { clock, timing } = ports;
    this.follows = new ExpiryQueue(clock, timing.messageFollowDurationMs, (entry, at) => {
      for (const key of entry.keys) ports.routes.removeFollow(key);
      // Cut by Shutdown (§14), not expired: no S4, no route convergence value.
      if (ports.closed()) return void entry.actor.send({ type: 'ROUTE_CUT' });
      // One event per unit from this one shared timer: the unit machine leaves `following` (no per-unit `after`).
      entry.actor.send({ type: 'FOLLOW_EXPIRED' });
      // S4: the Message Follow route may be removed (source clock).
      telemetry.routeConvergence(at - entry.s1, unitKindAttributes(entry.kind));
      if (ports.unitEvents.active) ports.unitEvents.emit({ side: 'source', unit: entry.unit, kind: entry.kind, state: 'followEnded', point: 'S4', objects: entry.keys, at });
      ports.windowEnded();
    });
    this.copies = new ExpiryQueue(clock, timing.relocationCutoverWaitTimeoutMs, () => {
      this.copiesCleaned++;
      ports.windowEnded();
    });
    this.replyWaits = new ExpiryQueue(clock, Math.max(1000, timing.relocationCutoverWaitTimeoutMs), (id) => {
      if (!ports.closed()) ports.sourceUnit(id)?.replyWaitEnded();
    });
  }

  /** Message Follow routes still open (S1 reached, S4 not yet). */
  get followRoutes(): number {
    return this.follows.size;
  }

  get retransmissionCopies(): number {
    return this.copies.size;
  }

  /** No follow route and no retransmission copy is left (§14 SafeToShutdown). */
  get ended(): boolean {
    return this.follows.size === 0 && this.copies.size === 0;
  }

  /** A sealed unit's payload reached the target: its reply is due within the wait (§8). */
  awaitReply(unit: SourceUnit): void {
    this.replyWaits.push(unit.plan.id);
  }

  /** S1 reached: Message Follow and the retransmission copy start; Spots close with RelocationOut (§10.5). */
  onCutOver(unit: SourceUnit, relay: Envelope[]): void {
    const stopped = unit.s1 - unit.s0;
    telemetry.sourceStop(stopped, unitKindAttributes(unit.plan.kind));
    // §8: an observation-only target; exceeding it is a warning, never a failure, rollback or retry.
    // The first unit over it is logged in full, the rest are summed up once per operation (no log flood at 10k units).
    if (stopped > INTERRUPTION_TARGET_MS) {
      if (this.overTarget.count++ === 0)
        this.ports.logger.warn({ unit: unit.plan.id, kind: unit.plan.kind, root: unit.plan.root.key, stoppedMs: stopped, targetMs: INTERRUPTION_TARGET_MS }, 'relocation unit stopped the source over the target');
      this.overTarget.maxMs = Math.max(this.overTarget.maxMs, stopped);
    }
    this.follows.push({ actor: unit.actor!, unit: unit.plan.id, keys: unit.keys, s1: unit.s1, kind: unit.plan.kind });
    this.copies.push({ unit: unit.plan.id, target: unit.target, relay });
    if (unit.plan.kind === 'spotWide' || unit.plan.kind === 'instance') this.ports.closeRelocatedOut(unit);
  }

  /** §13: a connection re-established within the window gets the relay batch and cutover again. */
  onPeer(peer: PeerInfo): void {
    if (peer.state !== 'Ready' || this.copies.size === 0) return;
    for (const copy of this.copies.values()) {
      if (!sameNode(copy.target, peer)) continue;
      if (relayBatchMessages(copy.unit, copy.relay, true).every((message) => this.ports.send(copy.target, message))) this.retransmissionsSent++;
    }
  }

  /** The operation ended: the §8 warnings of its units are summed up once. */
  endOperation(): void {
    if (this.overTarget.count > 1)
      this.ports.logger.warn({ units: this.overTarget.count, longestMs: this.overTarget.maxMs, targetMs: INTERRUPTION_TARGET_MS }, 'relocation units in all exceeded the source-stop target');
    this.overTarget = { count: 0, maxMs: 0 };
  }

  /** §14: Message Follow routes and retransmission copies go with the transport (each cleaned once). */
  close(): void {
    this.follows.clear();
    this.copies.clear();
    this.replyWaits.clear();
  }
}
