/**
 * ClientServer (§1.1, §4, §14, §15): servers register a handler under a ChannelName and are published in the host's
 * descriptor; clients pick one server per call by weight (select-one) among the Serving hosts that serve the
 * channel, or name a node RID (Node direct). A manual client endpoint replaces discovery for its channel and is
 * manual topology (§4). Calls and replies travel as `c.clientServer.*` node messages; values go through the one codec.
 *
 * Every accepted call ends exactly once for its caller: reply, handler error, timeout, connection loss
 * (`unavailable`) or shutdown — also while the handler is still running (§15 last paragraph: a waiting application
 * callback never blocks infrastructure; at the shutdown deadline the caller gets `shutdown` and a later reply from
 * the handler is dropped).
 *
 * §15 admission, as this host applies it:
 * - server, select-one call: run only in Serving; otherwise the caller is told `not-selectable` and picks another
 *   server (its descriptor snapshot was stale) — excluded from new selection in Relocating and Relocated.
 * - server, Node direct call: run in Serving and Relocating (the node is the owner of its servers until the
 *   relocation's last unit is detached, which is when the host leaves Relocating); `unavailable` in Relocated (no
 *   local stateful owner); `shutdown` in Draining and later.
 * - accepted handlers keep running and their replies go back over the kept connection in every state until the
 *   shutdown deadline.
 * - client: a new call from a Draining host ends with `shutdown`; calls submitted before reach their terminal.
 */
import type { NodeDescriptor, NodeRef } from '../../../stores/types';
import type { PeerInfo, RuntimeMessage } from '../../../transport/types';
import { FrameworkRuntimeState, nameOf } from '../../../vocabulary';
import { decodeValue, encodeValue } from '../../codec';
import { abortReason, AbortError, AdmissionError, ArgumentError, RemoteHandlerError, RequestError } from '../../errors';
import { checkId, nodeKey, sameNode } from '../../keys';
import { checkSignal } from '../../options';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../../router';
import type { ComponentPorts, HostComponent } from '../component';
import {
  CALL,
  CANCEL,
  checkChannelName,
  CLIENT_SERVER,
  isWeight,
  parseCall,
  parseCancel,
  parseReply,
  readServers,
  REPLY,
  type CallMessage,
  type RefusalKind,
  type ReplyMessage,
  type ServersDescriptor,
} from './protocol';
import { selectOne, type Candidate, type RandomSource } from './select-one';
import type { CallOptions, ServeHandler, ServeOptions, ServerRegistration } from './types';

export interface ClientServerOptions {
  /** Runtime messages travel on the host's first mesh; manual client endpoints are dialed there. */
  readonly primaryMesh: string;
  /** How long a call waits for a known server (or the named node) to become reachable before `unavailable`. */
  readonly connectWaitMs: number;
  /** select-one's random source (tests pass a seeded one). @default Math.random */
  readonly random?: RandomSource;
}

interface Server {
  readonly channel: string;
  readonly weight: number;
  readonly handler: ServeHandler<unknown, unknown>;
  /** false once its registration closed: no new calls, accepted ones finish. */
  open: boolean;
  readonly accepted: Set<Accepted>;
  readonly idle: Set<() => void>;
  closing?: Promise<void>;
}

/** A call this host's server accepted: its handler is running; it ends once (reply, error or shutdown). */
interface Accepted {
  readonly key: string;
  readonly id: string;
  readonly from: NodeRef;
  readonly local: boolean;
  readonly server: Server;
  readonly controller: AbortController;
}

/** A call this host made and that has not ended yet. */
interface Call {
  readonly id: string;
  readonly channel: string;
  readonly body: Uint8Array;
  /** Node direct: the RID named by the caller. */
  readonly node: string | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  timer: unknown;
  /** Started when the call first had to wait for a connection; ends it `unavailable` at connectWaitMs. */
  waitTimer: unknown;
  cleanup?: () => void;
  /** Where it was sent (self for a local server); undefined while it waits for a route. */
  to: NodeRef | undefined;
  local: boolean;
  /** select-one: servers that answered `not-selectable` for this call. */
  readonly tried: Set<string>;
  /** select-one found nothing in the snapshot: the descriptors were read once more, fresh. */
  fresh: readonly NodeDescriptor[] | undefined;
  refreshed: boolean;
}

type Route =
  | { readonly kind: 'local' }
  | { readonly kind: 'peer'; readonly peer: NodeRef }
  | { readonly kind: 'wait'; readonly why: string }
  | { readonly kind: 'refresh' }
  | { readonly kind: 'end'; readonly error: Error };

type Refusal = { readonly k: RefusalKind; readonly e: string };

const STATE_NAME = (state: FrameworkRuntimeState) => nameOf(FrameworkRuntimeState, state);

export class ClientServer implements HostComponent {
  readonly name = CLIENT_SERVER;
  private readonly servers = new Map<string, Server>();
  /** Accepted calls by caller run and call id. */
  private readonly accepted = new Map<string, Accepted>();
  private readonly calls = new Map<string, Call>();
  /** Calls waiting for a server (or the named node) to become reachable. */
  private readonly waiting = new Set<Call>();
  /** Manual client endpoints by channel (§4: registration, not connection, is manual topology). */
  private readonly manual = new Map<string, string[]>();
  private readonly idleWaiters = new Set<() => void>();
  private seq = 0;
  private closed = false;

  constructor(
    private readonly ports: ComponentPorts,
    private readonly options: ClientServerOptions,
  ) {}

  // ── public operations (host.serve / host.call / host.registerManualClientEndpoint) ─────────────────

  async serve<Req, Rep>(channel: string, handler: ServeHandler<Req, Rep>, options?: ServeOptions): Promise<ServerRegistration> {
    checkChannelName(channel, 'channel');
    if (typeof handler !== 'function') throw new ArgumentError('handler', 'must be a function (request, info) => reply');
    if (options !== undefined && (typeof options !== 'object' || options === null)) throw new ArgumentError('options', 'must be an object');
    for (const key of Object.keys(options ?? {})) if (key !== 'weight') throw new ArgumentError(`options.${key}`, "is not a serve option (known: weight)");
    if (options?.weight !== undefined && !isWeight(options.weight)) throw new ArgumentError('options.weight', 'must be a finite number greater than 0');
    const state = this.ports.state();
    // §15 ClientServer server in Draining: handler admission is closed; a new registration would be one more.
    if (this.closed || state === FrameworkRuntimeState.Draining || state === FrameworkRuntimeState.Stopped || state === FrameworkRuntimeState.Error)
      throw new AdmissionError(STATE_NAME(state), `serve is not admitted while the host is ${STATE_NAME(state)}`);
    if (this.servers.has(channel)) throw new ArgumentError('channel', `'${channel}' is already served on this host; close that registration first`);
    // The request is whatever the caller sent (decoded); its type is the application's contract with its callers.
    const server: Server = { channel, weight: options?.weight ?? 1, handler: handler as ServeHandler<unknown, unknown>, open: true, accepted: new Set(), idle: new Set() };
    this.servers.set(channel, server);
    // Resolves once the descriptor that lists it is written: any client that reads descriptors from now on sees it.
    await this.ports.republish();
    return {
      channel,
      close: () => (server.closing ??= this.closeServer(server)),
    };
  }

  private async closeServer(server: Server): Promise<void> {
    server.open = false;
    if (this.servers.get(server.channel) === server) this.servers.delete(server.channel);
    await this.ports.republish();
    if (server.accepted.size > 0) await new Promise<void>((resolve) => server.idle.add(resolve));
  }

  call(channel: string, request: unknown, options?: CallOptions): Promise<unknown> {
    let body: Uint8Array;
    let timeoutMs: number;
    let signal: AbortSignal | undefined;
    try {
      checkChannelName(channel, 'channel');
      if (options !== undefined && (typeof options !== 'object' || options === null)) throw new ArgumentError('options', 'must be an object');
      for (const key of Object.keys(options ?? {}))
        if (key !== 'node' && key !== 'timeoutMs' && key !== 'signal') throw new ArgumentError(`options.${key}`, 'is not a call option (known: node, timeoutMs, signal)');
      if (options?.node !== undefined) checkId(options.node, 'options.node');
      timeoutMs = options?.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
      if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0)
        throw new ArgumentError('options.timeoutMs', 'must be a number of milliseconds greater than 0');
      signal = checkSignal(options?.signal, 'options.signal');
      // Copied at the call (one codec): the caller may change the object afterwards; a refused value throws here.
      body = encodeValue(request, 'request');
    } catch (error) {
      return Promise.reject(error);
    }
    const refusal = this.outboundRefusal();
    if (refusal) return Promise.reject(refusal);
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<unknown>((resolve, reject) => {
      const call: Call = {
        id: `${++this.seq}`,
        channel,
        body,
        node: options?.node,
        resolve,
        reject,
        timer: undefined,
        waitTimer: undefined,
        to: undefined,
        local: false,
        tried: new Set(),
        fresh: undefined,
        refreshed: false,
      };
      const target = call.node === undefined ? `channel '${channel}'` : `node '${call.node}' (channel '${channel}')`;
      call.timer = this.ports.clock.setTimeout(() => this.endCall(call, new RequestError('timeout', `call to ${target} timed out after ${timeoutMs} ms`)), timeoutMs);
      if (signal) {
        const onAbort = () => this.endCall(call, abortReason(signal));
        signal.addEventListener('abort', onAbort, { once: true });
        call.cleanup = () => signal.removeEventListener('abort', onAbort);
      }
      this.calls.set(call.id, call);
      this.route(call);
    });
  }

  registerManualClientEndpoint(channel: string, endpoint: string): void {
    checkChannelName(channel, 'channel');
    checkId(endpoint, 'endpoint');
    const list = this.manual.get(channel);
    if (list?.includes(endpoint)) return;
    const transport = this.ports.transport();
    try {
      // The mesh's own dialer (reconnect with backoff, Hello/Admit): the same path a manual RouteMesh peer takes,
      // but the §4 registration is this one, so it is not also reported as a RouteMesh peer.
      if (transport?.connectEndpoint) transport.connectEndpoint(this.options.primaryMesh, endpoint);
      else transport?.registerManualPeer(this.options.primaryMesh, endpoint);
    } catch (error) {
      throw new ArgumentError('endpoint', error instanceof Error ? error.message : String(error));
    }
    if (list) list.push(endpoint);
    else this.manual.set(channel, [endpoint]);
    this.retryWaiting();
  }

  // ── HostComponent hooks ──────────────────────────────────────────────────────────────────────────

  describe(): ServersDescriptor | undefined {
    const servers = [...this.servers.values()].filter((s) => s.open).map((s) => ({ channel: s.channel, weight: s.weight }));
    return servers.length ? { servers } : undefined;
  }

  manualTopology(): readonly string[] {
    const registrations: string[] = [];
    for (const [channel, endpoints] of this.manual) for (const e of endpoints) registrations.push(`ClientServer client endpoint ${e} (channel '${channel}')`);
    return registrations;
  }

  onStateChange(): void {
    this.retryWaiting();
  }

  onDescriptors(): void {
    this.retryWaiting();
  }

  onPeerReady(): void {
    this.retryWaiting();
  }

  onMessage(from: NodeRef, message: RuntimeMessage): void {
    const m = message as Record<string, unknown>;
    switch (message.t) {
      case CALL: {
        const call = parseCall(m);
        if (call) return this.onCall(from, call, false);
        break;
      }
      case REPLY: {
        const reply = parseReply(m);
        if (reply) return this.onReply(from, reply);
        break;
      }
      case CANCEL: {
        const cancel = parseCancel(m);
        if (cancel) return void this.accepted.get(`${nodeKey(from)}|${cancel.id}`)?.controller.abort(new AbortError('the caller stopped waiting (timeout or abort)'));
        break;
      }
    }
    this.ports.logger.warn({ peer: from.nodeId, type: message.t }, 'invalid ClientServer message dropped');
  }

  onPeerLost(peer: NodeRef): void {
    const mesh = (peer as Partial<PeerInfo>).mesh;
    if (mesh === undefined || mesh === this.options.primaryMesh) this.connectionGone(peer);
  }

  onConnectionLost(peer: NodeRef): void {
    this.connectionGone(peer);
  }

  /** §14 step 3: accepted handlers and submitted calls reach their terminal; at the deadline the rest end `shutdown`. */
  drain(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const check = () => {
        if (this.accepted.size === 0 && this.calls.size === 0) done();
      };
      const onAbort = () => {
        this.endAll('the shutdown deadline passed before it ended');
        done();
      };
      const done = () => {
        this.idleWaiters.delete(check);
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.idleWaiters.add(check);
      check();
    });
  }

  /** §14 step 5: after the descriptor is released. Whatever is left ends `shutdown` while the transport is still open. */
  async close(): Promise<void> {
    this.forceClose();
  }

  forceClose(): void {
    this.closed = true;
    this.endAll('the host shut down before it ended');
    this.servers.clear();
  }

  // ── client side ──────────────────────────────────────────────────────────────────────────────────

  private outboundRefusal(): RequestError | undefined {
    const state = this.ports.state();
    // §15 ChannelName select-one / Node direct in Draining: new calls end with a shutdown result.
    if (this.closed || state === FrameworkRuntimeState.Draining || state === FrameworkRuntimeState.Stopped)
      return new RequestError('shutdown', 'the host is shutting down: new calls end with a shutdown result (docs/concepts.md "ClientServer")');
    if (state === FrameworkRuntimeState.Preparing || state === FrameworkRuntimeState.Error) return new RequestError('unavailable', 'the host is not ready');
    return undefined;
  }

  private route(call: Call): void {
    if (this.calls.get(call.id) !== call) return;
    const route = call.node === undefined ? this.selectRoute(call) : this.directRoute(call.node);
    switch (route.kind) {
      case 'local':
        return this.sendLocal(call);
      case 'peer': {
        const message: CallMessage = { t: CALL, id: call.id, ch: call.channel, b: call.body, d: call.node === undefined ? 0 : 1 };
        if (this.ports.send(route.peer, message as unknown as RuntimeMessage)) {
          this.routed(call, route.peer, false);
          return;
        }
        return this.wait(call, `no connection to ${route.peer.nodeId} could take it`);
      }
      case 'wait':
        return this.wait(call, route.why);
      case 'refresh': {
        call.refreshed = true;
        this.ports.stores.descriptors.list().then(
          (list) => {
            call.fresh = list;
            this.route(call);
          },
          () => this.route(call),
        );
        return;
      }
      case 'end':
        return this.endCall(call, route.error);
    }
  }

  private routed(call: Call, to: NodeRef, local: boolean): void {
    call.to = to;
    call.local = local;
    this.waiting.delete(call);
    if (call.waitTimer !== undefined) this.ports.clock.clearTimeout(call.waitTimer);
    call.waitTimer = undefined;
  }

  private sendLocal(call: Call): void {
    const self = this.ports.self;
    this.routed(call, self, true);
    const message: CallMessage = { t: CALL, id: call.id, ch: call.channel, b: call.body, d: call.node === undefined ? 0 : 1 };
    // Asynchronous like a remote call: the handler never runs inside the caller's turn.
    queueMicrotask(() => {
      if (this.calls.get(call.id) === call) this.onCall(self, message, true);
    });
  }

  private wait(call: Call, why: string): void {
    call.to = undefined;
    this.waiting.add(call);
    call.waitTimer ??= this.ports.clock.setTimeout(
      () => this.endCall(call, new RequestError('unavailable', `${why}; nothing became reachable within ${this.options.connectWaitMs} ms`)),
      this.options.connectWaitMs,
    );
  }

  private retryWaiting(): void {
    for (const call of [...this.waiting]) this.route(call);
  }

  /** Node direct: exactly that node, or an error; never another node. */
  private directRoute(node: string): Route {
    if (node === this.ports.nodeId) return { kind: 'local' };
    const peer = this.peerRecord(node);
    if (peer?.state === 'Ready' && this.ports.isReady(peer)) return { kind: 'peer', peer };
    const descriptor = latest(this.ports.descriptors()).get(node);
    // §15 Node direct in Draining: new requests end with a shutdown result (the peer told us it sealed).
    if (peer?.state === 'Draining' || descriptor?.state === FrameworkRuntimeState.Draining)
      return { kind: 'end', error: new RequestError('shutdown', `node '${node}' is shutting down: new requests end with a shutdown result`) };
    if (peer || descriptor || this.manualIdentities().some((ref) => ref.nodeId === node)) return { kind: 'wait', why: `node '${node}' is not connected yet` };
    return { kind: 'end', error: new RequestError('unavailable', `node '${node}' is not known here: no descriptor lists it and no connection reaches it`) };
  }

  /** select-one among the servers of the channel (§15: only Serving hosts that are Ready peers, and this host if it serves). */
  private selectRoute(call: Call): Route {
    const descriptors = call.fresh ?? this.ports.descriptors();
    const found = this.candidates(call.channel, call.tried, descriptors);
    const pick = selectOne(found.ready, this.options.random);
    if (pick === 'local') return { kind: 'local' };
    if (pick) return { kind: 'peer', peer: pick };
    if (found.waiting > 0) return { kind: 'wait', why: `no server of channel '${call.channel}' is connected yet` };
    if (!call.refreshed && !this.manual.has(call.channel)) return { kind: 'refresh' };
    const excluded = Object.entries(found.excluded).map(([state, n]) => `${n} ${state}`);
    const detail = excluded.length ? ` (excluded from new selection: ${excluded.join(', ')})` : '';
    const refused = call.tried.size ? `; ${call.tried.size} server(s) turned it away as not selectable` : '';
    return {
      kind: 'end',
      error: new RequestError(
        'unavailable',
        this.manual.has(call.channel)
          ? `no server for channel '${call.channel}' at its manual client endpoints${detail}${refused}`
          : `no server for channel '${call.channel}': no Serving host serves it${detail}${refused}`,
      ),
    };
  }

  private candidates(
    channel: string,
    tried: ReadonlySet<string>,
    descriptors: readonly NodeDescriptor[],
  ): { ready: Candidate<NodeRef | 'local'>[]; waiting: number; excluded: Record<string, number> } {
    const ready: Candidate<NodeRef | 'local'>[] = [];
    const excluded: Record<string, number> = {};
    let waiting = 0;
    const byNode = latest(descriptors);
    const endpoints = this.manual.get(channel);
    if (endpoints) {
      // A manual client endpoint replaces discovery for its channel: calls go to the nodes at those endpoints.
      for (const endpoint of endpoints) {
        const ref = this.identityAt(endpoint, descriptors);
        if (!ref) {
          waiting++;
          continue;
        }
        if (tried.has(nodeKey(ref))) continue;
        const state = this.peerState(ref);
        if (state === 'Ready') ready.push({ target: ref, weight: serversOf(byNode.get(ref.nodeId))?.get(channel) ?? 1 });
        else if (state === 'Draining') excluded.Draining = (excluded.Draining ?? 0) + 1;
        else waiting++;
      }
      return { ready, waiting, excluded };
    }
    const own = this.servers.get(channel);
    if (own?.open && this.ports.state() === FrameworkRuntimeState.Serving && !tried.has(nodeKey(this.ports.self))) ready.push({ target: 'local', weight: own.weight });
    for (const d of byNode.values()) {
      if (d.nodeId === this.ports.nodeId) continue;
      const weight = serversOf(d)?.get(channel);
      if (weight === undefined) continue;
      if (d.state !== FrameworkRuntimeState.Serving) {
        const state = STATE_NAME(d.state);
        excluded[state] = (excluded[state] ?? 0) + 1;
        continue;
      }
      if (tried.has(nodeKey(d))) continue;
      const state = this.peerState(d);
      if (state === 'Ready') ready.push({ target: { nodeId: d.nodeId, lifecycleGeneration: d.lifecycleGeneration }, weight });
      else if (state === 'Draining') excluded.Draining = (excluded.Draining ?? 0) + 1;
      else waiting++;
    }
    return { ready, waiting, excluded };
  }

  /** The node a manual endpoint reaches: learned from its challenge, or from a descriptor that publishes the endpoint. */
  private identityAt(endpoint: string, descriptors: readonly NodeDescriptor[]): NodeRef | undefined {
    const learned = this.ports.transport()?.peerAt?.(this.options.primaryMesh, endpoint);
    if (learned) return learned;
    const d = [...latest(descriptors).values()].find((x) => x.endpoints[this.options.primaryMesh] === endpoint);
    return d ? { nodeId: d.nodeId, lifecycleGeneration: d.lifecycleGeneration } : undefined;
  }

  private manualIdentities(): NodeRef[] {
    const refs: NodeRef[] = [];
    for (const endpoints of this.manual.values())
      for (const e of endpoints) {
        const ref = this.identityAt(e, this.ports.descriptors());
        if (ref) refs.push(ref);
      }
    return refs;
  }

  private peerRecord(nodeId: string): PeerInfo | undefined {
    return this.ports
      .transport()
      ?.peers(this.options.primaryMesh)
      .find((p) => p.nodeId === nodeId);
  }

  private peerState(ref: NodeRef): PeerInfo['state'] | undefined {
    if (this.ports.isReady(ref)) return 'Ready';
    const p = this.peerRecord(ref.nodeId);
    return p && p.lifecycleGeneration === ref.lifecycleGeneration ? p.state : undefined;
  }

  private onReply(from: NodeRef, reply: ReplyMessage): void {
    const call = this.calls.get(reply.id);
    // A reply for a call that already ended (timeout, abort, shutdown) or from a node it was not sent to: dropped.
    if (!call || !call.to || !sameNode(call.to, from)) {
      this.ports.logger.debug({ peer: from.nodeId, callId: reply.id }, 'ClientServer reply for no pending call dropped');
      return;
    }
    if (reply.ok) {
      let value: unknown;
      try {
        value = decodeValue(reply.b);
      } catch (error) {
        return this.endCall(call, new RequestError('handler', `the reply could not be decoded: ${(error as Error).message}`));
      }
      return this.endCall(call, undefined, value);
    }
    if (reply.k === 'not-selectable' && call.node === undefined) {
      // The server was chosen from a stale snapshot: it is excluded for this call and another one is picked.
      call.tried.add(nodeKey(from));
      call.to = undefined;
      return this.route(call);
    }
    const error = reply.k === 'handler' ? new RemoteHandlerError(reply.e) : new RequestError(reply.k === 'not-selectable' ? 'unavailable' : reply.k, reply.e);
    this.endCall(call, error);
  }

  /** The one terminal of a call this host made. */
  private endCall(call: Call, error: Error | undefined, value?: unknown): void {
    if (this.calls.get(call.id) !== call) return; // already ended: never twice
    this.calls.delete(call.id);
    this.waiting.delete(call);
    this.ports.clock.clearTimeout(call.timer);
    if (call.waitTimer !== undefined) this.ports.clock.clearTimeout(call.waitTimer);
    call.cleanup?.();
    if (error) {
      const to = call.to;
      // The caller stopped waiting: the server's handler is told through its signal (best effort).
      if (to && (error instanceof AbortError || (error instanceof RequestError && error.kind === 'timeout'))) {
        if (call.local) this.accepted.get(`${nodeKey(to)}|${call.id}`)?.controller.abort(error);
        else this.ports.send(to, { t: CANCEL, id: call.id });
      }
      call.reject(error);
    } else call.resolve(value);
    this.checkIdle();
  }

  private connectionGone(peer: NodeRef): void {
    for (const call of [...this.calls.values()]) {
      if (!call.to || call.local || !sameNode(call.to, peer)) continue;
      this.endCall(call, new RequestError('unavailable', `the connection to ${peer.nodeId} was lost before the reply arrived (the handler may or may not have run)`));
    }
    // Nobody is left to read these replies: the handlers are told through their signal (they still end once).
    for (const a of this.accepted.values()) if (!a.local && sameNode(a.from, peer)) a.controller.abort(new AbortError(`the connection to the caller ${peer.nodeId} was lost`));
    this.retryWaiting();
  }

  // ── server side ──────────────────────────────────────────────────────────────────────────────────

  /** §15 for a call arriving at this host's server; undefined = run it. */
  private admission(channel: string, direct: boolean): Refusal | undefined {
    const state = this.ports.state();
    const server = this.servers.get(channel);
    if (!direct) {
      // A select-one caller chose this host from a stale snapshot: it picks another server (in Draining too — only
      // a caller that named this node gets the shutdown result).
      if (this.closed || state !== FrameworkRuntimeState.Serving)
        return { k: 'not-selectable', e: `node '${this.ports.nodeId}' is ${STATE_NAME(this.closed ? FrameworkRuntimeState.Stopped : state)}: excluded from new selection` };
      if (!server?.open) return { k: 'not-selectable', e: `node '${this.ports.nodeId}' no longer serves channel '${channel}'` };
      return undefined;
    }
    if (this.closed || state === FrameworkRuntimeState.Draining || state === FrameworkRuntimeState.Stopped)
      return { k: 'shutdown', e: `node '${this.ports.nodeId}' is shutting down: its servers admit no new calls` };
    if (state === FrameworkRuntimeState.Preparing || state === FrameworkRuntimeState.Error) return { k: 'unavailable', e: `node '${this.ports.nodeId}' is not ready` };
    if (state === FrameworkRuntimeState.Relocated)
      return { k: 'unavailable', e: `node '${this.ports.nodeId}' is Relocated: it has no local stateful owner and accepts no new Node direct requests` };
    if (!server?.open) return { k: 'not-found', e: `node '${this.ports.nodeId}' does not serve channel '${channel}'` };
    return undefined;
  }

  private onCall(from: NodeRef, call: CallMessage, local: boolean): void {
    const refusal = this.admission(call.ch, call.d === 1);
    if (refusal) return this.deliverReply(from, local, { t: REPLY, id: call.id, ok: false, ...refusal });
    const key = `${nodeKey(from)}|${call.id}`;
    if (this.accepted.has(key)) return; // the same call twice: it runs once
    const server = this.servers.get(call.ch)!;
    const accepted: Accepted = { key, id: call.id, from: { nodeId: from.nodeId, lifecycleGeneration: from.lifecycleGeneration }, local, server, controller: new AbortController() };
    this.accepted.set(key, accepted);
    server.accepted.add(accepted);
    // The handler runs in its own task: an application callback that waits never holds the delivering code (§15).
    queueMicrotask(() => this.runHandler(accepted, call));
  }

  private runHandler(a: Accepted, call: CallMessage): void {
    if (this.accepted.get(a.key) !== a) return;
    let result: unknown;
    try {
      // Decoded at the start of the handler: it gets its own copy, whatever the caller did since.
      const request = decodeValue(call.b);
      result = a.server.handler(request, { from: a.from.nodeId, channel: call.ch, signal: a.controller.signal });
    } catch (error) {
      return this.finish(a, handlerFailed(error));
    }
    Promise.resolve(result).then(
      (value) => {
        let bytes: Uint8Array;
        try {
          bytes = encodeValue(value, 'reply');
        } catch (error) {
          return this.finish(a, { k: 'handler', e: `the reply could not be encoded: ${(error as Error).message}` });
        }
        this.finish(a, bytes);
      },
      (error: unknown) => this.finish(a, handlerFailed(error)),
    );
  }

  /** The one terminal of an accepted call: a later one (a handler finishing after the shutdown result) is dropped. */
  private finish(a: Accepted, terminal: Uint8Array | Refusal): void {
    if (this.accepted.get(a.key) !== a) return;
    this.accepted.delete(a.key);
    a.server.accepted.delete(a);
    const reply: ReplyMessage = terminal instanceof Uint8Array ? { t: REPLY, id: a.id, ok: true, b: terminal } : { t: REPLY, id: a.id, ok: false, ...terminal };
    this.deliverReply(a.from, a.local, reply);
    if (a.server.accepted.size === 0) for (const resolve of [...a.server.idle]) resolve();
    if (a.server.accepted.size === 0) a.server.idle.clear();
    this.checkIdle();
  }

  private deliverReply(to: NodeRef, local: boolean, reply: ReplyMessage): void {
    if (local) return queueMicrotask(() => this.onReply(to, reply));
    if (!this.ports.send(to, reply as unknown as RuntimeMessage))
      // Its connection is gone: the caller ended the call `unavailable` when it saw the loss.
      this.ports.logger.warn({ peer: to.nodeId, callId: reply.id }, 'ClientServer reply could not reach the caller');
  }

  // ── shutdown ─────────────────────────────────────────────────────────────────────────────────────

  private endAll(why: string): void {
    for (const a of [...this.accepted.values()]) {
      a.controller.abort(new AbortError(`shutdown: ${why}`));
      this.finish(a, { k: 'shutdown', e: `node '${this.ports.nodeId}' is shutting down: ${why}` });
    }
    for (const call of [...this.calls.values()]) this.endCall(call, new RequestError('shutdown', `the calling host is shutting down: ${why}`));
  }

  private checkIdle(): void {
    for (const w of [...this.idleWaiters]) w();
  }
}

function handlerFailed(error: unknown): Refusal {
  return { k: 'handler', e: error instanceof Error ? error.message : String(error) };
}

/** One entry: every call between two discovery rounds reads the same snapshot (the list is replaced, never changed). */
let latestCache: { list: readonly NodeDescriptor[]; byNode: Map<string, NodeDescriptor> } | undefined;

/** The newest run of each nodeId in a descriptor list (an older run may still be listed until its lease expires). */
function latest(descriptors: readonly NodeDescriptor[]): Map<string, NodeDescriptor> {
  if (latestCache?.list === descriptors) return latestCache.byNode;
  const byNode = new Map<string, NodeDescriptor>();
  for (const d of descriptors) {
    const seen = byNode.get(d.nodeId);
    if (!seen || seen.lifecycleGeneration < d.lifecycleGeneration) byNode.set(d.nodeId, d);
  }
  latestCache = { list: descriptors, byNode };
  return byNode;
}

const serversCache = new WeakMap<NodeDescriptor, ReadonlyMap<string, number> | undefined>();

/** The servers a descriptor lists, read once per descriptor object. */
function serversOf(d: NodeDescriptor | undefined): ReadonlyMap<string, number> | undefined {
  if (!d) return undefined;
  if (serversCache.has(d)) return serversCache.get(d);
  const servers = readServers(d.components);
  serversCache.set(d, servers);
  return servers;
}
