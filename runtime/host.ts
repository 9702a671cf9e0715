/**
 * The host: a FrameworkRuntime (API.md). Wires the lifecycle, shutdown and relocation machines to the stores,
 * the transport and the Object Server. The host's state changes only through the lifecycle machine.
 */
import { createActor, fromPromise, type Actor } from 'xstate';
import { hostLifecycleMachine, type HostLifecycleEvent, type HostLifecycleStateName } from '../machines/host-lifecycle.machine';
import { shutdownMachine } from '../machines/shutdown.machine';
import { LeaseHeldError } from '../stores/lease-held-error';
import type { NodeDescriptor, NodeRef, OwnerLease, Stores } from '../stores/types';
import { createTransport } from '../transport';
import type { PeerInfo, RuntimeMessage, Transport } from '../transport/types';
import { systemClock, type Clock } from './clock';
import type { ObjectRef, RequestOptions } from './context';
import { abortReason, AdmissionError, ArgumentError, NodeIdInUseError, raceAbort, RequestError } from './errors';
import { checkId, keyOfRef, nodeKey, sameNode } from './keys';
import { ObjectServer, type Terminal } from './objects';
import {
  checkSignal,
  parseRelocationOptions,
  parseRuntimeOptions,
  parseShutdownOptions,
  type ResolvedRuntimeOptions,
  type RuntimeOptions,
} from './options';
import { RelocationCoordinator, type RelocationDiagnostics } from './relocation/coordinator';
import type { RelocationHost } from './relocation/ports';
import { Router } from './router';
import { RELOCATION_CHANGED, StatusPublisher, TERMINATION_CHANGED, type HostEventListener, type HostEventName } from './status';
import { UNIT_CHANGED, type UnitListener } from './relocation/events';
import { HostLogger } from './logger';
import { measuredStores } from './store-metrics';
import { telemetry } from './telemetry';
import type { RelocationOptions, RelocationResult, RuntimeStatus, TerminationResult } from '../vocabulary';
import { FrameworkRuntimeState, nameOf, TerminationOutcome, TerminationReason } from '../vocabulary';
import type { ObjectDefinition } from './definitions';
import { describeTypes } from './relocation/compatibility';
import { tagInspection } from './inspection';
import { componentOf, createComponents, type ComponentPorts, type HostComponent } from './components';
import { CLIENT_SERVER, type CallOptions, type ClientServer, type ServeHandler, type ServeOptions, type ServerRegistration } from './components/client-server';
import { InstanceSpotClose } from './spot-close/instance-spot-close';
import { spotRefKey, type SpotRef } from './spot-close/spot-ref';
import { FANOUT } from './components/fanout/protocol';
import type { FanoutComponent, FanoutHandler, FanoutPublisher, FanoutSubscription, SubscribeOptions } from './components/fanout/fanout';
import { MULTICAST, type ChannelMemberRef, type MulticastComponent, type MulticastResult } from './components/multicast/multicast';
import { SESSIONS, type SessionsComponent } from './components/sessions';

export interface FrameworkRuntime {
  readonly nodeId: string;
  readonly lifecycleGeneration: number;
  readonly applicationVersion: number;
  readonly status: RuntimeStatus;
  observe(opts?: { signal?: AbortSignal }): AsyncIterable<RuntimeStatus>;
  relocate(options: RelocationOptions, opts?: { signal?: AbortSignal }): Promise<RelocationResult>;
  shutdown(opts?: { deadlineMs?: number; signal?: AbortSignal }): Promise<TerminationResult>;
  diagnostics(opts?: { limit?: number }): RelocationDiagnostics;
  createActor(type: string, id: string, options?: { spot?: string }): Promise<void>;
  createSpot(type: string, id: string): Promise<void>;
  join(actorId: string, spotId: string): Promise<void>;
  leave(actorId: string): Promise<void>;
  send(to: ObjectRef, message: unknown): void;
  request(to: ObjectRef, message: unknown, options?: RequestOptions): Promise<unknown>;
  locate(ref: ObjectRef): Promise<NodeRef | undefined>;
  /**
   * Instance Spot Close (§12): wherever the Spot lives, its owner runs `onClosing(state, 'Closed', ctx)` after the
   * current handler, ends its queue (queued requests: RequestError 'closed') and removes its records; a later message
   * creates a new instance. Rejects with RequestError 'moving' when a relocation sealed the Spot first (not
   * resubmitted), ArgumentError ('ref.spot') for an unknown id or a Spot that is not an Instance Spot.
   */
  closeSpot(ref: SpotRef, options?: RequestOptions): Promise<void>;
  /** §16 events: 'zlink.runtime.host.relocation_changed' and 'zlink.runtime.host.termination_changed'. */
  on(event: HostEventName, listener: HostEventListener): () => void;
  /** Per-unit points S0–S4 and outcomes, with ids (traces, tests). */
  on(event: typeof UNIT_CHANGED, listener: UnitListener): () => void;
  /** Manual topology (§4): registering one makes Relocate end Blocked/ManualTopologyUnsupported. */
  registerManualPeer(mesh: string, endpoint: string): void;
  /**
   * ClientServer: registers a server under a ChannelName (published in this host's descriptor; resolves once
   * published). The handler's return value is the reply.
   */
  serve<Req = unknown, Rep = unknown>(channel: string, handler: ServeHandler<Req, Rep>, options?: ServeOptions): Promise<ServerRegistration>;
  /** ClientServer call: select-one among the servers of the channel by weight, or Node direct with `options.node`. */
  call<Rep = unknown>(channel: string, request: unknown, options?: CallOptions): Promise<Rep>;
  /**
   * Manual topology (§4): calls on `channel` go to the node at this mesh endpoint instead of discovered servers;
   * registering one makes Relocate end Blocked/ManualTopologyUnsupported.
   */
  registerManualClientEndpoint(channel: string, endpoint: string): void;
  /** Classic fanout: an automatic publisher of `topic`, published in this host's descriptor. */
  publisher(topic: string): FanoutPublisher;
  /** Classic fanout, manual topology (§4): a publisher not in the descriptor; subscribers reach it by endpoint. */
  registerManualPublisher(topic: string): FanoutPublisher;
  /**
   * Classic fanout: subscribes to `topic` at every automatic publisher found in descriptors, or — with
   * `{ endpoint }`, manual topology (§4) — at the node answering at that mesh endpoint.
   */
  subscribe(topic: string, handler: FanoutHandler, options?: SubscribeOptions): FanoutSubscription;
  /** Logical Multicast: the Spot joins the Channel (cluster-wide; survives the Spot's relocation). */
  joinChannel(spot: ChannelMemberRef, channel: string): Promise<void>;
  /** Logical Multicast: the Spot leaves the Channel. */
  leaveChannel(spot: ChannelMemberRef, channel: string): Promise<void>;
  /** Logical Multicast: sends `message` to every member Spot of the Channel's snapshot taken now. */
  multicast(channel: string, message: unknown): Promise<MulticastResult>;
  /** The STREAM session endpoint URL this host publishes (`sessions` option), where `zlink/client` connects. */
  readonly sessionEndpoint: string | undefined;
}

const STATE_OF: Record<HostLifecycleStateName, FrameworkRuntimeState> = {
  Preparing: FrameworkRuntimeState.Preparing,
  Serving: FrameworkRuntimeState.Serving,
  Relocating: FrameworkRuntimeState.Relocating,
  Relocated: FrameworkRuntimeState.Relocated,
  Draining: FrameworkRuntimeState.Draining,
  Stopped: FrameworkRuntimeState.Stopped,
  Error: FrameworkRuntimeState.Error,
};

export class Host implements FrameworkRuntime, RelocationHost {
  readonly nodeId: string;
  readonly applicationVersion: number;
  lifecycleGeneration = 0;
  readonly clock: Clock;
  readonly options: ResolvedRuntimeOptions;
  /** The application's stores, seen through call metrics (store-metrics.ts). */
  readonly stores: Stores;
  /** Every line carries this host's nodeId (logger.ts). */
  readonly logger: HostLogger;
  readonly types: ReadonlyMap<string, ObjectDefinition>;
  readonly objects: ObjectServer;
  readonly router: Router;
  readonly relocation: RelocationCoordinator;
  /** Instance Spot Close on this owner (§12). */
  readonly spotClose: InstanceSpotClose;
  /** STREAM, ClientServer, fanout, multicast (runtime/components): coordinated with the objects (§4, §14, §15). */
  readonly components: readonly HostComponent[];
  transport: Transport | undefined;
  lease: OwnerLease | undefined;
  endpoints: Record<string, string> = {};
  /** Latest descriptor list read from the store (discovery and placement). */
  descriptorSnapshot: NodeDescriptor[] = [];

  private readonly lifecycle: Actor<typeof hostLifecycleMachine>;
  private readonly statusPublisher: StatusPublisher;
  private shutdownPromise: Promise<TerminationResult> | undefined;
  private renewTimer: unknown;
  private discoveryTimer: unknown;
  private lastRenewAt = 0;
  private peerWaiters = new Set<() => void>();
  private loopsStopped = false;
  /** Published together with the Stopped state: a terminal status is never patched afterwards (§16). */
  private terminalPatch: Partial<RuntimeStatus> = {};
  /** Published together with the state a transition enters, so no observer sees one without the other. */
  private transitionPatch: Partial<RuntimeStatus> = {};
  /** Removes this host from the `zlink.relocation.units` gauge (once it stopped). */
  private readonly stopUnitGauge: () => void;

  constructor(options: ResolvedRuntimeOptions) {
    // Every machine actor gets `options.inspect`: wrapped once here so its events carry this host's nodeId.
    options = options.inspect === undefined ? options : { ...options, inspect: tagInspection(options.inspect, options.nodeId) };
    this.options = options;
    this.nodeId = options.nodeId;
    this.applicationVersion = options.applicationVersion;
    this.clock = options.clock ?? systemClock;
    this.stores = measuredStores(options.stores);
    this.logger = new HostLogger(options.logger, options.nodeId);
    this.types = new Map(options.types.map((t) => [t.type, t]));
    this.statusPublisher = new StatusPublisher({ state: FrameworkRuntimeState.Preparing, isReady: false, safeToShutdown: false });
    this.lifecycle = createActor(hostLifecycleMachine, { clock: this.clock, inspect: options.inspect as never });
    this.lifecycle.subscribe((snapshot) => {
      const state = STATE_OF[snapshot.value as HostLifecycleStateName];
      if (state !== this.statusPublisher.current.state) {
        telemetry.hostState(state);
        const patch = this.transitionPatch;
        this.transitionPatch = {};
        this.statusPublisher.publish(state === FrameworkRuntimeState.Stopped ? { ...patch, ...this.terminalPatch, state } : { ...patch, state });
        // Components are built after the machine starts (they need the router): the first Preparing is not theirs.
        for (const c of this.components ?? []) c.onStateChange?.(state);
      }
    });
    this.lifecycle.start();
    this.objects = new ObjectServer({
      self: this.selfRefProxy(),
      clock: this.clock,
      location: this.stores.location,
      relocationStore: this.stores.relocation,
      types: this.types,
      reply: (env, terminal) => this.router.reply(env, terminal),
      rejectStaleGeneration: (env, current) => this.router.rejectStaleGeneration(env, current),
      send: (to, message) => this.send(to, message),
      request: (to, message, opts) => this.request(to, message, opts),
      channels: {
        join: (spot, channel) => this.multicastComponent.join(spot, channel, 'ctx.self'),
        leave: (spot, channel) => this.multicastComponent.leave(spot, channel, 'ctx.self'),
      },
      logger: this.logger,
    });
    this.router = new Router({
      self: this.selfRefProxy(),
      clock: this.clock,
      location: this.stores.location,
      objects: this.objects,
      transport: () => this.transport,
      instanceTypeFor: (ref) => this.instanceTypeFor(ref),
      canPlaceInstances: () => this.state === FrameworkRuntimeState.Serving,
      placementNode: (type) => this.placementNode(type),
      inboundRefusal: () => this.inboundRefusal(),
      staging: (key) => this.relocation.staging(key),
      onControl: (from, message) => this.onControl(from, message),
      beforeFollow: (to) => this.relocation.beforeFollow(to),
      connectWaitMs: Math.max(1000, options.timing.leaseMs),
      restoreValidityMs: options.timing.restoreValidityMs,
      requestDiscovery: () => void this.discover(),
      recordMovedTerminal: (id, terminal) =>
        void this.stores.relocation
          .recordRequestTerminal(
            id,
            terminal.ok ? { ok: true, value: terminal.value } : { ok: false, error: terminal.error ?? 'request failed' },
            this.options.timing.requestTerminalTtlMs,
          )
          .catch((error: unknown) => this.logger.warn({ requestId: id, err: error }, 'late request terminal not recorded in the Relocation Store')),
      isKnownPeer: (peer) => this.descriptorSnapshot.some((d) => sameNode(d, peer)),
      logger: this.logger,
    });
    this.relocation = new RelocationCoordinator(this);
    this.spotClose = new InstanceSpotClose({
      clock: this.clock,
      logger: this.logger,
      objects: this.objects,
      location: this.stores.location,
      relocationStore: this.stores.relocation,
      storeRetryMs: options.timing.restoreValidityMs,
      terminal: (env, terminal) => this.router.terminal(env, terminal),
      unitOf: (key) => this.relocation.instanceUnit(key),
      invalidate: (key) => this.router.invalidate(key),
    });
    this.objects.closeHandler = this.spotClose;
    this.components = createComponents(options, this.componentPorts());
    this.stopUnitGauge = telemetry.addUnitStates((report) => {
      const units = this.relocation.diagnostics(0).units;
      // The in-flight source states are always reported (0 when empty): a gauge series that stopped being reported
      // would keep its last value in cumulative exporters.
      const bySource: Record<string, number> = { queued: 0, budget: 0, preparing: 0, safePoint: 0, sealed: 0, ...units.sourceByState };
      for (const [state, count] of Object.entries(bySource)) report('source', state, count);
      report('target', 'inFlight', units.targetInFlight);
    });
    // Per-unit detail (debug): only observed when it will be written, so a relocation at scale builds nothing otherwise.
    if (this.logger.debugEnabled)
      this.relocation.unitEvents.on((e) =>
        this.logger.debug(
          { side: e.side, unit: e.unit, kind: e.kind, state: e.state, point: e.point, batch: e.batch, objects: e.objects.length, root: e.objects[0], at: e.at, fellBack: e.fellBack },
          `relocation unit ${e.state}`,
        ),
      );
  }

  /**
   * @deprecated Internal callers use `logger` with fields; this keeps the old `host.log(level, message, error)`
   * call shape compiling (branches written before the logger) and routes it through the logger.
   */
  log(level: 'warn' | 'error', message: string, error?: unknown): void {
    this.logger[level](error === undefined ? {} : { err: error }, message);
  }

  /** The NodeRef of this run; the generation is known once start() read it from the store. */
  private selfRefProxy(): NodeRef {
    const host = this;
    return {
      get nodeId() {
        return host.nodeId;
      },
      get lifecycleGeneration() {
        return host.lifecycleGeneration;
      },
    };
  }

  get self(): NodeRef {
    return { nodeId: this.nodeId, lifecycleGeneration: this.lifecycleGeneration };
  }

  get state(): FrameworkRuntimeState {
    return this.statusPublisher.current.state;
  }

  get status(): RuntimeStatus {
    return this.statusPublisher.current;
  }

  /** The only way the host state changes. */
  transition(event: HostLifecycleEvent['type'], patch: Partial<RuntimeStatus> = {}): boolean {
    const before = this.lifecycle.getSnapshot();
    if (!before.can({ type: event } as HostLifecycleEvent)) return false;
    this.transitionPatch = patch;
    this.lifecycle.send({ type: event } as HostLifecycleEvent);
    this.transitionPatch = {};
    return true;
  }

  publish(patch: Partial<RuntimeStatus>): void {
    this.statusPublisher.publish(patch);
  }

  // ── startup ────────────────────────────────────────────────────────────────────────────

  async start(): Promise<void> {
    const startedAt = this.clock.now();
    try {
      this.lifecycleGeneration = await this.stores.descriptors.nextLifecycleGeneration(this.nodeId);
      const factory = this.options.transport ?? createTransport;
      this.transport = factory({
        self: { ...this.self, applicationVersion: this.applicationVersion },
        meshes: this.options.meshes,
        inFlightPayloadBudgetBytes: this.options.inFlightPayloadBudgetBytes,
        handlers: {
          onMessage: this.router.onMessage,
          onPayload: (from, id, result) => this.relocation.onPayload(from, id, result),
          onPeer: (peer) => this.onPeer(peer),
          onPeerLeaving: (peer) => this.router.onPeerLeaving(peer),
          onConnectionLost: (peer, info) => {
            this.router.onConnectionLost(peer, info);
            for (const c of this.components) c.onConnectionLost?.(peer, info);
          },
        },
      });
      this.endpoints = await this.transport.start();
      // Component listeners (STREAM session endpoints) are bound before the first descriptor names them.
      for (const c of this.components) await c.start?.();
      this.lease = await this.acquireLease();
      this.lastRenewAt = this.clock.now();
      this.scheduleRenew();
      const peers = await this.discover();
      this.scheduleDiscovery();
      await this.joinMesh(peers);
      await this.publishDescriptor(FrameworkRuntimeState.Serving);
      this.transition('COMPONENTS_READY');
      this.logger.info(
        {
          lifecycleGeneration: this.lifecycleGeneration,
          applicationVersion: this.applicationVersion,
          endpoints: this.endpoints,
          peers: peers.filter((d) => !sameNode(d, this.self)).length,
          startupMs: this.clock.now() - startedAt,
        },
        'host serving',
      );
    } catch (error) {
      this.logger.info({ lifecycleGeneration: this.lifecycleGeneration, error: (error as Error)?.message ?? String(error) }, 'host startup failed; cleaning up');
      this.transition('STARTUP_FAILED');
      // Bounded cleanup of whatever started (Error → Draining → Stopped).
      await this.shutdown({ deadlineMs: 5000 }).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Takes the owner lease exclusively: a live lease of this nodeId (another live host) refuses startup with
   * NodeIdInUseError, and that host's lease, descriptor, state and objects stay as they were.
   */
  private async acquireLease(): Promise<OwnerLease> {
    try {
      return await this.stores.descriptors.acquire(this.descriptor(FrameworkRuntimeState.Preparing), this.options.timing.leaseMs);
    } catch (error) {
      if (error instanceof LeaseHeldError) throw new NodeIdInUseError(this.nodeId, error.leaseExpiresInMs, { cause: error });
      throw error;
    }
  }

  /**
   * §3 "required component ready": before Serving, the host waits (bounded) until it is Ready on every mesh with
   * the peers its first descriptor snapshot lists. Otherwise a message accepted right after startup waits for a
   * connection, and a Shutdown soon after (§14 step 1: a sealed node sends no Hello) could never deliver it.
   * Peers that are slow or gone do not hold startup past the bound; they connect in the background as before.
   */
  private async joinMesh(snapshot: readonly NodeDescriptor[]): Promise<void> {
    const expected = snapshot.filter(
      (d) => !sameNode(d, this.self) && d.state !== FrameworkRuntimeState.Draining && d.state !== FrameworkRuntimeState.Stopped && Object.keys(d.endpoints).length > 0,
    );
    if (expected.length === 0) return;
    const until = this.clock.now() + Math.min(5000, 2 * this.options.timing.discoveryIntervalMs + 1000);
    const stillExpected = () => {
      const listed = this.descriptorSnapshot;
      return expected.filter((d) => listed.some((l) => sameNode(l, d)) && !this.transport?.isReadyOnEveryMesh(d));
    };
    while (stillExpected().length > 0 && this.clock.now() < until) {
      const wait = new AbortController();
      const timer = this.clock.setTimeout(() => wait.abort(), Math.max(1, until - this.clock.now()));
      await this.nextTopologyChange(wait.signal);
      this.clock.clearTimeout(timer);
    }
  }

  descriptor(state: FrameworkRuntimeState): NodeDescriptor {
    return {
      nodeId: this.nodeId,
      lifecycleGeneration: this.lifecycleGeneration,
      applicationVersion: this.applicationVersion,
      state,
      endpoints: this.endpoints,
      types: describeTypes(this.options.types),
      capacity: this.options.capacity,
      load: this.objects.size + this.relocation.inboundObjects,
      weight: this.options.weight,
      ...(this.options.maintenanceWave !== undefined ? { maintenanceWave: this.options.maintenanceWave } : {}),
      ...this.describeComponents(),
    };
  }

  private describeComponents(): { components?: Record<string, unknown> } {
    let described: Record<string, unknown> | undefined;
    for (const c of this.components) {
      const value = c.describe?.();
      if (value !== undefined) (described ??= {})[c.name] = value;
    }
    return described ? { components: described } : {};
  }

  private componentPorts(): ComponentPorts {
    const host = this;
    return {
      get self() {
        return host.self;
      },
      nodeId: this.nodeId,
      clock: this.clock,
      logger: this.logger,
      stores: this.stores,
      state: () => this.state,
      descriptors: () => this.descriptorSnapshot,
      send: (peer, message) => this.transport?.send(peer, message) ?? false,
      isReady: (peer) => this.transport?.peers(this.options.meshes[0]!.name).some((p) => p.state === 'Ready' && sameNode(p, peer)) ?? false,
      transport: () => this.transport,
      onUnitEvent: (listener) => this.relocation.unitEvents.on(listener),
      sendToObject: (to, body) => this.router.sendEncoded(to, body),
      hostedObjects: {
        get: (key) => this.objects.get(key),
        reply: (env, terminal) => this.router.reply(env, terminal),
        registerExtension: (name, restore) => void this.objects.extensions.set(name, restore),
        setSessionHandler: (handler, api) => {
          this.objects.sessionHandler = handler;
          this.objects.sessionsApi = api;
        },
      },
      sessionEnvelope: (to, body, gen, timeoutMs) => this.router.sessionEnvelope(to, body, gen, timeoutMs),
      republish: async () => {
        const state = this.state;
        if (state === FrameworkRuntimeState.Preparing || state === FrameworkRuntimeState.Stopped || state === FrameworkRuntimeState.Error) return;
        await this.publishDescriptor(state).catch((error: unknown) => this.logger.warn({ err: error }, 'descriptor republish failed'));
      },
    };
  }

  /** Runtime messages that are not application traffic: component messages by name, the rest is relocation's. */
  private onControl(from: NodeRef, message: RuntimeMessage): void {
    const name = componentOf(message.t);
    if (name === undefined) return this.relocation.onControl(from, message);
    const component = this.component(name);
    if (component?.onMessage) component.onMessage(from, message);
    else this.logger.debug({ peer: from.nodeId, type: message.t }, 'component message for no component here; dropped');
  }

  /** The component of that name (every host builds all of them: runtime/components/index.ts). */
  private component<T extends HostComponent>(name: string): T {
    return this.components.find((c) => c.name === name) as T;
  }

  /** §4 topology: every manual registration (RouteMesh peers and each component's own). */
  manualTopology(): readonly string[] {
    const registrations: string[] = [];
    if (this.transport?.hasManualPeers()) registrations.push('RouteMesh manual peer');
    for (const c of this.components) registrations.push(...(c.manualTopology?.() ?? []));
    return registrations;
  }

  async settleComponents(): Promise<void> {
    await Promise.all(this.components.map((c) => c.settleAccepted?.()));
  }

  /** Writes the descriptor under the owner lease; false when the lease is not held. */
  async publishDescriptor(state: FrameworkRuntimeState): Promise<boolean> {
    if (!this.lease) return false;
    return this.stores.descriptors.publish(this.lease, this.descriptor(state));
  }

  private scheduleRenew(): void {
    if (this.loopsStopped) return;
    const every = Math.max(10, Math.floor(this.options.timing.leaseMs / 3));
    this.renewTimer = this.clock.setTimeout(() => void this.renew().finally(() => this.scheduleRenew()), every);
  }

  /** §14: the lease keeps renewing through Draining, until cleanup releases it. */
  private async renew(): Promise<void> {
    if (!this.lease || this.loopsStopped) return;
    try {
      const held = await this.stores.descriptors.renew(this.lease, this.options.timing.leaseMs);
      if (held) {
        this.lastRenewAt = this.clock.now();
        return;
      }
      this.logger.error({ lifecycleGeneration: this.lifecycleGeneration }, 'owner lease was lost (another run may hold it now); the host enters Error');
      // A lost lease does not come back (another run may hold it now): stop renewing instead of logging forever.
      this.lease = undefined;
      this.transition('RUNTIME_ERROR');
    } catch (error) {
      if (this.clock.now() - this.lastRenewAt >= this.options.timing.leaseMs) {
        this.logger.error({ lifecycleGeneration: this.lifecycleGeneration, err: error }, 'owner lease could not be renewed before it expired; the host enters Error');
        this.transition('RUNTIME_ERROR');
      }
    }
  }

  private scheduleDiscovery(): void {
    if (this.loopsStopped) return;
    this.discoveryTimer = this.clock.setTimeout(() => void this.discover().finally(() => this.scheduleDiscovery()), this.options.timing.discoveryIntervalMs);
  }

  /**
   * Automatic discovery: peers come from Store descriptors (§4 topology). A failed read keeps the last snapshot;
   * with `failOnError` (the target search of a Relocate, §13 "Store read … fails") it rejects instead.
   */
  async discover(failOnError = false): Promise<NodeDescriptor[]> {
    try {
      const list = await this.stores.descriptors.list();
      this.descriptorSnapshot = list;
      this.transport?.updatePeers(list.filter((d) => !(d.nodeId === this.nodeId && d.lifecycleGeneration === this.lifecycleGeneration)));
      for (const c of this.components) c.onDescriptors?.(list);
      this.router.revalidateParked();
      this.wakePeerWaiters();
      return list;
    } catch (error) {
      this.logger.warn({ err: error }, 'descriptor discovery failed');
      if (failOnError) throw error;
      return this.descriptorSnapshot;
    }
  }

  private onPeer(peer: PeerInfo): void {
    this.logPeer(peer);
    // Runtime messages use the primary mesh: what waited for this peer flushes once it is Ready there. Being Ready
    // on every mesh is a target-selection condition (§5 order 5), not one for application messages.
    if (peer.state === 'Ready' && peer.mesh === this.options.meshes[0]!.name) {
      this.router.onPeerReady(peer);
      for (const c of this.components) c.onPeerReady?.(peer);
    }
    this.relocation.onPeer(peer);
    if (peer.state === 'Lost') for (const c of this.components) c.onPeerLost?.(peer);
    if (peer.state === 'Ready' && peer.mesh === this.options.meshes[0]!.name) for (const c of this.components) c.onPeerReady?.(peer);
    this.wakePeerWaiters();
  }

  private logPeer(peer: PeerInfo): void {
    const fields = { peer: peer.nodeId, peerGeneration: peer.lifecycleGeneration, mesh: peer.mesh, applicationVersion: peer.applicationVersion, source: peer.source };
    if (peer.state === 'Ready') this.logger.info(fields, 'peer admitted');
    else if (peer.state === 'Lost') this.logger.info(fields, 'peer lost');
    else if (peer.state === 'Draining') this.logger.info(fields, 'peer draining');
    else this.logger.debug({ ...fields, state: peer.state }, 'peer state');
  }

  /** Resolves on the next discovery or peer-table change (target selection waits on this, §5.1). */
  nextTopologyChange(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.peerWaiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.peerWaiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  private wakePeerWaiters(): void {
    for (const w of [...this.peerWaiters]) w();
  }

  // ── admission (§15) ──────────────────────────────────────────────────────────────────────

  private requireServing(what: string): void {
    const state = this.state;
    if (state !== FrameworkRuntimeState.Serving) {
      const name = Object.keys(FrameworkRuntimeState).find((k) => FrameworkRuntimeState[k as keyof typeof FrameworkRuntimeState] === state)!;
      throw new AdmissionError(name, `${what} is not admitted while the host is ${name} (admission is closed outside Serving; see docs/concepts.md "The host lifecycle")`);
    }
  }

  private inboundRefusal(): Terminal | undefined {
    const state = this.state;
    if (state === FrameworkRuntimeState.Draining || state === FrameworkRuntimeState.Stopped)
      return { ok: false, kind: 'shutdown', error: 'the host is shutting down: new messages are refused (docs/concepts.md "Shutdown and SafeToShutdown")' };
    return undefined;
  }

  private outboundRefusal(): Error | undefined {
    const state = this.state;
    if (state === FrameworkRuntimeState.Draining || state === FrameworkRuntimeState.Stopped)
      return new RequestError('shutdown', 'the host is shutting down: new requests end with a shutdown result (docs/concepts.md "Shutdown and SafeToShutdown")');
    if (state === FrameworkRuntimeState.Preparing || state === FrameworkRuntimeState.Error)
      return new RequestError('unavailable', 'the host is not ready');
    return undefined;
  }

  private instanceTypeFor(ref: ObjectRef): string | undefined {
    if ('type' in ref && ref.type) {
      const def = this.types.get(ref.type);
      return def?.kind === 'instance' ? ref.type : undefined;
    }
    let only: string | undefined;
    for (const def of this.types.values()) {
      if (def.kind !== 'instance') continue;
      if (only) return undefined; // ambiguous: the ref must name its type
      only = def.type;
    }
    return only;
  }

  private placementNode(type: string): NodeRef | undefined {
    const candidates = this.descriptorSnapshot.filter(
      (d) =>
        d.state === FrameworkRuntimeState.Serving &&
        d.types.some((t) => t.type === type && t.kind === 'instance') &&
        !sameNode(d, this.self) &&
        this.transport?.isReadyOnEveryMesh(d),
    );
    candidates.sort((a, b) => b.weight - a.weight || a.load - b.load || a.nodeId.localeCompare(b.nodeId));
    const best = candidates[0];
    return best ? { nodeId: best.nodeId, lifecycleGeneration: best.lifecycleGeneration } : undefined;
  }

  // ── application objects ──────────────────────────────────────────────────────────────────

  async createActor(type: string, id: string, options?: { spot?: string }): Promise<void> {
    checkId(type, 'type');
    checkId(id, 'id');
    if (options !== undefined && (typeof options !== 'object' || options === null)) throw new ArgumentError('options', 'must be an object');
    if (options?.spot !== undefined) checkId(options.spot, 'options.spot');
    this.requireServing('createActor');
    await this.objects.createActor(type, id, options?.spot);
  }

  async createSpot(type: string, id: string): Promise<void> {
    checkId(type, 'type');
    checkId(id, 'id');
    this.requireServing('createSpot');
    await this.objects.createSpot(type, id);
  }

  async join(actorId: string, spotId: string): Promise<void> {
    checkId(actorId, 'actorId');
    checkId(spotId, 'spotId');
    this.requireServing('join');
    await this.objects.join(actorId, spotId);
  }

  async leave(actorId: string): Promise<void> {
    checkId(actorId, 'actorId');
    this.requireServing('leave');
    await this.objects.leave(actorId);
  }

  send(to: ObjectRef, message: unknown): void {
    keyOfRef(to);
    const refusal = this.outboundRefusal();
    if (refusal) throw refusal;
    this.router.send(to, message);
  }

  request(to: ObjectRef, message: unknown, options?: RequestOptions): Promise<unknown> {
    try {
      keyOfRef(to);
      if (options !== undefined && (typeof options !== 'object' || options === null)) throw new ArgumentError('options', 'must be an object');
      if (options?.timeoutMs !== undefined && (typeof options.timeoutMs !== 'number' || !Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0))
        throw new ArgumentError('options.timeoutMs', 'must be a number of milliseconds greater than 0');
      checkSignal(options?.signal, 'options.signal');
    } catch (error) {
      return Promise.reject(error);
    }
    const refusal = this.outboundRefusal();
    if (refusal) return Promise.reject(refusal);
    return this.router.request(to, message, options);
  }

  async locate(ref: ObjectRef): Promise<NodeRef | undefined> {
    const key = keyOfRef(ref, 'ref');
    const record = await this.stores.location.get({ kind: key[0] === 'a' ? 'actor' : 'spot', id: key.slice(2) });
    return record ? { nodeId: record.owner.nodeId, lifecycleGeneration: record.owner.lifecycleGeneration } : undefined;
  }

  async closeSpot(ref: SpotRef, options?: RequestOptions): Promise<void> {
    const key = spotRefKey(ref, this.types);
    if (options !== undefined && (typeof options !== 'object' || options === null)) throw new ArgumentError('options', 'must be an object');
    if (options?.timeoutMs !== undefined && (typeof options.timeoutMs !== 'number' || !Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0))
      throw new ArgumentError('options.timeoutMs', 'must be a number of milliseconds greater than 0');
    const signal = checkSignal(options?.signal, 'options.signal');
    if (signal?.aborted) throw abortReason(signal);
    const refusal = this.outboundRefusal();
    if (refusal) throw refusal;
    try {
      await this.router.closeSpot(key, options);
    } catch (error) {
      // No owner record, or the owner hosts no Instance Spot of that id: the caller named the wrong Spot.
      if (error instanceof RequestError && error.kind === 'not-found') throw new ArgumentError('ref.spot', `cannot close '${key.slice(2)}': ${error.message}`);
      throw error;
    }
  }

  get sessionEndpoint(): string | undefined {
    return this.component<SessionsComponent>(SESSIONS).endpoint;
  }

  registerManualPeer(mesh: string, endpoint: string): void {
    checkId(mesh, 'mesh');
    checkId(endpoint, 'endpoint');
    if (!this.options.meshes.some((m) => m.name === mesh)) throw new ArgumentError('mesh', `this host has no mesh '${mesh}'`);
    this.transport?.registerManualPeer(mesh, endpoint);
  }

  // ── ClientServer (runtime/components/client-server) ─────────────────────────────────────────

  private get clientServer(): ClientServer {
    return this.component<ClientServer>(CLIENT_SERVER);
  }

  serve<Req = unknown, Rep = unknown>(channel: string, handler: ServeHandler<Req, Rep>, options?: ServeOptions): Promise<ServerRegistration> {
    return this.clientServer.serve(channel, handler, options);
  }

  call<Rep = unknown>(channel: string, request: unknown, options?: CallOptions): Promise<Rep> {
    return this.clientServer.call(channel, request, options) as Promise<Rep>;
  }

  registerManualClientEndpoint(channel: string, endpoint: string): void {
    this.clientServer.registerManualClientEndpoint(channel, endpoint);
  }

  // ── Classic fanout and Logical Multicast (runtime/components) ─────────────────────────────


  private get fanoutComponent(): FanoutComponent {
    return this.component<FanoutComponent>(FANOUT);
  }

  private get multicastComponent(): MulticastComponent {
    return this.component<MulticastComponent>(MULTICAST);
  }

  publisher(topic: string): FanoutPublisher {
    return this.fanoutComponent.publisher(topic);
  }

  registerManualPublisher(topic: string): FanoutPublisher {
    return this.fanoutComponent.registerManualPublisher(topic);
  }

  subscribe(topic: string, handler: FanoutHandler, options?: SubscribeOptions): FanoutSubscription {
    return this.fanoutComponent.subscribe(topic, handler, options);
  }

  joinChannel(spot: ChannelMemberRef, channel: string): Promise<void> {
    return this.multicastComponent.join(spot, channel);
  }

  leaveChannel(spot: ChannelMemberRef, channel: string): Promise<void> {
    return this.multicastComponent.leave(spot, channel);
  }

  multicast(channel: string, message: unknown): Promise<MulticastResult> {
    return this.multicastComponent.multicast(channel, message);
  }

  on(event: HostEventName, listener: HostEventListener): () => void;
  on(event: typeof UNIT_CHANGED, listener: UnitListener): () => void;
  on(event: HostEventName | typeof UNIT_CHANGED, listener: HostEventListener | UnitListener): () => void {
    if (typeof listener !== 'function') throw new ArgumentError('listener', 'must be a function');
    if (event === UNIT_CHANGED) return this.relocation.unitEvents.on(listener as UnitListener);
    if (event !== RELOCATION_CHANGED && event !== TERMINATION_CHANGED)
      throw new ArgumentError('event', `must be '${RELOCATION_CHANGED}', '${TERMINATION_CHANGED}' or '${UNIT_CHANGED}'`);
    return this.statusPublisher.on(event, listener as HostEventListener);
  }

  observe(opts?: { signal?: AbortSignal }): AsyncIterable<RuntimeStatus> {
    if (opts !== undefined && (typeof opts !== 'object' || opts === null)) throw new ArgumentError('options', 'must be an object');
    return this.statusPublisher.observe(checkSignal(opts?.signal));
  }

  diagnostics(opts?: { limit?: number }): RelocationDiagnostics {
    if (opts !== undefined && (typeof opts !== 'object' || opts === null)) throw new ArgumentError('options', 'must be an object');
    const limit = opts?.limit ?? 20;
    if (!Number.isInteger(limit) || limit < 0) throw new ArgumentError('limit', 'must be a non-negative integer');
    return this.relocation.diagnostics(limit);
  }

  // ── Relocate (§2, §6) ────────────────────────────────────────────────────────────────────

  relocate(options: RelocationOptions, opts?: { signal?: AbortSignal }): Promise<RelocationResult> {
    try {
      const parsed = parseRelocationOptions(options, this.applicationVersion);
      if (opts !== undefined && (typeof opts !== 'object' || opts === null)) throw new ArgumentError('opts', 'must be an object');
      const signal = checkSignal(opts?.signal, 'opts.signal');
      // §6: a caller that cancelled before calling never waited, so it starts or joins nothing.
      if (signal?.aborted) return Promise.reject(abortReason(signal));
      return raceAbort(this.relocation.relocate(parsed), signal);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  // ── Shutdown (§14) ──────────────────────────────────────────────────────────────────────

  shutdown(opts?: { deadlineMs?: number; signal?: AbortSignal }): Promise<TerminationResult> {
    let parsed: { deadlineMs: number; signal?: AbortSignal };
    try {
      parsed = parseShutdownOptions(opts);
    } catch (error) {
      return Promise.reject(error);
    }
    // A caller that cancelled before calling never waited: it starts nothing.
    if (parsed.signal?.aborted) return Promise.reject(abortReason(parsed.signal));
    // §6: concurrent Shutdowns share one operation; Shutdown in Stopped returns the stored result.
    if (!this.shutdownPromise) {
      if (this.state === FrameworkRuntimeState.Stopped)
        return Promise.resolve(this.status.lastTermination ?? { outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
      this.logger.info(
        { state: nameOf(FrameworkRuntimeState, this.state), deadlineMs: parsed.deadlineMs, objects: this.objects.size, pendingRequests: this.router.pendingRequests },
        'shutdown started',
      );
      this.shutdownPromise = this.runShutdown(parsed.deadlineMs);
    }
    return raceAbort(this.shutdownPromise, parsed.signal);
  }

  private runShutdown(deadlineMs: number): Promise<TerminationResult> {
    const startedAt = this.clock.now();
    const stopped = (result: TerminationResult) => {
      this.stopUnitGauge();
      this.logger.info(
        { outcome: nameOf(TerminationOutcome, result.outcome), reason: nameOf(TerminationReason, result.reason), shutdownMs: this.clock.now() - startedAt },
        'host stopped',
      );
    };
    const machine = shutdownMachine.provide({
      actors: {
        sealAdmission: step(async () => {
          this.transition('SHUTDOWN_SEALED');
          this.transport?.seal();
          // §14 race table: a pending Relocate ends Blocked/ShutdownRequested; started units reach a terminal.
          this.relocation.onShutdownSealed();
        }),
        publishDraining: step(async () => {
          await this.publishDescriptor(FrameworkRuntimeState.Draining);
        }),
        drainAcceptedWork: step(async (signal) => {
          // Components' accepted work (handlers, events, session barriers) drains alongside the objects' (§14 step 3).
          const components = Promise.all(this.components.map((c) => c.drain?.(signal)));
          // Messages this host accepted before the seal are handed on first (not dropped at the router's close).
          await this.router.whenIdle();
          await this.relocation.settled();
          await this.objects.settleInFlight();
          await this.objects.drain();
          await components;
        }),
        closeSpots: step(async (signal) => {
          await this.objects.closeSpots('HostShutdown', signal);
        }),
        cleanupResources: step(async () => {
          await this.cleanup();
        }),
        forceTeardown: step(async () => {
          await this.forceTeardown();
        }),
      },
    });
    return new Promise<TerminationResult>((resolve) => {
      const actor = createActor(machine, { input: { deadlineMs }, clock: this.clock, inspect: this.options.inspect as never });
      actor.subscribe({
        complete: () => {
          let result = actor.getSnapshot().output!;
          // §13: a descriptor rollback that could not be confirmed ends in bounded teardown, TeardownFailed.
          if (this.relocation.rollbackUnconfirmed) result = { outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.TeardownFailed };
          // The result goes out with the Stopped state itself: Stopped is terminal and never patched later.
          this.terminalPatch = { lastTermination: result };
          this.transition('CLEANUP_COMPLETE');
          telemetry.termination(result);
          stopped(result);
          resolve(result);
        },
        error: (error) => {
          // The machine handles every step's error; this is a defect, still a bounded terminal.
          this.logger.error({ err: error }, 'shutdown machine failed; forcing teardown');
          void this.forceTeardown()
            .catch((teardownError: unknown) => this.logger.error({ err: teardownError }, 'force teardown after a shutdown machine failure'))
            .finally(() => {
              const result = { outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.TeardownFailed } as const;
              this.terminalPatch = { lastTermination: result };
              this.transition('CLEANUP_COMPLETE');
              telemetry.termination(result);
              stopped(result);
              resolve(result);
            });
        },
      });
      actor.start();
    });
  }

  private stopLoops(): void {
    this.loopsStopped = true;
    this.clock.clearTimeout(this.renewTimer);
    this.clock.clearTimeout(this.discoveryTimer);
    this.wakePeerWaiters();
  }

  /** §14 step 5 and its cleanup order: local scope, owner records, descriptor and lease, transport. */
  private async cleanup(): Promise<void> {
    const failures: unknown[] = [];
    this.objects.stopTimers();
    this.relocation.close();
    // §15: whatever accepted request is still here (none after a drain within the deadline) ends with a shutdown result.
    this.endAcceptedWork();
    // Only the source holding current authority removes its records (§14 cleanup step 2); an Instance Spot's
    // creation record goes with its owner record (it lives as long as the Spot).
    const removals = [...this.objects.values()].map((o) =>
      this.stores.location
        .remove({ object: { kind: o.kind, id: o.id }, opId: `shutdown:${nodeKey(this.self)}:${o.key}`, expectedAuthorityGeneration: o.authorityGeneration })
        .then((result) => {
          if (o.def.kind === 'instance' && result.status !== 'conflict')
            return this.stores.relocation.removeInstanceCreation(o.id, o.objectGeneration).catch((error: unknown) =>
              this.logger.warn({ spot: o.id, err: error }, 'Instance Spot creation record not removed from the Relocation Store'),
            );
          return undefined;
        })
        .catch((error: unknown) => failures.push(error)),
    );
    await Promise.all(removals);
    // Before the descriptor goes (peers close their end when it vanishes): every peer is asked to stop sending
    // here and answers after its last message, while this router still answers each one (a redirect, a reply or
    // a shutdown result, §15) — so replies already accepted have left and been read (item 12), and nothing a
    // peer sent during Shutdown is dropped unanswered (item 9).
    await this.transport?.quiesce?.();
    this.stopLoops();
    if (this.lease) {
      await this.stores.descriptors.release(this.lease).catch((error: unknown) => failures.push(error));
      this.lease = undefined;
    }
    // Component listeners and connections go after the descriptor that advertised them, before the transport.
    for (const c of this.components) await c.close?.().catch((error: unknown) => failures.push(error));
    this.router.close();
    await this.transport?.close();
    this.objects.releaseAll();
    if (failures.length) throw new AggregateError(failures, 'cleanup could not remove every record');
  }

  /**
   * §15 last paragraph: an accepted request ends exactly once, also when its handler never returns. Before the router
   * and transport close, every request still accepted here — queued, held or running — gets a shutdown result (its
   * caller's own ones are settled by router.close); a handler that returns later replies nothing.
   */
  private endAcceptedWork(): void {
    this.objects.endAccepted((env) =>
      this.router.terminal(env, { ok: false, kind: 'shutdown', error: 'the host shut down before the request completed (its handler had not returned)' }),
    );
  }

  /** Past the deadline: release what is left without waiting on anything unbounded. */
  private async forceTeardown(): Promise<void> {
    let forceCloseFailures: unknown[] | undefined;
    this.objects.stopTimers();
    this.relocation.close();
    this.endAcceptedWork();
    this.stopLoops();
    this.router.close();
    const lease = this.lease;
    this.lease = undefined;
    for (const c of this.components) {
      try {
        c.forceClose?.();
      } catch (error) {
        // Reported with the rest below; one component's failure does not keep the others or the transport open.
        (forceCloseFailures ??= []).push(error);
      }
    }
    // Each release is attempted whatever the others do (one that throws at the call does not keep the transport
    // open); each wait is bounded, and its timer cleared once the wait is over, so nothing keeps the process alive.
    // What failed is reported once everything was attempted (the machine's forcing onError: still `done`).
    const failures: unknown[] = [...(forceCloseFailures ?? [])];
    const bounded = async (start: () => Promise<unknown> | undefined): Promise<void> => {
      let p: Promise<unknown> | undefined;
      try {
        p = start();
      } catch (error) {
        failures.push(error);
        return;
      }
      let timer: unknown;
      await Promise.race([p?.catch((error: unknown) => void failures.push(error)), new Promise<void>((r) => (timer = this.clock.setTimeout(r, 1000)))]);
      this.clock.clearTimeout(timer);
    };
    await Promise.all([bounded(() => (lease ? this.stores.descriptors.release(lease) : undefined)), bounded(() => this.transport?.close())]);
    this.objects.releaseAll();
    if (failures.length) throw new AggregateError(failures, 'force teardown could not release everything');
  }
}

/** A shutdown step as a promise actor whose signal aborts when the machine leaves the step (deadline). */
function step(run: (signal: AbortSignal) => Promise<void>) {
  return fromPromise<void, void>(({ signal }) => run(signal));
}

export async function createRuntime(options: RuntimeOptions): Promise<FrameworkRuntime> {
  const host = new Host(parseRuntimeOptions(options));
  await host.start();
  return host;
}
