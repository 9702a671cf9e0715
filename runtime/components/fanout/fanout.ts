/**
 * Classic fanout (§1.1, §4, §14, §15): publishers and subscribers of topics, coordinated with the host.
 *
 * - An automatic publisher is published in the node's descriptor (the fanout publisher descriptor, §14);
 *   automatic subscribers find it there and link to it. A manual publisher is not published; manual subscribers
 *   reach it through a mesh endpoint given by hand. Either manual kind is manual topology (§4): while one is
 *   registered, Relocate ends Blocked/ManualTopologyUnsupported.
 * - §15 Classic fanout publisher: in Relocating no new subscriber link is created and accepted events are still
 *   processed (publishing stays open); in Relocated the links are kept but publish is refused; in Draining publish is
 *   refused and only accepted events are delivered (drain waits for them).
 * - Events of a node to itself (a subscriber of a local publisher) go by loopback, in order, never synchronously.
 */
import { ArgumentError, AdmissionError } from '../../errors';
import { checkId, nodeKey, sameNode } from '../../keys';
import type { NodeDescriptor, NodeRef } from '../../../stores/types';
import type { RuntimeMessage } from '../../../transport/types';
import { FrameworkRuntimeState, nameOf } from '../../../vocabulary';
import type { ComponentPorts, HostComponent } from '../component';
import { FANOUT, FANOUT_MESSAGES, parseFanoutMessage, type FanoutMessage } from './protocol';
import { Publishing, type PublisherRecord } from './publishing';
import { Subscribing, type FanoutHandler } from './subscribing';

export type { FanoutEventInfo, FanoutHandler } from './subscribing';

/** A topic publisher: `publish` copies the event at the call and queues it for every subscription, in order. */
export interface FanoutPublisher {
  readonly topic: string;
  /** Identity of this publisher on its node run (in the descriptor for automatic publishers). */
  readonly id: string;
  /**
   * Publishes one event. Throws ArgumentError (field `event…`) for a value the codec refuses, and AdmissionError
   * when the host does not admit publishing (Relocated, Draining, Stopped; §15) or the publisher is closed.
   */
  publish(event: unknown): void;
  /** Stops publishing; resolves once its events reached every reachable subscriber. Idempotent. */
  close(): Promise<void>;
}

/** A subscription to a topic. */
export interface FanoutSubscription {
  readonly topic: string;
  /** The publisher node runs this subscription is linked to now. */
  publishers(): NodeRef[];
  /** Ends every link; events the publishers sent before they read it are still handled. Idempotent. */
  close(): Promise<void>;
}

export interface SubscribeOptions {
  /**
   * Manual topology (§4): subscribe at the node answering at this mesh endpoint (e.g. a manual publisher's node)
   * instead of following descriptors. The endpoint is registered as a manual peer of the primary mesh.
   */
  readonly endpoint?: string;
}

/** Subscriptions and publishers are host infrastructure: new ones are admitted in these states. */
const OPEN_FOR_SUBSCRIPTIONS: readonly FrameworkRuntimeState[] = [FrameworkRuntimeState.Serving, FrameworkRuntimeState.Relocating, FrameworkRuntimeState.Relocated];

export class FanoutComponent implements HostComponent {
  readonly name = FANOUT;
  private readonly publishing: Publishing;
  private readonly subscribing: Subscribing;
  private readonly waiters = new Set<() => void>();
  private readonly manualRegistered = new Set<string>();
  private closed = false;

  constructor(
    private readonly ports: ComponentPorts,
    /** The primary mesh: runtime messages travel there, so manual endpoints are registered there. */
    private readonly mesh: string,
  ) {
    const changed = () => this.wake();
    this.publishing = new Publishing({
      get self() {
        return ports.self;
      },
      logger: ports.logger,
      state: () => ports.state(),
      send: (peer, message) => this.sendTo(peer, message),
      reachable: (peer) => this.reachable(peer),
      republish: () => ports.republish(),
      changed,
    });
    this.subscribing = new Subscribing({
      get self() {
        return ports.self;
      },
      logger: ports.logger,
      state: () => ports.state(),
      descriptors: () => ports.descriptors(),
      send: (peer, message) => this.sendTo(peer, message),
      reachable: (peer) => this.reachable(peer),
      manualPeer: (endpoint) => this.manualPeer(endpoint),
      changed,
    });
  }

  // ── public API (delegated from the host) ───────────────────────────────────────────────

  publisher(topic: string): FanoutPublisher {
    return this.newPublisher(topic, false, 'publisher');
  }

  registerManualPublisher(topic: string): FanoutPublisher {
    return this.newPublisher(topic, true, 'registerManualPublisher');
  }

  subscribe(topic: string, handler: FanoutHandler, options?: SubscribeOptions): FanoutSubscription {
    checkId(topic, 'topic');
    if (typeof handler !== 'function') throw new ArgumentError('handler', 'must be a function (event, info) => void | Promise<void>');
    if (options !== undefined && (typeof options !== 'object' || options === null)) throw new ArgumentError('options', 'must be an object: { endpoint? }');
    for (const key of Object.keys(options ?? {})) if (key !== 'endpoint') throw new ArgumentError(`options.${key}`, 'is not a subscribe option (known: endpoint)');
    const endpoint = options?.endpoint;
    if (endpoint !== undefined) checkId(endpoint, 'options.endpoint');
    this.admit('subscribe', OPEN_FOR_SUBSCRIPTIONS);
    if (endpoint !== undefined) this.registerEndpoint(endpoint);
    const sub = this.subscribing.add(topic, handler, endpoint);
    let closing: Promise<void> | undefined;
    return {
      topic,
      publishers: () => this.subscribing.publishersOf(sub),
      close: () =>
        (closing ??= (async () => {
          this.subscribing.close(sub);
          await this.until(() => this.subscribing.finished(sub) || this.closed);
          this.subscribing.forget(sub);
        })()),
    };
  }

  private newPublisher(topic: string, manual: boolean, call: string): FanoutPublisher {
    checkId(topic, 'topic');
    this.admit(call, [FrameworkRuntimeState.Serving]);
    const record = this.publishing.add(topic, manual);
    let closing: Promise<void> | undefined;
    return {
      topic,
      id: record.id,
      publish: (event) => this.publishing.publish(record, event),
      close: () => (closing ??= this.closePublisher(record)),
    };
  }

  private closePublisher(record: PublisherRecord): Promise<void> {
    return this.publishing.close(record, (check) => this.until(() => check() || this.closed));
  }

  private admit(call: string, states: readonly FrameworkRuntimeState[]): void {
    const state = this.ports.state();
    if (states.includes(state)) return;
    const name = nameOf(FrameworkRuntimeState, state);
    throw new AdmissionError(name, `${call} is not admitted while the host is ${name} (see docs/concepts.md "Classic fanout")`);
  }

  // ── manual endpoints ──────────────────────────────────────────────────────────────────

  private ownEndpoint(endpoint: string): boolean {
    const self = this.ports.self;
    return this.ports.descriptors().some((d) => sameNode(d, self) && d.endpoints[this.mesh] === endpoint);
  }

  /**
   * A manual subscriber endpoint is dialed like a manual peer (transport connectEndpoint); the §4 registration is this
   * component's (manualTopology), so it ends with the subscription.
   */
  private registerEndpoint(endpoint: string): void {
    if (this.manualRegistered.has(endpoint) || this.ownEndpoint(endpoint)) return;
    const transport = this.ports.transport();
    if (!transport) throw new AdmissionError(nameOf(FrameworkRuntimeState, this.ports.state()), 'subscribe: the host has no transport');
    try {
      if (transport.connectEndpoint) transport.connectEndpoint(this.mesh, endpoint);
      else transport.registerManualPeer(this.mesh, endpoint);
    } catch (error) {
      throw new ArgumentError('options.endpoint', (error as Error).message);
    }
    this.manualRegistered.add(endpoint);
  }

  private manualPeer(endpoint: string): NodeRef | undefined {
    if (this.ownEndpoint(endpoint)) return this.ports.self;
    const learned = this.ports.transport()?.peerAt?.(this.mesh, endpoint);
    if (learned) return learned;
    let found: NodeDescriptor | undefined;
    for (const d of this.ports.descriptors())
      if (d.endpoints[this.mesh] === endpoint && (!found || found.lifecycleGeneration < d.lifecycleGeneration)) found = d;
    return found && { nodeId: found.nodeId, lifecycleGeneration: found.lifecycleGeneration };
  }

  // ── messages ──────────────────────────────────────────────────────────────────────────

  private reachable(peer: NodeRef): boolean {
    return sameNode(peer, this.ports.self) || this.ports.isReady(peer);
  }

  /** To another node over its connection; to this node by loopback (in order, after the current turn). */
  private sendTo(peer: NodeRef, message: FanoutMessage): boolean {
    if (this.closed) return false;
    const self = this.ports.self;
    if (sameNode(peer, self)) {
      queueMicrotask(() => {
        if (!this.closed) this.onMessage(self, message as unknown as RuntimeMessage);
      });
      return true;
    }
    return this.ports.send(peer, message as unknown as RuntimeMessage);
  }

  onMessage(from: NodeRef, raw: RuntimeMessage): void {
    const message = parseFanoutMessage(raw);
    if (!message) return this.ports.logger.warn({ peer: nodeKey(from), type: String(raw?.t) }, 'invalid fanout message dropped');
    switch (message.t) {
      case FANOUT_MESSAGES.sub:
      case FANOUT_MESSAGES.ack:
      case FANOUT_MESSAGES.unsub:
        return this.publishing.onMessage(from, message);
      default:
        return this.subscribing.onMessage(from, message);
    }
  }

  onDescriptors(descriptors: readonly NodeDescriptor[]): void {
    if (this.closed) return;
    this.publishing.onDescriptors(descriptors);
    this.subscribing.onDescriptors(descriptors);
  }

  onPeerReady(peer: NodeRef): void {
    if (!this.closed) this.subscribing.onPeerReady(peer);
  }

  onPeerLost(peer: NodeRef): void {
    if (this.closed) return;
    this.subscribing.onPeerLost(peer);
    this.wake(); // a drain does not wait on a subscriber that is not reachable
  }

  onStateChange(state: FrameworkRuntimeState): void {
    if (state === FrameworkRuntimeState.Draining) this.subscribing.onDraining();
  }

  // ── host coordination ─────────────────────────────────────────────────────────────────

  describe(): unknown {
    return this.publishing.describe();
  }

  manualTopology(): readonly string[] {
    return [
      ...this.publishing.manualTopics().map((topic) => `fanout manual publisher '${topic}'`),
      ...this.subscribing.manualEndpoints().map((endpoint) => `fanout subscriber endpoint ${endpoint}`),
    ];
  }

  /** §14 step 3: accepted events reach their subscribers, and events already received here are handled. */
  async drain(signal: AbortSignal): Promise<void> {
    await this.until(() => this.publishing.drained() && this.subscribing.drained(), signal);
  }

  /** §14 step 5: links are told the publisher closed; subscriptions end. */
  async close(): Promise<void> {
    this.finish('closed');
  }

  forceClose(): void {
    this.finish('force-closed');
  }

  private finish(how: string): void {
    if (this.closed) return;
    const published = this.publishing.closeAll();
    const received = this.subscribing.closeAll();
    this.closed = true;
    if (published.unacknowledged || received.undelivered)
      this.ports.logger.warn({ how, links: published.links, unacknowledged: published.unacknowledged, undelivered: received.undelivered }, 'fanout closed with events in flight');
    this.wake();
  }

  // ── waiting ───────────────────────────────────────────────────────────────────────────

  private wake(): void {
    for (const check of [...this.waiters]) check();
  }

  /** Resolves once `condition` holds (re-checked on every change), or when `signal` aborts. */
  private until(condition: () => boolean, signal?: AbortSignal): Promise<void> {
    if (condition() || signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const check = () => {
        if (!condition() && !signal?.aborted) return;
        this.waiters.delete(check);
        signal?.removeEventListener('abort', check);
        resolve();
      };
      this.waiters.add(check);
      signal?.addEventListener('abort', check, { once: true });
    });
  }
}

export function createFanout(ports: ComponentPorts, primaryMesh: string): FanoutComponent {
  return new FanoutComponent(ports, primaryMesh);
}
