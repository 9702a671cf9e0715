/**
 * Routing of application messages (API.md: "routing follows the Location Store and Message Follow").
 *
 * Outbound: local object → its lane; Message Follow route → the new owner; otherwise the owner from the
 * route cache or the Location Store. Sends to one object keep their order while a lookup is in flight.
 * Requests end exactly once (§15): reply, error, timeout or shutdown — the pending entry is removed first.
 */
import { randomUUID } from 'node:crypto';
import type { LocationStore, NodeRef, OwnerRecord } from '../stores/types';
import type { RuntimeMessage, Transport } from '../transport/types';
import type { Clock } from './clock';
import type { ObjectRef, RequestOptions } from './context';
import type { Envelope } from './envelope';
import { decodeValue, encodeValue } from './codec';
import { MAX_HOPS } from './envelope';
import { abortReason, RemoteHandlerError, RequestError } from './errors';
import { idOf, keyOfRef, nodeKey, sameNode, type ObjectKey } from './keys';
import type { ObjectServer, Terminal } from './objects';
import { parseRuntimeMessage, type ReplyMessage } from './protocol';

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
  timer: unknown;
  cleanup?: () => void;
}

export interface RouterDeps {
  readonly self: NodeRef;
  readonly clock: Clock;
  readonly location: LocationStore;
  readonly objects: ObjectServer;
  transport(): Transport | undefined;
  /** Which Instance Spot type a `{ spot }` ref names when it gives none (the only one registered). */
  instanceTypeFor(ref: ObjectRef): string | undefined;
  /** Whether this host may place a new Instance Spot now (§15: excluded from new claims unless Serving). */
  canPlaceInstances(): boolean;
  /** A Serving node that registered `type`, for placement elsewhere. */
  placementNode(type: string): NodeRef | undefined;
  /** Inbound payload admission (§15); a refusal names the terminal. */
  inboundRefusal(): Terminal | undefined;
  /** Relocation target staging: a temporary queue registered for this key (§9, §10.3). */
  staging(key: ObjectKey): ((env: Envelope) => void) | undefined;
  /** How long a message waits for its peer's connection to become Ready. */
  readonly connectWaitMs: number;
  /** Ask for a discovery round now (an owner we are not connected to yet). */
  requestDiscovery(): void;
  /** Writes the terminal of a request that completed after relocation to the Relocation Store. */
  recordMovedTerminal(id: string, terminal: { readonly ok: boolean; readonly value?: unknown; readonly error?: string }): void;
  /** The latest descriptor snapshot names exactly this run. */
  isKnownPeer(peer: NodeRef): boolean;
  /** Runtime messages other than application traffic (relocation protocol). */
  onControl(from: NodeRef, message: RuntimeMessage): void;
  log(level: 'warn' | 'error', message: string, error?: unknown): void;
}

export class Router {
  private readonly routes = new Map<ObjectKey, OwnerRecord>();
  /** Message Follow routes (§8 S1→S4): the old owner relays to the new one until S4. */
  private readonly follows = new Map<ObjectKey, NodeRef>();
  private readonly resolving = new Map<ObjectKey, Envelope[]>();
  /** Per-origin send order: every envelope accepted here gets the next number. */
  private seq = 0;
  /** The highest `seq` this node sent towards each object's (cached) owner. */
  private readonly lastSent = new Map<ObjectKey, number>();
  /** Objects whose old owner is bouncing this node's messages: collected until the last one sent came back. */
  private readonly rerouting = new Map<ObjectKey, { bounced: Envelope[]; until: number; timer: unknown }>();
  private readonly pending = new Map<string, Pending>();
  /** Messages for a peer that is known but not (yet, or no longer) Ready, in order, for a bounded time. */
  private readonly parked = new Map<string, { peer: NodeRef; messages: RuntimeMessage[]; timer: unknown }>();
  private closed = false;

  constructor(private readonly deps: RouterDeps) {}

  get pendingRequests(): number {
    return this.pending.size;
  }

  /** The body is encoded (copied) at the call; a value the codec refuses throws ArgumentError here. */
  send(to: ObjectRef, body: unknown): void {
    const key = keyOfRef(to);
    this.dispatch(this.envelope(key, encodeValue(body, 'message'), to, false));
  }

  request(to: ObjectRef, body: unknown, options: RequestOptions = {}): Promise<unknown> {
    const key = keyOfRef(to);
    const timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new RequestError('unavailable', 'options.timeoutMs: must be a finite number > 0');
    let bytes: Uint8Array;
    try {
      bytes = encodeValue(body, 'message');
    } catch (error) {
      return Promise.reject(error); // refused at the call: nothing pending, nothing sent
    }
    const env = this.envelope(key, bytes, to, true);
    const promise = new Promise<unknown>((resolve, reject) => {
      const entry: Pending = {
        resolve,
        reject,
        timer: this.deps.clock.setTimeout(
          () => this.settle(env.id, undefined, new RequestError('timeout', `request to ${key} timed out after ${timeoutMs} ms`)),
          timeoutMs,
        ),
      };
      const signal = options.signal;
      if (signal) {
        if (signal.aborted) {
          this.deps.clock.clearTimeout(entry.timer);
          return reject(abortReason(signal));
        }
        const onAbort = () => this.settle(env.id, undefined, abortReason(signal));
        signal.addEventListener('abort', onAbort, { once: true });
        entry.cleanup = () => signal.removeEventListener('abort', onAbort);
      }
      this.pending.set(env.id, entry);
    });
    this.dispatch(env);
    return promise;
  }

  private envelope(key: ObjectKey, body: Uint8Array, ref: ObjectRef, req: boolean): Envelope {
    const place = key.startsWith('s:') ? this.deps.instanceTypeFor(ref) : undefined;
    return {
      id: randomUUID(),
      to: key,
      gen: 0,
      body,
      from: this.deps.self,
      seq: ++this.seq,
      ...(req ? { req: 1 as const } : {}),
      ...(place ? { place } : {}),
    };
  }

  /** Where a message goes next; `inbound` = it came from another node. */
  dispatch(env: Envelope, inbound = false): void {
    const refusal = this.deps.inboundRefusal();
    if (this.deps.objects.get(env.to)) {
      if (refusal) return this.terminal(env, refusal);
      this.deps.objects.deliver(env);
      return;
    }
    // Only what reaches this node from elsewhere (the source's relay and Message Follow) enters a temporary
    // queue; this node's own calls go to the current owner like any caller's until the CAS (§3, §11).
    const staged = inbound ? this.deps.staging(env.to) : undefined;
    if (staged) return staged(env);
    const follow = this.follows.get(env.to);
    if (follow) return this.forward(follow, env);
    if (inbound) {
      if (env.place && this.deps.canPlaceInstances()) return void this.place(env, env.place);
      // Not ours, no follow route: the origin re-resolves (its cached owner is stale).
      return this.bounce(env);
    }
    const queued = this.resolving.get(env.to);
    if (queued) return void queued.push(env);
    const cached = this.routes.get(env.to);
    if (cached && !sameNode(cached.owner, this.deps.self)) {
      if (this.sendTo(cached.owner, env, cached.objectGeneration)) return;
      this.routes.delete(env.to);
    }
    this.resolve(env);
  }

  private resolve(first: Envelope): void {
    this.resolveQueue(first.to, [first]);
  }

  /** One Location Store read for `queue` (and whatever is sent to `key` meanwhile), then each in order. */
  private resolveQueue(key: ObjectKey, queue: Envelope[]): void {
    this.resolving.set(key, queue);
    this.deps.location.get(idOf(key)).then(
      (record) => {
        this.resolving.delete(key);
        for (const env of queue) this.routeResolved(env, record);
      },
      (error: unknown) => {
        this.resolving.delete(key);
        for (const env of queue) this.terminal(env, { ok: false, kind: 'unavailable', error: `location lookup failed: ${(error as Error).message}` });
      },
    );
  }

  private routeResolved(env: Envelope, record: OwnerRecord | undefined): void {
    if (this.deps.objects.get(env.to) || this.follows.get(env.to)) return this.dispatch(env);
    if (!record) {
      if (env.place) {
        if (this.deps.canPlaceInstances()) return void this.place(env, env.place);
        const node = this.deps.placementNode(env.place);
        if (node && this.transmit(node, { t: 'msg', env })) return;
        return this.terminal(env, { ok: false, kind: 'unavailable', error: `no Serving node can place Instance Spot ${env.to}` });
      }
      return this.terminal(env, { ok: false, kind: 'not-found', error: `no object ${env.to} is registered` });
    }
    if (sameNode(record.owner, this.deps.self)) {
      // The record names us but nothing is hosted or staged: the object is gone with a previous turn.
      return this.terminal(env, { ok: false, kind: 'not-found', error: `object ${env.to} is not hosted on its owner` });
    }
    this.routes.set(env.to, record);
    if (!this.sendTo(record.owner, env, record.objectGeneration))
      this.terminal(env, { ok: false, kind: 'unavailable', error: `owner ${record.owner.nodeId} of ${env.to} is not connected` });
  }

  private async place(env: Envelope, type: string): Promise<void> {
    try {
      const placed = await this.deps.objects.placeInstance(type, env.to.slice(2));
      if ('local' in placed) this.deps.objects.deliver(env);
      else {
        this.routes.set(env.to, placed.record);
        if (!this.sendTo(placed.record.owner, env, placed.record.objectGeneration))
          this.terminal(env, { ok: false, kind: 'unavailable', error: `owner of ${env.to} is not connected` });
      }
    } catch (error) {
      this.terminal(env, { ok: false, kind: 'unavailable', error: `placement of ${env.to} failed: ${(error as Error).message}` });
    }
  }

  private sendTo(owner: NodeRef, env: Envelope, gen: number): boolean {
    if (env.seq !== undefined && sameNode(env.from, this.deps.self)) this.lastSent.set(env.to, env.seq);
    return this.transmit(owner, { t: 'msg', env: env.gen === 0 && gen ? { ...env, gen } : env });
  }

  /**
   * Sends in order; a peer that is not Ready yet gets the message parked until it is (or the wait ends, when
   * requests among them end `unavailable`). false only when there is no transport at all.
   */
  private transmit(peer: NodeRef, message: RuntimeMessage): boolean {
    const transport = this.deps.transport();
    if (!transport || this.closed) return false;
    const key = nodeKey(peer);
    const parked = this.parked.get(key);
    if (parked) {
      parked.messages.push(message);
      return true;
    }
    try {
      if (transport.send(peer, message)) return true;
    } catch (error) {
      // Not expected (values are bounded at the call), but never a throw out of a promise callback.
      this.deps.log('error', `runtime message '${message.t}' for ${peer.nodeId} could not be sent`, error);
      return false;
    }
    // Park and look again: the next discovery round either finds that run (connect, flush on Ready) or
    // finds it gone (revalidateParked re-resolves the owners).
    const entry = {
      peer,
      messages: [message],
      timer: this.deps.clock.setTimeout(() => this.expireParked(key), this.deps.connectWaitMs),
    };
    this.parked.set(key, entry);
    this.deps.requestDiscovery();
    return true;
  }

  /** A peer became Ready: flush what waited for it, in order. */
  onPeerReady(peer: NodeRef): void {
    const key = nodeKey(peer);
    const entry = this.parked.get(key);
    const transport = this.deps.transport();
    if (!entry || !transport) return;
    let i = 0;
    for (; i < entry.messages.length; i++) if (!transport.send(peer, entry.messages[i]!)) break;
    if (i === entry.messages.length) {
      this.deps.clock.clearTimeout(entry.timer);
      this.parked.delete(key);
    } else entry.messages.splice(0, i);
  }

  /** A message for a node that is gone: application messages re-resolve their owner, others are dropped. */
  private unreachable(peer: NodeRef, message: RuntimeMessage): void {
    const env = (message as { env?: Envelope }).env;
    if ((message.t === 'msg' || message.t === 'bounce') && env) {
      if (sameNode(env.from, this.deps.self)) return this.reroute(env);
      return this.terminal(env, { ok: false, kind: 'unavailable', error: `node ${peer.nodeId} is gone` });
    }
    this.deps.log('warn', `message '${message.t}' for ${peer.nodeId} dropped: that node is gone`);
  }

  /** After a discovery round: what waits for a node whose descriptor vanished is re-resolved now. */
  revalidateParked(): void {
    for (const [key, entry] of [...this.parked]) {
      if (this.deps.isKnownPeer(entry.peer)) continue;
      this.deps.clock.clearTimeout(entry.timer);
      this.parked.delete(key);
      for (const message of entry.messages) this.unreachable(entry.peer, message);
    }
  }

  private expireParked(key: string): void {
    const entry = this.parked.get(key);
    if (!entry) return;
    this.parked.delete(key);
    for (const message of entry.messages) {
      const env = (message as { env?: Envelope }).env;
      if (message.t === 'msg' && env)
        this.terminal(env, { ok: false, kind: 'unavailable', error: `node ${entry.peer.nodeId} did not become reachable within ${this.deps.connectWaitMs} ms` });
      else this.deps.log('warn', `message '${message.t}' for ${entry.peer.nodeId} dropped: peer not reachable`);
    }
  }

  private forward(to: NodeRef, env: Envelope): void {
    const hops = (env.hops ?? 0) + 1;
    if (hops > MAX_HOPS) return this.terminal(env, { ok: false, kind: 'unavailable', error: `route of ${env.to} exceeded ${MAX_HOPS} hops` });
    if (!this.transmit(to, { t: 'msg', env: { ...env, hops } }))
      this.terminal(env, { ok: false, kind: 'unavailable', error: `Message Follow target ${to.nodeId} of ${env.to} is not connected` });
  }

  private bounce(env: Envelope): void {
    if (sameNode(env.from, this.deps.self)) return this.reroute(env);
    if (!this.transmit(env.from, { t: 'bounce', env }))
      this.deps.log('warn', `message for ${env.to} could not be bounced to ${env.from.nodeId}`);
  }

  /**
   * The old owner bounced one of this node's messages (its Message Follow route ended, §8 S4). Everything this
   * node sent there after it bounces too, in order, on the same connection: new sends to that object wait
   * until the last one sent came back, then all go to the re-resolved owner in their original order — so a
   * re-route never reorders one sender's messages.
   */
  private onBounce(env: Envelope): void {
    if (env.seq === undefined || !sameNode(env.from, this.deps.self)) return this.reroute(env);
    const key = env.to;
    let entry = this.rerouting.get(key);
    if (!entry) {
      this.routes.delete(key);
      if (!this.resolving.has(key)) this.resolving.set(key, []);
      entry = {
        bounced: [],
        until: this.lastSent.get(key) ?? env.seq,
        // A bounce that never comes (lost with a connection) must not hold the object's sends forever.
        timer: this.deps.clock.setTimeout(() => this.finishReroute(key), Math.max(100, Math.min(this.deps.connectWaitMs, 2000))),
      };
      this.rerouting.set(key, entry);
    }
    entry.bounced.push(env);
    if (env.seq >= entry.until) this.finishReroute(key);
  }

  private finishReroute(key: ObjectKey): void {
    const entry = this.rerouting.get(key);
    if (!entry) return;
    this.rerouting.delete(key);
    this.deps.clock.clearTimeout(entry.timer);
    const bounced = entry.bounced.sort((a, b) => a.seq! - b.seq!);
    const waiting = this.resolving.get(key) ?? [];
    this.resolving.delete(key);
    const queue: Envelope[] = [];
    for (const env of bounced) {
      const hops = (env.hops ?? 0) + 1;
      if (hops > MAX_HOPS) this.terminal(env, { ok: false, kind: 'unavailable', error: `route of ${env.to} did not converge` });
      else queue.push({ ...env, hops, gen: 0 });
    }
    queue.push(...waiting);
    if (queue.length) this.resolveQueue(key, queue);
  }

  /** A stale route: drop the cached owner and resolve again, a bounded number of times. */
  private reroute(env: Envelope): void {
    this.routes.delete(env.to);
    const hops = (env.hops ?? 0) + 1;
    if (hops > MAX_HOPS) return this.terminal(env, { ok: false, kind: 'unavailable', error: `route of ${env.to} did not converge` });
    // Back off a little: the owner record may be in the middle of a cutover CAS.
    this.deps.clock.setTimeout(() => this.dispatch({ ...env, hops, gen: 0 }), 5 * hops);
  }

  /** Ends a request that cannot be delivered; a one-way message is dropped with a warning. */
  terminal(env: Envelope, terminal: Terminal): void {
    if (env.req) return this.reply(env, terminal);
    this.deps.log('warn', `one-way message to ${env.to} dropped: ${terminal.error}`);
  }

  /** The one terminal of a request, sent back to the node that accepted the call. */
  reply(env: Envelope, terminal: Terminal): void {
    // §1.1, §9: a pending request that completes after relocation leaves its terminal in the Relocation Store.
    if (env.moved) this.deps.recordMovedTerminal(env.id, terminal.ok ? { ok: true, value: decodeValue(terminal.value!) } : terminal);
    if (sameNode(env.from, this.deps.self)) return this.settleTerminal(env.id, terminal);
    const message: ReplyMessage = { t: 'reply', id: env.id, ok: terminal.ok, value: terminal.value, error: terminal.error, kind: terminal.kind };
    if (!this.transmit(env.from, message as unknown as RuntimeMessage))
      this.deps.log('warn', `reply for ${env.id} could not reach ${env.from.nodeId}`);
  }

  private settleTerminal(id: string, terminal: Terminal): void {
    if (terminal.ok) {
      if (!this.pending.has(id)) return;
      let value: unknown;
      try {
        // Decoded where the request settles: each caller gets its own copy of the reply.
        value = terminal.value === undefined ? undefined : decodeValue(terminal.value);
      } catch (error) {
        return this.settle(id, undefined, new RequestError('handler', `the reply could not be decoded: ${(error as Error).message}`));
      }
      return this.settle(id, value);
    }
    const error =
      terminal.kind === 'handler' ? new RemoteHandlerError(terminal.error ?? 'handler failed') : new RequestError(terminal.kind ?? 'unavailable', terminal.error ?? 'request failed');
    this.settle(id, undefined, error);
  }

  private settle(id: string, value: unknown, error?: Error): void {
    const entry = this.pending.get(id);
    if (!entry) return; // already terminal: never twice
    this.pending.delete(id);
    this.deps.clock.clearTimeout(entry.timer);
    entry.cleanup?.();
    if (error) entry.reject(error);
    else entry.resolve(value);
  }

  /** Transport entry point for runtime messages from admitted peers. */
  onMessage = (from: NodeRef, raw: RuntimeMessage): void => {
    if (this.closed) return;
    const message = parseRuntimeMessage(raw);
    if (!message) return this.deps.log('warn', `invalid runtime message '${String(raw?.t)}' from ${from.nodeId} dropped`);
    if (message.t === 'msg') return this.dispatch((message as { env: Envelope }).env, true);
    if (message.t === 'reply') return this.settleTerminal((message as ReplyMessage).id, message as ReplyMessage);
    if (message.t === 'bounce') return this.onBounce((message as { env: Envelope }).env);
    this.deps.onControl(from, raw);
  };

  // ── Message Follow (owned by relocation units) ──────────────────────────────────────

  setFollow(key: ObjectKey, to: NodeRef): void {
    this.follows.set(key, to);
    this.routes.delete(key);
  }

  removeFollow(key: ObjectKey): void {
    this.follows.delete(key);
  }

  get followCount(): number {
    return this.follows.size;
  }

  invalidate(key: ObjectKey): void {
    this.routes.delete(key);
  }

  /** §14: outstanding requests of this host end with a shutdown result; routes go with the transport. */
  close(): void {
    this.closed = true;
    for (const entry of this.parked.values()) this.deps.clock.clearTimeout(entry.timer);
    this.parked.clear();
    for (const entry of this.rerouting.values()) this.deps.clock.clearTimeout(entry.timer);
    this.rerouting.clear();
    this.follows.clear();
    this.routes.clear();
    for (const id of [...this.pending.keys()]) this.settle(id, undefined, new RequestError('shutdown', 'the host shut down before the request completed'));
  }
}
