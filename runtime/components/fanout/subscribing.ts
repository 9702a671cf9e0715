/**
 * The subscriber side of Classic fanout on one node. An automatic subscription links to every node run whose
 * descriptor publishes its topic (automatic discovery, §4) — a new link only to a publisher host in Serving (§5:
 * subscribers reflect the source's state in selection; §15: a Relocating publisher gets no new automatic
 * subscriber connection) — and drops a link when that run leaves or stops publishing the topic. A manual
 * subscription (§4 manual topology) links to whatever node run answers at a given mesh endpoint.
 *
 * Per link, events arrive numbered 1, 2, …: a duplicate (after a resume) is dropped, a gap asks the publisher to
 * resume from the first missing one, so each event is handed to the subscription once and in publish order.
 * Acknowledgements are cumulative and sent once per tick. Each subscription runs its handler for one event at a
 * time (an async handler is awaited), in arrival order; a handler error is logged with the event's coordinates and
 * the next event runs.
 */
import { decodeValue } from '../../codec';
import { nodeKey, sameNode } from '../../keys';
import type { RuntimeLog } from '../../logger';
import type { NodeDescriptor, NodeRef } from '../../../stores/types';
import { FrameworkRuntimeState } from '../../../vocabulary';
import { FANOUT_MESSAGES, publishedTopics, type FanoutMessage } from './protocol';

/** What a handler learns about an event besides its value. */
export interface FanoutEventInfo {
  readonly topic: string;
  /** The publisher: its node run and its id on that run. */
  readonly publisher: { readonly nodeId: string; readonly lifecycleGeneration: number; readonly id: string };
}

export type FanoutHandler = (event: unknown, info: FanoutEventInfo) => void | Promise<void>;

type LinkState = 'subscribing' | 'active' | 'refused' | 'unsubscribing';

interface Link {
  /** Wire id of this link (`s`): a link made again to the same run gets a new one, so the two never mix. */
  readonly id: number;
  readonly peer: NodeRef;
  state: LinkState;
  /** Next event sequence this link expects. */
  next: number;
  /** The publisher accepted this link once: a later subscribe is a resume. */
  accepted: boolean;
  /** The connection to the publisher was lost: the link resumes once it is Ready again. */
  lost: boolean;
  /** A resume was asked after a gap; further out-of-order events are ignored until the missing one arrives. */
  resuming: boolean;
  ackScheduled: boolean;
  missed: number;
}

interface Delivery {
  readonly value: Uint8Array;
  readonly info: FanoutEventInfo;
  readonly q: number;
}

export class Subscription {
  readonly links = new Map<string, Link>();
  readonly queue: Delivery[] = [];
  running = false;
  closed = false;

  constructor(
    readonly s: number,
    readonly topic: string,
    readonly handler: FanoutHandler,
    /** Manual topology: the mesh endpoint this subscription dials instead of following descriptors. */
    readonly endpoint: string | undefined,
  ) {}

  get idle(): boolean {
    return !this.running && this.queue.length === 0;
  }
}

export interface SubscribingPorts {
  readonly self: NodeRef;
  readonly logger: RuntimeLog;
  state(): FrameworkRuntimeState;
  descriptors(): readonly NodeDescriptor[];
  send(peer: NodeRef, message: FanoutMessage): boolean;
  reachable(peer: NodeRef): boolean;
  /** The node run currently answering at a manual endpoint, when known. */
  manualPeer(endpoint: string): NodeRef | undefined;
  /** Something a drain or close waits on changed. */
  changed(): void;
}

export class Subscribing {
  private readonly subscriptions = new Map<number, Subscription>();
  private readonly byId = new Map<number, { readonly sub: Subscription; readonly link: Link }>();
  /** Links a publisher still holds that are not ours any more, already asked to end (`<run>/<id>`). */
  private readonly strays = new Set<string>();
  private counter = 0;
  private linkCounter = 0;

  constructor(private readonly ports: SubscribingPorts) {}

  add(topic: string, handler: FanoutHandler, endpoint: string | undefined): Subscription {
    const sub = new Subscription(++this.counter, topic, handler, endpoint);
    this.subscriptions.set(sub.s, sub);
    this.reconcile(sub, this.ports.descriptors(), false);
    return sub;
  }

  manualEndpoints(): string[] {
    return [...this.subscriptions.values()].filter((s) => s.endpoint !== undefined && !s.closed).map((s) => s.endpoint!);
  }

  /** The publisher runs a subscription is linked to now (accepted links). */
  publishersOf(sub: Subscription): NodeRef[] {
    return [...sub.links.values()].filter((l) => l.state === 'active').map((l) => ({ nodeId: l.peer.nodeId, lifecycleGeneration: l.peer.lifecycleGeneration }));
  }

  private removeLink(sub: Subscription, link: Link): void {
    if (sub.links.get(nodeKey(link.peer)) === link) sub.links.delete(nodeKey(link.peer));
    this.byId.delete(link.id);
  }

  /**
   * A message for a link that is not ours (any more): an event means the publisher still holds a link we dropped
   * (e.g. its descriptor was missing for a while) — ask it once to end that link, so it stops sending and holding.
   */
  private stray(from: NodeRef, message: FanoutMessage): void {
    const key = `${nodeKey(from)}/${message.s}`;
    if (message.t === FANOUT_MESSAGES.end) return void this.strays.delete(key);
    if (message.t !== FANOUT_MESSAGES.ev || this.strays.has(key)) return;
    this.ports.logger.debug({ publisher: nodeKey(from), s: message.s }, 'fanout event for a link that is not ours; asking the publisher to end it');
    if (this.ports.send(from, { t: FANOUT_MESSAGES.unsub, s: message.s })) this.strays.add(key);
  }

  // ── links ─────────────────────────────────────────────────────────────────────────────

  onDescriptors(descriptors: readonly NodeDescriptor[]): void {
    for (const sub of this.subscriptions.values()) if (!sub.closed) this.reconcile(sub, descriptors, true);
  }

  /** Creates, retries and drops the links of one subscription from a descriptor snapshot. */
  private reconcile(sub: Subscription, descriptors: readonly NodeDescriptor[], counted: boolean): void {
    if (this.admissionClosed()) return;
    const latest = latestRuns(descriptors);
    const wanted = new Map<string, { peer: NodeRef; serving: boolean }>();
    if (sub.endpoint === undefined) {
      for (const d of latest.values()) if (publishedTopics(d).has(sub.topic)) wanted.set(nodeKey(d), { peer: refOf(d), serving: d.state === FrameworkRuntimeState.Serving });
    } else {
      const peer = this.ports.manualPeer(sub.endpoint);
      if (peer) {
        const d = latest.get(nodeKey(peer));
        // A manual publisher node need not be listed; when it is, its state is honoured like an automatic one's.
        wanted.set(nodeKey(peer), { peer, serving: !d || d.state === FrameworkRuntimeState.Serving });
      }
    }
    for (const [key, link] of sub.links) {
      if (wanted.has(key)) {
        link.missed = 0;
        continue;
      }
      // A newer run of the node, a run whose descriptor is gone, or a node that stopped publishing the topic.
      const newer = [...latest.values()].some((d) => d.nodeId === link.peer.nodeId && d.lifecycleGeneration > link.peer.lifecycleGeneration);
      const stillListed = latest.has(key);
      if (sub.endpoint !== undefined && !newer && (stillListed || this.ports.reachable(link.peer))) continue; // manual: the endpoint decides
      if (!newer && counted && ++link.missed < 2) continue; // one snapshot may be older than the link
      if (!newer && !counted) continue;
      this.removeLink(sub, link);
      if (stillListed && this.ports.reachable(link.peer)) this.ports.send(link.peer, { t: FANOUT_MESSAGES.unsub, s: link.id });
      this.ports.changed();
    }
    for (const [key, { peer, serving }] of wanted) {
      const link = sub.links.get(key);
      if (!link) {
        if (!serving) continue;
        const created: Link = { id: ++this.linkCounter, peer, state: 'subscribing', next: 1, accepted: false, lost: false, resuming: false, ackScheduled: false, missed: 0 };
        sub.links.set(key, created);
        this.byId.set(created.id, { sub, link: created });
        this.subscribe(sub, created);
      } else if ((link.state === 'refused' || (link.state === 'subscribing' && link.lost)) && serving) {
        this.subscribe(sub, link);
      }
    }
  }

  private subscribe(sub: Subscription, link: Link): void {
    link.state = 'subscribing';
    link.lost = !this.ports.send(link.peer, { t: FANOUT_MESSAGES.sub, s: link.id, topic: sub.topic, from: link.next, ...(link.accepted ? { r: 1 as const } : {}) });
  }

  onPeerReady(peer: NodeRef): void {
    for (const sub of this.subscriptions.values()) {
      const link = sub.links.get(nodeKey(peer));
      if (!link || !link.lost || sub.closed) continue;
      if (link.state === 'unsubscribing') {
        link.lost = !this.ports.send(peer, { t: FANOUT_MESSAGES.unsub, s: link.id });
        continue;
      }
      if (link.state === 'refused') continue;
      // Resume: the publisher sends again what it holds from the next sequence this link expects.
      this.subscribe(sub, link);
    }
    for (const sub of this.subscriptions.values()) if (sub.endpoint !== undefined && !sub.closed) this.reconcile(sub, this.ports.descriptors(), false);
  }

  onPeerLost(peer: NodeRef): void {
    for (const sub of this.subscriptions.values()) {
      const link = sub.links.get(nodeKey(peer));
      if (!link) continue;
      if (link.state === 'unsubscribing') {
        // Nothing more comes over a lost connection to a link being ended: it is over.
        this.removeLink(sub, link);
        this.ports.changed();
        continue;
      }
      link.lost = true;
      link.resuming = false;
    }
  }

  onMessage(from: NodeRef, message: FanoutMessage): void {
    const entry = this.byId.get(message.s);
    if (!entry || !sameNode(entry.link.peer, from)) return this.stray(from, message);
    const { sub, link } = entry;
    switch (message.t) {
      case FANOUT_MESSAGES.ev:
        return this.onEvent(sub, link, message.q, message.p, message.v);
      case FANOUT_MESSAGES.subok:
        if (link.state === 'subscribing') link.state = 'active';
        link.accepted = true;
        link.lost = false;
        this.ports.changed();
        return;
      case FANOUT_MESSAGES.refused:
        if (message.reason === 'unknown') {
          // The publisher run no longer holds this link (it ended it): what it held for us is gone.
          this.ports.logger.error(
            { topic: sub.topic, publisher: nodeKey(from), expected: link.next },
            'fanout publisher no longer holds this subscription link; events published meanwhile were not delivered; subscribing again',
          );
          link.next = 1;
          link.accepted = false;
          link.state = 'refused';
          this.reconcile(sub, this.ports.descriptors(), false);
          return;
        }
        this.ports.logger.info({ topic: sub.topic, publisher: nodeKey(from), reason: message.reason }, 'fanout publisher refused a new subscription (retried when it serves again)');
        if (link.state !== 'unsubscribing') link.state = 'refused';
        this.ports.changed();
        return;
      case FANOUT_MESSAGES.end:
        this.removeLink(sub, link);
        if (message.reason === 'overflow')
          this.ports.logger.error({ topic: sub.topic, publisher: nodeKey(from) }, 'fanout publisher ended this link: events were not acknowledged in time and were not delivered');
        else if (message.reason === 'publisher-closed') this.ports.logger.info({ topic: sub.topic, publisher: nodeKey(from) }, 'fanout publisher closed');
        this.ports.changed();
        return;
    }
  }

  private onEvent(sub: Subscription, link: Link, q: number, p: string, v: Uint8Array): void {
    if (q < link.next) return this.scheduleAck(sub, link); // a copy after a resume: acknowledge again, once
    if (q > link.next) {
      // A gap: the missing events are still in the publisher's outbox; ask for them once.
      if (!link.resuming) {
        link.resuming = true;
        this.ports.logger.warn({ topic: sub.topic, publisher: nodeKey(link.peer), expected: link.next, got: q }, 'fanout events arrived out of sequence; resuming the link');
        this.ports.send(link.peer, { t: FANOUT_MESSAGES.sub, s: link.id, topic: sub.topic, from: link.next, r: 1 });
      }
      return;
    }
    link.next++;
    link.resuming = false;
    link.accepted = true;
    if (link.state === 'subscribing') link.state = 'active';
    sub.queue.push({ value: v, q, info: { topic: sub.topic, publisher: { nodeId: link.peer.nodeId, lifecycleGeneration: link.peer.lifecycleGeneration, id: p } } });
    this.scheduleAck(sub, link);
    this.pump(sub);
  }

  /** One cumulative acknowledgement per link per tick. */
  private scheduleAck(sub: Subscription, link: Link): void {
    if (link.ackScheduled) return;
    link.ackScheduled = true;
    setImmediate(() => {
      link.ackScheduled = false;
      if (this.byId.get(link.id)?.link !== link) return;
      this.ports.send(link.peer, { t: FANOUT_MESSAGES.ack, s: link.id, q: link.next - 1 });
    });
  }

  /** Runs the handler for one event at a time, never inside the turn that received it. */
  private pump(sub: Subscription): void {
    if (sub.running) return;
    sub.running = true;
    setImmediate(() => void this.run(sub));
  }

  private async run(sub: Subscription): Promise<void> {
    for (let item = sub.queue.shift(); item; item = sub.queue.shift()) {
      let value: unknown;
      try {
        value = decodeValue(item.value);
      } catch (error) {
        this.ports.logger.error({ topic: sub.topic, publisher: item.info.publisher, q: item.q, err: error }, 'fanout event could not be decoded; not delivered');
        continue;
      }
      try {
        await sub.handler(value, item.info);
      } catch (error) {
        this.ports.logger.error({ topic: sub.topic, publisher: item.info.publisher, q: item.q, err: error }, 'fanout subscriber handler failed (the next event is delivered)');
      }
    }
    sub.running = false;
    this.ports.changed();
  }

  /** Ends a subscription: every reachable publisher is asked to end its link; events sent before that are delivered. */
  close(sub: Subscription): void {
    if (sub.closed) return;
    sub.closed = true;
    this.endLinks(sub);
  }

  private endLinks(sub: Subscription): void {
    for (const link of [...sub.links.values()]) {
      if (link.state === 'unsubscribing') continue;
      if ((link.state === 'active' || link.state === 'subscribing') && !link.lost && this.ports.send(link.peer, { t: FANOUT_MESSAGES.unsub, s: link.id })) {
        link.state = 'unsubscribing';
      } else this.removeLink(sub, link);
    }
    this.ports.changed();
  }

  /** A closed subscription is finished once every link ended and its last event was handled. */
  finished(sub: Subscription): boolean {
    if (!sub.closed) return false;
    for (const link of sub.links.values()) if (link.state === 'unsubscribing' && this.ports.reachable(link.peer)) return false;
    return sub.idle;
  }

  forget(sub: Subscription): void {
    this.subscriptions.delete(sub.s);
  }

  private admissionClosed(): boolean {
    const state = this.ports.state();
    return state === FrameworkRuntimeState.Draining || state === FrameworkRuntimeState.Stopped;
  }

  /** §14: Draining stops new events (every link is ended); what arrived before is still handled. */
  onDraining(): void {
    for (const sub of this.subscriptions.values()) this.endLinks(sub);
  }

  drained(): boolean {
    for (const sub of this.subscriptions.values()) {
      if (!sub.idle) return false;
      for (const link of sub.links.values()) if (link.state === 'unsubscribing' && this.ports.reachable(link.peer)) return false;
    }
    return true;
  }

  /** §14 step 5: what is left is dropped (logged with its count). */
  closeAll(): { undelivered: number } {
    let undelivered = 0;
    for (const sub of this.subscriptions.values()) {
      sub.closed = true;
      undelivered += sub.queue.length;
      sub.queue.length = 0;
      for (const link of sub.links.values()) if (link.state !== 'unsubscribing' && !link.lost) this.ports.send(link.peer, { t: FANOUT_MESSAGES.unsub, s: link.id });
      sub.links.clear();
    }
    this.subscriptions.clear();
    this.byId.clear();
    this.strays.clear();
    return { undelivered };
  }
}

function refOf(d: NodeDescriptor): NodeRef {
  return { nodeId: d.nodeId, lifecycleGeneration: d.lifecycleGeneration };
}

/** The newest run of each node in a snapshot, by node run key. */
function latestRuns(descriptors: readonly NodeDescriptor[]): Map<string, NodeDescriptor> {
  const newest = new Map<string, NodeDescriptor>();
  for (const d of descriptors) {
    const seen = newest.get(d.nodeId);
    if (!seen || seen.lifecycleGeneration < d.lifecycleGeneration) newest.set(d.nodeId, d);
  }
  return new Map([...newest.values()].map((d) => [nodeKey(d), d]));
}
