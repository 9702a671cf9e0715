/**
 * The publisher side of Classic fanout on one node: its publishers (automatic ones are in the descriptor, manual
 * ones are not, §4) and the subscription links subscribers hold to this node run.
 *
 * Every link has its own event sequence and an outbox of the events its subscriber has not acknowledged yet: an
 * event is copied once (runtime/codec.ts) and queued on every link of its topic in publish order, so each
 * subscription gets each event once and in order, and a connection loss of the same runs is repaired by the
 * subscriber's resume (`sub` with the next sequence it expects) instead of losing what was in flight.
 */
import { encodeValue } from '../../codec';
import { AdmissionError } from '../../errors';
import { nodeKey, sameNode } from '../../keys';
import type { RuntimeLog } from '../../logger';
import type { NodeDescriptor, NodeRef } from '../../../stores/types';
import { FrameworkRuntimeState, nameOf } from '../../../vocabulary';
import { FANOUT_MESSAGES, type EndReason, type FanoutDescription, type FanoutMessage } from './protocol';

/**
 * Events one link may hold unacknowledged. A subscriber that stays connected acknowledges every tick; one that went
 * quiet past this bound loses its link (it is told `overflow` and logged on both sides, never silently).
 */
export const MAX_UNACKED_EVENTS = 100_000;

interface Entry {
  readonly q: number;
  readonly p: string;
  readonly v: Uint8Array;
}

/** A subscription link held by this node run. */
interface Held {
  readonly key: string;
  readonly peer: NodeRef;
  readonly s: number;
  readonly topic: string;
  /** Next sequence number this link gives an event. */
  next: number;
  /** Events sent (or waiting to be sent) and not acknowledged, in sequence order. */
  outbox: Entry[];
  /** A send found no Ready connection: nothing more is sent until the subscriber resumes the link. */
  stalled: boolean;
  /** Descriptor snapshots in a row that did not list the subscriber's run (dropped at two: reads may arrive late). */
  missed: number;
}

export interface PublisherRecord {
  readonly topic: string;
  readonly id: string;
  readonly manual: boolean;
  closed: boolean;
}

export interface PublishingPorts {
  readonly self: NodeRef;
  readonly logger: RuntimeLog;
  state(): FrameworkRuntimeState;
  /** Sends to a node run (the component handles its own run by loopback); false when not Ready. */
  send(peer: NodeRef, message: FanoutMessage): boolean;
  /** The peer run is reachable now (Ready, or this node itself). */
  reachable(peer: NodeRef): boolean;
  republish(): void;
  /** Something a drain or close waits on changed. */
  changed(): void;
}

export class Publishing {
  private readonly publishers = new Map<string, PublisherRecord>();
  private readonly held = new Map<string, Held>();
  private readonly byTopic = new Map<string, Set<Held>>();
  private counter = 0;

  constructor(private readonly ports: PublishingPorts) {}

  // ── publishers ─────────────────────────────────────────────────────────────────────────

  add(topic: string, manual: boolean): PublisherRecord {
    const record: PublisherRecord = { topic, id: `${topic}#${++this.counter}`, manual, closed: false };
    this.publishers.set(record.id, record);
    if (!manual) this.ports.republish();
    return record;
  }

  /** §15: publish admission by host state; the event is copied once and queued on every link of its topic. */
  publish(record: PublisherRecord, event: unknown): void {
    const state = this.ports.state();
    if (record.closed) throw new AdmissionError(nameOf(FrameworkRuntimeState, state), `publisher of '${record.topic}' is closed: create a new one to publish again`);
    if (state !== FrameworkRuntimeState.Serving && state !== FrameworkRuntimeState.Relocating) {
      const name = nameOf(FrameworkRuntimeState, state);
      throw new AdmissionError(
        name,
        `publish on '${record.topic}' is not admitted while the host is ${name} (a fanout publisher accepts events in Serving and Relocating; see docs/concepts.md "Classic fanout")`,
      );
    }
    const v = encodeValue(event, 'event');
    const links = this.byTopic.get(record.topic);
    if (!links) return;
    for (const link of [...links]) {
      if (link.outbox.length >= MAX_UNACKED_EVENTS) {
        this.ports.logger.error(
          { topic: record.topic, subscriber: nodeKey(link.peer), unacknowledged: link.outbox.length },
          'fanout subscriber acknowledged nothing for too long; its link is ended (the subscriber is told overflow and subscribes again)',
        );
        this.drop(link, 'overflow');
        continue;
      }
      const entry: Entry = { q: link.next++, p: record.id, v };
      link.outbox.push(entry);
      if (!link.stalled) this.transmit(link, entry);
    }
  }

  /** Closes a publisher once the events it published reached every reachable link (or the links ended). */
  async close(record: PublisherRecord, settled: (check: () => boolean) => Promise<void>): Promise<void> {
    if (record.closed) return;
    record.closed = true;
    await settled(() => !this.pendingOf(record.id));
    this.publishers.delete(record.id);
    if (!record.manual) this.ports.republish();
    this.ports.changed();
  }

  describe(): FanoutDescription | undefined {
    const publishers: { topic: string; id: string }[] = [];
    for (const p of this.publishers.values()) if (!p.manual && !p.closed) publishers.push({ topic: p.topic, id: p.id });
    return publishers.length ? { generation: this.ports.self.lifecycleGeneration, publishers } : undefined;
  }

  manualTopics(): string[] {
    return [...this.publishers.values()].filter((p) => p.manual && !p.closed).map((p) => p.topic);
  }

  // ── links held for subscribers ───────────────────────────────────────────────────────────

  onMessage(from: NodeRef, message: FanoutMessage): void {
    switch (message.t) {
      case FANOUT_MESSAGES.sub:
        return this.onSubscribe(from, message.s, message.topic, message.from, message.r === 1);
      case FANOUT_MESSAGES.ack: {
        const link = this.held.get(linkKey(from, message.s));
        if (!link) return;
        let n = 0;
        while (n < link.outbox.length && link.outbox[n]!.q <= message.q) n++;
        if (n > 0) {
          link.outbox.splice(0, n);
          this.ports.changed();
        }
        return;
      }
      case FANOUT_MESSAGES.unsub: {
        const link = this.held.get(linkKey(from, message.s));
        if (link) this.drop(link, 'unsubscribed');
        else this.ports.send(from, { t: FANOUT_MESSAGES.end, s: message.s, reason: 'unsubscribed' });
        return;
      }
    }
  }

  private onSubscribe(from: NodeRef, s: number, topic: string, resumeFrom: number, resume: boolean): void {
    const key = linkKey(from, s);
    const existing = this.held.get(key);
    if (existing && existing.topic === topic) {
      // Resume: what the subscriber has is acknowledged; the rest goes again, in order.
      existing.outbox = existing.outbox.filter((e) => e.q >= resumeFrom);
      existing.stalled = false;
      this.ports.send(from, { t: FANOUT_MESSAGES.subok, s, from: resumeFrom });
      for (const entry of existing.outbox) if (!this.transmit(existing, entry)) break;
      this.ports.changed();
      return;
    }
    if (existing) this.drop(existing, 'unsubscribed');
    // A resume of a link this run does not hold (it ended it): the subscriber must know continuity is broken.
    if (resume) return void this.ports.send(from, { t: FANOUT_MESSAGES.refused, s, reason: 'unknown' });
    // §15 Classic fanout publisher: outside Serving no new subscriber connection is created.
    const state = this.ports.state();
    if (state !== FrameworkRuntimeState.Serving) return void this.ports.send(from, { t: FANOUT_MESSAGES.refused, s, reason: nameOf(FrameworkRuntimeState, state) });
    const link: Held = { key, peer: { nodeId: from.nodeId, lifecycleGeneration: from.lifecycleGeneration }, s, topic, next: 1, outbox: [], stalled: false, missed: 0 };
    this.held.set(key, link);
    let links = this.byTopic.get(topic);
    if (!links) this.byTopic.set(topic, (links = new Set()));
    links.add(link);
    this.ports.send(from, { t: FANOUT_MESSAGES.subok, s, from: 1 });
  }

  private transmit(link: Held, entry: Entry): boolean {
    if (this.ports.send(link.peer, { t: FANOUT_MESSAGES.ev, s: link.s, q: entry.q, p: entry.p, v: entry.v })) return true;
    // Kept in the outbox: the subscriber resumes the link once its connection is back.
    link.stalled = true;
    return false;
  }

  /** Links whose subscriber run left the cluster (its descriptor is gone or a newer run replaced it) end here. */
  onDescriptors(descriptors: readonly NodeDescriptor[]): void {
    for (const link of [...this.held.values()]) {
      if (sameNode(link.peer, this.ports.self)) continue;
      const listed = descriptors.filter((d) => d.nodeId === link.peer.nodeId);
      if (listed.some((d) => d.lifecycleGeneration > link.peer.lifecycleGeneration)) {
        this.drop(link, undefined);
        continue;
      }
      link.missed = listed.some((d) => d.lifecycleGeneration === link.peer.lifecycleGeneration) ? 0 : link.missed + 1;
      if (link.missed >= 2) this.drop(link, undefined);
    }
  }

  /** A subscriber run that is not reachable any more does not hold a drain (its events stay for a resume). */
  private pendingOf(publisherId: string | undefined): boolean {
    for (const link of this.held.values()) {
      if (!this.ports.reachable(link.peer)) continue;
      if (link.outbox.some((e) => publisherId === undefined || e.p === publisherId)) return true;
    }
    return false;
  }

  /** §14 step 3: every accepted event reached every reachable subscriber. */
  drained(): boolean {
    return !this.pendingOf(undefined);
  }

  private drop(link: Held, tell: EndReason | undefined): void {
    this.held.delete(link.key);
    const links = this.byTopic.get(link.topic);
    links?.delete(link);
    if (links?.size === 0) this.byTopic.delete(link.topic);
    if (tell) this.ports.send(link.peer, { t: FANOUT_MESSAGES.end, s: link.s, reason: tell });
    else if (link.outbox.length)
      this.ports.logger.warn(
        { topic: link.topic, subscriber: nodeKey(link.peer), unacknowledged: link.outbox.length },
        'fanout subscriber run left the cluster with events it had not acknowledged',
      );
    this.ports.changed();
  }

  /** §14 step 5: every link is told the publisher closed; nothing is held any more. */
  closeAll(): { links: number; unacknowledged: number } {
    let unacknowledged = 0;
    const links = this.held.size;
    for (const link of [...this.held.values()]) {
      unacknowledged += link.outbox.length;
      this.drop(link, 'publisher-closed');
    }
    for (const p of this.publishers.values()) p.closed = true;
    this.publishers.clear();
    return { links, unacknowledged };
  }

  get linkCount(): number {
    return this.held.size;
  }
}

const linkKey = (from: NodeRef, s: number): string => `${nodeKey(from)}/${s}`;
