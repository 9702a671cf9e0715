/**
 * Routing of application messages (API.md: "routing follows the Location Store and Message Follow").
 *
 * Outbound: local object → its lane; Message Follow route → the new owner; otherwise the owner from the
 * route cache or the Location Store. Sends to one object keep their order while a lookup is in flight.
 * Requests end exactly once (§15): reply, error, timeout or shutdown — the pending entry is removed first.
 */
import { randomUUID } from 'node:crypto';
import type { LocationStore, NodeRef } from '../stores/types';
import type { RuntimeMessage, Transport } from '../transport/types';
import type { Clock } from './clock';
import type { ObjectRef, RequestOptions } from './context';
import type { Envelope } from './envelope';
import { decodeValue, encodeValue } from './codec';
import { MAX_HOPS } from './envelope';
import { abortReason, RemoteHandlerError, RequestError } from './errors';
import { ExpiryQueue } from './expiry-queue';
import { idOf, keyOfRef, nodeKey, sameNode, type ObjectKey } from './keys';
import type { ObjectServer, Terminal } from './objects';
import { parseRuntimeMessage, type BounceMessage, type MarkMessage, type ReplyMessage, type StaleMessage, type ViaMessage } from './protocol';
import type { RuntimeLog } from './logger';
import { telemetry } from './telemetry';
import { movingTerminal } from './spot-close/instance-spot-close';

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
  timer: unknown;
  cleanup?: () => void;
  /** nodeKey of the node the request was last handed to (a lost connection to it ends the request, item 8). */
  via?: string;
  readonly key: ObjectKey;
  /** performance.now() at the call (request latency metric). */
  readonly started: number;
}

/** Where this node sends an object's messages: the owner and the ObjectGeneration they are addressed to. */
interface Route {
  readonly owner: NodeRef;
  readonly gen: number;
}

/** A node that bounced messages for an object: the store may still name it while the new owner's CAS lands (§11). */
interface StaleOwner {
  readonly owner: NodeRef;
  /** When this sender started waiting for the record to move on (its own clock). */
  readonly since: number;
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
  /**
   * §11: how long the Location Store may still name an old owner while the new one retries its CAS. A bounced
   * sender keeps its messages and re-reads the owner for at most this long (DESIGN "Convergence, not hop counts").
   */
  readonly restoreValidityMs: number;
  /** Ask for a discovery round now (an owner we are not connected to yet). */
  requestDiscovery(): void;
  /** Writes the terminal of a request that completed after relocation to the Relocation Store. */
  recordMovedTerminal(id: string, terminal: { readonly ok: boolean; readonly value?: unknown; readonly error?: string }): void;
  /** The latest descriptor snapshot names exactly this run. */
  isKnownPeer(peer: NodeRef): boolean;
  /** Runtime messages other than application traffic (relocation protocol). */
  onControl(from: NodeRef, message: RuntimeMessage): void;
  /** Message Follow (§13): what the relocation batched for `to` (its units' cutovers) is sent before a followed message. */
  beforeFollow(to: NodeRef): void;
  readonly logger: RuntimeLog;
}

/**
 * Where this node moved an object: from S1 its Message Follow route (`until` Infinity), from S4 the bounce hint until
 * `until` (§11). One entry per key through both: S4 sets `until` on the entry the follow used, instead of a delete
 * from one 100k-entry map and an insert into another (each ~1 µs in a 100k move, a cache miss on a 2-core VM).
 */
interface MovedEntry {
  readonly to: NodeRef;
  until: number;
}

/** First and longest pause between two Location Store reads while an owner record converges. */
const CONVERGE_FIRST_MS = 5;
const CONVERGE_MAX_MS = 200;

export class Router {
  private readonly routes = new Map<ObjectKey, Route>();
  /**
   * Message Follow routes (§8 S1→S4: the old owner relays to the new one until S4), then, kept past S4 for
   * restoreValidityMs, where this node moved the object: a message that still arrives is bounced with this hint, so
   * its sender waits at the new owner instead of re-reading a record that may lag (§11). See MovedEntry.
   */
  private readonly moved = new Map<ObjectKey, MovedEntry>();
  /** Follow routes open (entries of `moved` still at `until` Infinity). */
  private follows = 0;
  /**
   * `moved` entries in the order they reached S4, which is their expiry order (one restoreValidityMs for all): each S4
   * drops the expired ones from the front, O(1) per unit. Scanning the whole map every 1,024 S4s was 2.4% of the
   * source's main thread in a 100k move (issue [6/10]), and scanned again on every S4 while the size stayed put.
   */
  private readonly movedExpiry: ExpiryQueue<{ key: ObjectKey; entry: MovedEntry }>;
  /**
   * Own messages per object that wait for a Location Store read (and whatever is sent to that object meanwhile):
   * one queue per object keeps one sender's order through every lookup, bounce and re-route.
   */
  private readonly resolving = new Map<ObjectKey, Envelope[]>();
  /** Per-origin send order: every envelope accepted here gets the next number. */
  private seq = 0;
  /** The last of this node's messages sent towards each object's (cached) owner, and where it went. */
  private readonly lastSent = new Map<ObjectKey, { to: NodeRef; seq: number; gen: number }>();
  /**
   * Objects that came to this node while its earlier messages for them may still be on the old route: new own
   * messages wait here until the old route answered the order marker (or the wait ends).
   */
  private readonly marking = new Map<ObjectKey, { held: Envelope[]; peer: NodeRef; timer: unknown }>();
  private idleWaiters: (() => void)[] = [];
  /** Objects whose old owner is bouncing this node's messages: collected until the last one sent came back. */
  private readonly rerouting = new Map<ObjectKey, { bounced: Envelope[]; until: number; timer: unknown; by: NodeRef; hint?: NodeRef }>();
  private readonly pending = new Map<string, Pending>();
  /** Instance Spots this node is placing now, with the messages waiting for that placement (in order). */
  private readonly placing = new Map<ObjectKey, Envelope[]>();
  /** Messages for a peer that is known but not (yet, or no longer) Ready, in order, for a bounded time. */
  private readonly parked = new Map<string, { peer: NodeRef; messages: RuntimeMessage[]; timer: unknown }>();
  /** Peers that announced they are closing (transport `quiesce`): nothing more is sent to them. */
  private readonly leaving = new Set<string>();
  /** One log line per peer and cause for undeliverable one-way messages (the metric counts each). */
  private readonly loggedDrops = new Set<string>();
  private closed = false;

  constructor(private readonly deps: RouterDeps) {
    this.movedExpiry = new ExpiryQueue(
      deps.clock,
      deps.restoreValidityMs,
      // A later move of the same key replaced the entry: that one expires in its own turn.
      ({ key, entry }) => {
        if (this.moved.get(key) === entry) this.moved.delete(key);
      },
      { timer: false },
    );
  }

  get pendingRequests(): number {
    return this.pending.size;
  }

  /** The body is encoded (copied) at the call; a value the codec refuses throws ArgumentError here. */
  send(to: ObjectRef, body: unknown): void {
    const key = keyOfRef(to);
    this.sendEncoded(to, encodeValue(body, 'message'), key);
  }

  /** A body already encoded with the codec (Logical Multicast encodes once for all its targets). */
  sendEncoded(to: ObjectRef, body: Uint8Array, key: ObjectKey = keyOfRef(to)): void {
    const env = this.envelope(key, body, to, false);
    telemetry.routed(false);
    this.dispatch(env);
  }

  request(to: ObjectRef, body: unknown, options: RequestOptions = {}): Promise<unknown> {
    const key = keyOfRef(to);
    checkTimeout(options);
    let bytes: Uint8Array;
    try {
      bytes = encodeValue(body, 'message');
    } catch (error) {
      return Promise.reject(error); // refused at the call: nothing pending, nothing sent
    }
    return this.call(this.envelope(key, bytes, to, true), options);
  }

  /**
   * STREAM (runtime/components/sessions): a session envelope to an Actor — body already encoded, addressed to the
   * ObjectGeneration the session was bound to (0 = resolve it), routed like any message (same per-sender order,
   * hold, relay and Message Follow). With `timeoutMs` it is a request: the promise ends exactly once.
   */
  sessionEnvelope(to: ObjectKey, body: Uint8Array, gen: number, timeoutMs?: number): Promise<unknown> | undefined {
    const env: Envelope = { id: randomUUID(), to, gen, body, from: this.deps.self, seq: ++this.seq, ses: 1, ...(timeoutMs !== undefined ? { req: 1 as const } : {}) };
    if (timeoutMs !== undefined) return this.call(env, { timeoutMs });
    telemetry.routed(false);
    this.dispatch(env);
    return undefined;
  }

  /**
   * Instance Spot Close (§12): a request addressed to the Spot's owner itself, routed like any request (owner
   * lookup, per-sender order, convergence, connection loss) and ended exactly once. It is never placed, followed or
   * staged: where a relocation sealed the Spot first it ends `moving` and is not resubmitted.
   */
  closeSpot(key: ObjectKey, options: RequestOptions = {}): Promise<unknown> {
    checkTimeout(options);
    const env: Envelope = { id: randomUUID(), to: key, gen: 0, body: NO_BODY, from: this.deps.self, seq: ++this.seq, req: 1, close: 1 };
    return this.call(env, options).then((value) => {
      // The closed generation is gone: this node's next message resolves the id afresh and creates a new instance.
      this.routes.delete(key);
      this.lastSent.delete(key);
      return value;
    });
  }

  private call(env: Envelope, options: RequestOptions): Promise<unknown> {
    const key = env.to;
    const timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const promise = new Promise<unknown>((resolve, reject) => {
      const entry: Pending = {
        key,
        started: performance.now(),
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
    telemetry.routed(true);
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

  /** §12: a close that reached the Spot after a relocation sealed it, or after it left this node. */
  private moving(env: Envelope, to: NodeRef | undefined): void {
    this.terminal(env, movingTerminal(env.to.slice(2), to));
  }

  /** Into a relocation's temporary queue — except a close, which a relocation that came first answers `moving` (§12). */
  private toStaging(env: Envelope, staged: (env: Envelope) => void): void {
    if (env.close) return this.moving(env, undefined);
    staged(env);
  }

  /** Where a message goes next; `inbound` = it came from another node. */
  dispatch(env: Envelope, inbound = false): void {
    // An Instance Spot this node is placing: the message goes after the one that is placing it.
    const placing = this.placing.get(env.to);
    if (placing) return void placing.push(env);
    // This node's own message waits behind its earlier ones for the object that are still being routed, even if
    // the object is here now (item 10: no overtaking).
    if (!inbound) {
      const queued = this.resolving.get(env.to);
      if (queued) {
        // While the route is re-read, a new message is addressed to the generation this node last sent to (§12:
        // it never reaches a re-created object of the same id).
        // (Each queued message already carries it, so the last one tells: O(1) per message in a burst.)
        // A close is for whatever generation is current when it arrives (it is never stale-generation).
        const gen = env.gen === 0 && !env.close ? queued[queued.length - 1]?.gen || this.lastSent.get(env.to)?.gen : undefined;
        return void queued.push(gen ? { ...env, gen } : env);
      }
      const mark = this.marking.get(env.to);
      if (mark && sameNode(env.from, this.deps.self)) return void mark.held.push(env);
    }
    const refusal = this.deps.inboundRefusal();
    const local = this.deps.objects.get(env.to);
    if (local) {
      if (refusal) return this.terminal(env, refusal);
      if (!inbound && this.heldBehindOldRoute(env)) return;
      this.deps.objects.deliver(env);
      return;
    }
    // Only what reaches this node from elsewhere (the source's relay and Message Follow) enters a temporary
    // queue; this node's own calls go to the current owner like any caller's until the CAS (§3, §11).
    const staged = inbound ? this.deps.staging(env.to) : undefined;
    if (staged) return this.toStaging(env, staged);
    const follow = this.followOf(env.to);
    if (follow) return env.close ? this.moving(env, follow) : this.forward(follow, env);
    if (inbound) {
      if (env.place && this.deps.canPlaceInstances()) return void this.place(env, env.place);
      // Not ours, no follow route: the origin re-resolves (its cached owner is stale) — never ignored (§15).
      return this.bounce(env);
    }
    const cached = this.routes.get(env.to);
    if (cached && !sameNode(cached.owner, this.deps.self)) {
      if (this.sendTo(cached.owner, env, cached.gen)) return;
      this.routes.delete(env.to);
      // The message was addressed to the generation this node resolved; a re-created object must not get it (§12).
      if (env.gen === 0 && cached.gen && !env.close) env = { ...env, gen: cached.gen };
    }
    this.resolveQueue(env.to, [env]);
  }

  /**
   * One Location Store read for `queue` (and whatever is sent to the object meanwhile), then each in send order.
   * With `stale`, the read is repeated with backoff while the record still names the node that turned the
   * messages away, for at most restoreValidityMs (§11: the new owner retries its CAS that long).
   */
  private resolveQueue(key: ObjectKey, queue: Envelope[], stale?: StaleOwner): void {
    this.resolving.set(key, queue);
    const read = (pause: number): void => {
      this.deps.location.get(idOf(key)).then(
        (record) => {
          if (this.closed) return this.endQueue(key, { ok: false, kind: 'shutdown', error: 'the host shut down before the message was routed' });
          if (stale && record && sameNode(record.owner, stale.owner) && this.deps.clock.now() - stale.since < this.deps.restoreValidityMs) {
            this.deps.clock.setTimeout(() => read(Math.min(pause * 2, CONVERGE_MAX_MS)), pause);
            return;
          }
          const envs = this.takeQueue(key);
          for (const env of envs) this.routeResolved(env, record ? { owner: record.owner, gen: record.objectGeneration } : undefined, stale);
        },
        (error: unknown) => this.endQueue(key, { ok: false, kind: 'unavailable', error: `location lookup failed: ${(error as Error).message}` }),
      );
    };
    read(CONVERGE_FIRST_MS);
  }

  /** The queue of one object, in this node's send order (bounced messages rejoin it in their original place). */
  private takeQueue(key: ObjectKey): Envelope[] {
    const queue = this.resolving.get(key) ?? [];
    this.resolving.delete(key);
    return queue.sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
  }

  private endQueue(key: ObjectKey, terminal: Terminal): void {
    for (const env of this.takeQueue(key)) this.terminal(env, terminal);
  }

  private routeResolved(env: Envelope, route: Route | undefined, stale?: StaleOwner): void {
    if (this.deps.objects.get(env.to) || this.followOf(env.to)) return this.dispatch(env);
    if (!route) {
      if (env.place && env.gen === 0) {
        if (this.deps.canPlaceInstances()) return void this.place(env, env.place);
        const node = this.deps.placementNode(env.place);
        if (node && this.transmit(node, { t: 'msg', env })) return;
        return this.terminal(env, { ok: false, kind: 'unavailable', error: `no Serving node can place Instance Spot ${env.to}` });
      }
      // No record at all: the object is gone (not re-created), whatever generation the message was addressed to.
      if (env.place)
        return this.terminal(env, {
          ok: false,
          kind: 'not-found',
          error: `Instance Spot ${env.to.slice(2)} of generation ${env.gen} no longer exists (closed or removed); the next message creates a new instance`,
        });
      return this.terminal(env, { ok: false, kind: 'not-found', error: `no object ${env.to} is registered` });
    }
    // §12: a message addressed to one ObjectGeneration never reaches a re-created object of the same id.
    if (env.gen !== 0 && route.gen !== env.gen)
      return this.terminal(env, { ok: false, kind: 'stale-generation', error: `object ${env.to} is now generation ${route.gen}, not ${env.gen}` });
    if (sameNode(route.owner, this.deps.self)) {
      // Our CAS landed (S2) but dispatch is not open yet (S3): the message waits in the temporary queue.
      const staged = this.deps.staging(env.to);
      if (staged) return this.heldBehindOldRoute(env) ? undefined : this.toStaging(env, staged);
      // A close after this node moved the Spot, while the new owner's CAS may still land (§11, §12).
      const moved = env.close ? this.movedTo(env.to) : undefined;
      if (moved) return this.moving(env, moved);
      // The record names us but nothing is hosted or staged: the object is gone with a previous turn.
      return this.terminal(env, { ok: false, kind: 'not-found', error: `object ${env.to} is not hosted on its owner` });
    }
    if (stale && sameNode(route.owner, stale.owner))
      return this.terminal(env, {
        ok: false,
        kind: 'unavailable',
        error: `the owner record of ${env.to} still names ${stale.owner.nodeId}, which does not host it, after ${this.deps.restoreValidityMs} ms (restoreValidityMs; docs/concepts.md "One unit's move: S0 to S4")`,
      });
    this.routes.set(env.to, route);
    if (this.sendTo(route.owner, env, route.gen)) return;
    if (sameNode(env.from, this.deps.self) && !stale) return this.reroute(env, route.owner);
    this.terminal(env, { ok: false, kind: 'unavailable', error: `owner ${route.owner.nodeId} of ${env.to} is not reachable` });
  }

  /**
   * One placement per Instance Spot at a time: messages that need the same placement meanwhile wait for it and go
   * on in their order (two concurrent claims by this node would route the second message to itself, and the two
   * placements could finish in either order).
   */
  private async place(env: Envelope, type: string): Promise<void> {
    const waiting = this.placing.get(env.to);
    if (waiting) return void waiting.push(env);
    const queue = [env];
    this.placing.set(env.to, queue);
    let placed: Awaited<ReturnType<ObjectServer['placeInstance']>>;
    try {
      placed = await this.deps.objects.placeInstance(type, env.to.slice(2));
    } catch (error) {
      this.placing.delete(env.to);
      for (const e of queue) this.terminal(e, { ok: false, kind: 'unavailable', error: `placement of ${e.to} failed: ${(error as Error).message}` });
      return;
    }
    this.placing.delete(env.to);
    for (const e of queue) {
      if ('local' in placed) {
        // §15 Instance Spot placement: an activation accepted before a Shutdown's seal is processed to its terminal,
        // so the messages that waited for the placement are delivered, not refused by the Draining admission they
        // never passed.
        if (this.closed) this.terminal(e, { ok: false, kind: 'shutdown', error: 'the host shut down before the message was routed' });
        else if (!this.deps.objects.deliver(e)) this.dispatch(e);
        continue;
      }
      const route = { owner: placed.record.owner, gen: placed.record.objectGeneration };
      this.routes.set(e.to, route);
      if (!this.sendTo(route.owner, e, route.gen)) this.terminal(e, { ok: false, kind: 'unavailable', error: `owner of ${e.to} is not connected` });
    }
  }

  private sendTo(owner: NodeRef, env: Envelope, gen: number): boolean {
    const own = env.seq !== undefined && sameNode(env.from, this.deps.self);
    if (!this.transmit(owner, { t: 'msg', env: env.gen === 0 && gen && !env.close ? { ...env, gen } : env })) return false;
    if (own) this.lastSent.set(env.to, { to: owner, seq: env.seq!, gen: env.gen || gen });
    return true;
  }

  /**
   * One of this node's own messages is about to be handled here (the object moved to this node) while earlier
   * ones went to its old owner and may come back through Message Follow or a bounce. It waits until that node
   * answered the order marker — sent on the same ordered connection, so the answer comes after them.
   */
  private heldBehindOldRoute(env: Envelope): boolean {
    if (env.seq === undefined || !sameNode(env.from, this.deps.self)) return false;
    const mark = this.marking.get(env.to);
    if (mark) {
      mark.held.push(env);
      return true;
    }
    const prev = this.lastSent.get(env.to);
    if (!prev || sameNode(prev.to, this.deps.self)) return false;
    if (!this.startMark(env.to, prev.to, (m) => this.transmit(prev.to, m))) return false;
    this.marking.get(env.to)!.held.push(env);
    return true;
  }

  /** Sends the order marker for `key` down the old path through `peer`; new own messages wait for its answer. */
  private startMark(key: ObjectKey, peer: NodeRef, send: (message: RuntimeMessage) => boolean): boolean {
    this.lastSent.delete(key);
    const self = this.deps.self;
    const mark: MarkMessage = { t: 'mark', to: key, origin: { nodeId: self.nodeId, lifecycleGeneration: self.lifecycleGeneration } };
    if (!send(mark as unknown as RuntimeMessage)) return false;
    this.marking.set(key, { held: [], peer, timer: this.deps.clock.setTimeout(() => this.releaseMark(key), this.deps.connectWaitMs) });
    return true;
  }

  /**
   * A `mark` reached this node: pass it on behind the messages it follows (Message Follow), or answer — this node
   * holds the object (its lane or temporary queue has them in order) or turned them away already (bounces first).
   */
  private onMark(mark: MarkMessage): void {
    const follow = this.followOf(mark.to);
    if (follow && !this.deps.objects.get(mark.to)) {
      this.deps.beforeFollow(follow);
      if (this.transmit(follow, mark as unknown as RuntimeMessage)) return;
    }
    if (sameNode(mark.origin, this.deps.self)) return this.releaseMark(mark.to);
    this.transmit(mark.origin, { t: 'marked', to: mark.to });
  }

  /** The old route answered (or is gone, or the wait ended): the held messages go on, in send order. */
  private releaseMark(key: ObjectKey): void {
    const mark = this.marking.get(key);
    if (!mark) return;
    this.marking.delete(key);
    this.deps.clock.clearTimeout(mark.timer);
    for (const env of mark.held.sort((a, b) => a.seq! - b.seq!)) {
      const staged = this.deps.objects.get(key) ? undefined : this.deps.staging(key);
      if (staged) this.toStaging(env, staged);
      else this.dispatch(env);
    }
    this.notifyIdle();
  }

  /**
   * Sends in order; a peer that is not Ready yet gets the message parked until it is (or the wait ends, when
   * requests among them end `unavailable`). false when there is no transport or the peer is closing (the caller
   * re-routes).
   */
  private transmit(peer: NodeRef, message: RuntimeMessage): boolean {
    const transport = this.deps.transport();
    if (!transport || this.closed) return false;
    const key = nodeKey(peer);
    if (this.leaving.has(key)) return false;
    const parked = this.parked.get(key);
    if (parked) {
      parked.messages.push(message);
      return true;
    }
    try {
      if (transport.send(peer, message)) {
        this.handedTo(key, message);
        return true;
      }
    } catch (error) {
      // Not expected (values are bounded at the call), but never a throw out of a promise callback.
      this.deps.logger.error({ message: message.t, peer: peer.nodeId, err: error }, 'runtime message could not be sent');
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

  /** A request of this node left over the connection to `peer`: losing that connection ends it (item 8). */
  private handedTo(peerKey: string, message: RuntimeMessage): void {
    if (message.t !== 'msg') return;
    const env = (message as unknown as { env: Envelope }).env;
    if (!env.req) return;
    const entry = this.pending.get(env.id);
    if (entry) entry.via = peerKey;
  }

  /** A peer became Ready: flush what waited for it, in order. */
  onPeerReady(peer: NodeRef): void {
    const key = nodeKey(peer);
    const entry = this.parked.get(key);
    const transport = this.deps.transport();
    if (!entry || !transport) return;
    let i = 0;
    for (; i < entry.messages.length; i++) {
      if (!transport.send(peer, entry.messages[i]!)) break;
      this.handedTo(key, entry.messages[i]!);
    }
    if (i === entry.messages.length) {
      this.deps.clock.clearTimeout(entry.timer);
      this.parked.delete(key);
    } else entry.messages.splice(0, i);
  }

  /**
   * The peer announced it is closing (§14 cleanup on its side): what waits for it is re-routed now, and nothing
   * more is sent there; requests it holds still get their answers before it closes.
   */
  onPeerLeaving(peer: NodeRef): void {
    const key = nodeKey(peer);
    // Messages this node sent there may still be relayed onwards (Message Follow): a marker follows them, and new
    // messages for those objects wait for it, instead of overtaking them on a direct route (item 10).
    const transport = this.deps.transport();
    if (transport && !this.parked.has(key)) {
      for (const [object, last] of [...this.lastSent]) {
        if (nodeKey(last.to) !== key || this.marking.has(object)) continue;
        this.startMark(object, peer, (m) => transport.send(peer, m));
      }
    }
    this.leaving.add(key);
    const entry = this.parked.get(key);
    if (!entry) return;
    this.deps.clock.clearTimeout(entry.timer);
    this.parked.delete(key);
    for (const message of entry.messages) this.unreachable(peer, message);
  }

  /**
   * The connection to `peer` closed. After an announced close the peer read and answered everything; otherwise
   * what was written may be lost: requests that went over it end `unavailable` at once rather than at their
   * timeout (DESIGN "No silent loss", item 8), and the loss is counted and logged once.
   */
  onConnectionLost(peer: NodeRef, info: { announced: boolean; unwritten: readonly RuntimeMessage[] }): void {
    const key = nodeKey(peer);
    const announced = info.announced || this.leaving.has(key);
    this.leaving.delete(key);
    // Never written, so never read: they go again, first in line, once that run is reachable (or re-route if gone).
    if (info.unwritten.length) this.requeue(peer, info.unwritten);
    for (const [object, mark] of [...this.marking]) if (nodeKey(mark.peer) === key) this.releaseMark(object);
    if (announced) return;
    let failed = 0;
    for (const [id, entry] of [...this.pending]) {
      if (entry.via !== key) continue;
      failed++;
      this.settle(id, undefined, new RequestError('unavailable', `the connection to ${peer.nodeId} was lost before the reply arrived (the request may or may not have run)`));
    }
    telemetry.connectionLost();
    this.deps.logger.warn(
      { peer: peer.nodeId, peerGeneration: peer.lifecycleGeneration, requestsEnded: failed, unwrittenRequeued: info.unwritten.length },
      'connection lost without the peer announcing it: requests in flight over it ended unavailable, unwritten messages go again; ' +
        'one-way sends written just before the loss may not have been read',
    );
  }

  /** Messages handed back unwritten: ahead of whatever is already parked for that peer, in their order. */
  private requeue(peer: NodeRef, messages: readonly RuntimeMessage[]): void {
    const key = nodeKey(peer);
    for (const message of messages) {
      if (message.t !== 'msg') continue;
      const env = (message as unknown as { env: Envelope }).env;
      const entry = env.req ? this.pending.get(env.id) : undefined;
      if (entry && entry.via === key) entry.via = undefined; // not sent yet: the loss must not end it
    }
    if (this.leaving.has(key) || !this.deps.isKnownPeer(peer)) {
      for (const message of messages) this.unreachable(peer, message);
      return;
    }
    const parked = this.parked.get(key);
    if (parked) return void parked.messages.unshift(...messages);
    this.parked.set(key, {
      peer,
      messages: [...messages],
      timer: this.deps.clock.setTimeout(() => this.expireParked(key), this.deps.connectWaitMs),
    });
    this.deps.requestDiscovery();
  }

  /** A message for a node that is gone or closing: this node's own messages re-resolve their owner, in order. */
  private unreachable(peer: NodeRef, message: RuntimeMessage): void {
    if (message.t === 'mark') {
      const mark = message as unknown as MarkMessage;
      if (sameNode(mark.origin, this.deps.self)) return this.releaseMark(mark.to);
      return void this.transmit(mark.origin, { t: 'marked', to: mark.to });
    }
    const env = (message as { env?: Envelope }).env;
    if ((message.t === 'msg' || message.t === 'bounce') && env) {
      if (sameNode(env.from, this.deps.self)) return this.reroute(env, peer);
      return this.terminal(env, { ok: false, kind: 'unavailable', error: `node ${peer.nodeId} is gone` });
    }
    this.deps.logger.warn({ message: message.t, peer: peer.nodeId }, 'runtime message dropped: that node is gone');
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
      else this.deps.logger.warn({ message: message.t, peer: entry.peer.nodeId, waitedMs: this.deps.connectWaitMs }, 'runtime message dropped: peer not reachable');
    }
  }

  private forward(to: NodeRef, env: Envelope): void {
    const hops = (env.hops ?? 0) + 1;
    if (hops > MAX_HOPS) return this.terminal(env, { ok: false, kind: 'unavailable', error: `route of ${env.to} exceeded ${MAX_HOPS} hops` });
    this.deps.beforeFollow(to);
    if (!this.transmit(to, { t: 'msg', env: { ...env, hops } })) {
      if (sameNode(env.from, this.deps.self)) return this.reroute(env, to);
      return this.bounce(env);
    }
    telemetry.followed();
    // The origin now waits on `to`, not on this node (which may close before `to` answers).
    if (env.req && !sameNode(env.from, this.deps.self)) {
      const via: ViaMessage = { t: 'via', id: env.id, node: { nodeId: to.nodeId, lifecycleGeneration: to.lifecycleGeneration } };
      this.transmit(env.from, via as unknown as RuntimeMessage);
    }
  }

  /** "Not here" back to the origin, with where this node moved the object when it knows (§11 convergence). */
  private bounce(env: Envelope): void {
    if (sameNode(env.from, this.deps.self)) return this.reroute(env, this.deps.self);
    const moved = this.movedTo(env.to);
    // §12: the Spot left with a relocation that came first; the close is answered here, not redirected after it.
    if (moved && env.close) return this.moving(env, moved);
    telemetry.bounced();
    const message: BounceMessage = { t: 'bounce', env: env as BounceMessage['env'], ...(moved ? { moved } : {}) };
    if (!this.transmit(env.from, message as unknown as RuntimeMessage)) this.undeliverable(env, 'origin-unreachable', `its origin ${env.from.nodeId} is not reachable for a redirect`);
  }

  /** Where this node moved `key`: its follow route until S4, the bounce hint after it while restoreValidityMs lasts. */
  private movedTo(key: ObjectKey): NodeRef | undefined {
    const entry = this.moved.get(key);
    if (!entry) return undefined;
    if (this.deps.clock.now() < entry.until) return entry.to;
    this.moved.delete(key);
    return undefined;
  }

  /** The Message Follow route for `key` (S1 to S4), if one is open. */
  private followOf(key: ObjectKey): NodeRef | undefined {
    const entry = this.moved.get(key);
    return entry !== undefined && entry.until === Infinity ? entry.to : undefined;
  }

  /**
   * The old owner bounced one of this node's messages. Everything this node sent there after it bounces too, in
   * order, on the same connection: new sends to that object wait until the last one sent came back, then all go
   * to the new owner in their original order — so a re-route never reorders one sender's messages.
   */
  private onBounce(from: NodeRef, message: BounceMessage): void {
    const env = message.env as Envelope;
    this.dropFollowTo(env.to, from);
    if (env.seq === undefined || !sameNode(env.from, this.deps.self)) return this.reroute(env, from);
    const key = env.to;
    // A bounce always goes through the re-route (even while an order marker is out): the re-route counts the bounces
    // back up to the last message sent, and whatever the marker holds joins the same per-object queue on release.
    let entry = this.rerouting.get(key);
    if (!entry) {
      this.routes.delete(key);
      if (!this.resolving.has(key)) this.resolving.set(key, []);
      entry = {
        bounced: [],
        until: this.lastSent.get(key)?.seq ?? env.seq,
        by: from,
        // A bounce that never comes (lost with a connection) must not hold the object's sends forever.
        timer: this.deps.clock.setTimeout(() => this.finishReroute(key), Math.max(100, Math.min(this.deps.connectWaitMs, 2000))),
      };
      this.rerouting.set(key, entry);
    }
    if (message.moved) entry.hint = message.moved;
    entry.bounced.push(env);
    if (env.seq >= entry.until) this.finishReroute(key);
  }

  private finishReroute(key: ObjectKey): void {
    const entry = this.rerouting.get(key);
    if (!entry) return;
    this.rerouting.delete(key);
    this.deps.clock.clearTimeout(entry.timer);
    const queue = this.resolving.get(key) ?? [];
    for (const env of entry.bounced) {
      const hops = (env.hops ?? 0) + 1;
      if (hops > MAX_HOPS) this.terminal(env, { ok: false, kind: 'unavailable', error: `route of ${env.to} did not converge within ${MAX_HOPS} redirects` });
      else queue.push({ ...env, hops });
    }
    this.resolving.set(key, queue);
    const hint = entry.hint;
    if (hint && !sameNode(hint, this.deps.self) && !this.leaving.has(nodeKey(hint))) {
      // The old owner knows where it moved the object: wait there (its temporary queue or its owner dispatch).
      const envs = this.takeQueue(key);
      for (const env of envs) {
        if (this.sendTo(hint, env, env.gen)) continue;
        this.reroute(env, hint);
      }
      return;
    }
    this.resolveQueue(key, queue, { owner: entry.by, since: this.deps.clock.now() });
  }

  /**
   * A stale route (owner unreachable, closing or not hosting): drop the cached owner and re-read the Location
   * Store until it names another node or restoreValidityMs pass. The message joins the object's queue, so later
   * sends wait behind it (item 10: no overtaking).
   */
  private reroute(env: Envelope, staleOwner: NodeRef): void {
    this.routes.delete(env.to);
    this.dropFollowTo(env.to, staleOwner);
    const hops = (env.hops ?? 0) + 1;
    if (hops > MAX_HOPS) return this.terminal(env, { ok: false, kind: 'unavailable', error: `route of ${env.to} did not converge within ${MAX_HOPS} redirects` });
    const next = { ...env, hops };
    const queued = this.resolving.get(env.to);
    if (queued) return void queued.push(next);
    this.resolveQueue(env.to, [next], { owner: staleOwner, since: this.deps.clock.now() });
  }

  /**
   * Our Message Follow route for `key` names `node`, which did not take a message for it: it turned it away (it
   * neither hosts nor follows the object now: the object moved on and that node's window ended first, or a Shutdown
   * cut it, §14), it announced its close, or it could not be reached. Kept, the route would take the re-routed
   * message straight back there — the owner record is only read for objects with no route here — until MAX_HOPS
   * ended it `unavailable` (the interleavings property test met all three under load). Without it the record is read.
   */
  private dropFollowTo(key: ObjectKey, node: NodeRef): void {
    const entry = this.moved.get(key);
    if (entry === undefined || entry.until !== Infinity || !sameNode(entry.to, node)) return;
    this.moved.delete(key);
    this.follows--;
  }

  /** §12: a message for an older ObjectGeneration. Requests end stale-generation; a one-way sender drops its route. */
  rejectStaleGeneration(env: Envelope, current: number): void {
    if (env.req) return this.reply(env, { ok: false, kind: 'stale-generation', error: `object generation ${env.gen} is not current (${current})` });
    this.undeliverable(env, 'stale-generation', `object generation ${env.gen} is not current (${current})`);
    if (sameNode(env.from, this.deps.self)) return void this.routes.delete(env.to);
    const notice: StaleMessage = { t: 'stale', to: env.to, gen: env.gen };
    this.transmit(env.from, notice as unknown as RuntimeMessage);
  }

  /** Ends a request that cannot be delivered; a one-way message is counted and logged (once per origin and cause). */
  terminal(env: Envelope, terminal: Terminal): void {
    if (env.req) return this.reply(env, terminal);
    this.undeliverable(env, terminal.kind ?? 'unavailable', terminal.error ?? 'undeliverable');
  }

  private undeliverable(env: Envelope, cause: string, why: string): void {
    telemetry.undeliverable(cause);
    const once = `${nodeKey(env.from)}\u0000${cause}`;
    if (this.loggedDrops.has(once)) return;
    if (this.loggedDrops.size > 10_000) this.loggedDrops.clear();
    this.loggedDrops.add(once);
    this.deps.logger.warn(
      { object: env.to, origin: env.from.nodeId, cause, why },
      'one-way message not delivered; further ones for this origin and cause are only counted (zlink.runtime.message.undeliverable)',
    );
  }

  /** The one terminal of a request, sent back to the node that accepted the call. */
  reply(env: Envelope, terminal: Terminal): void {
    // §1.1, §9: a pending request that completes after relocation leaves its terminal in the Relocation Store.
    // (Not for session envelopes: a session frame's retry is the session's own sequence number, not its identity.)
    if (env.moved && !env.ses) this.deps.recordMovedTerminal(env.id, terminal.ok ? { ok: true, value: decodeValue(terminal.value!) } : terminal);
    if (sameNode(env.from, this.deps.self)) return this.settleTerminal(env.id, terminal);
    const message: ReplyMessage = { t: 'reply', id: env.id, ok: terminal.ok, value: terminal.value, error: terminal.error, kind: terminal.kind };
    if (!this.transmit(env.from, message as unknown as RuntimeMessage))
      this.deps.logger.warn({ requestId: env.id, origin: env.from.nodeId }, 'reply could not reach the caller');
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
    // The object is of another generation now: the next new send re-resolves it (§12 "must be rebound").
    if (terminal.kind === 'stale-generation') {
      const key = this.pending.get(id)?.key;
      if (key) this.routes.delete(key);
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
    telemetry.requestSettled(performance.now() - entry.started, requestOutcome(error));
    if (error) entry.reject(error);
    else entry.resolve(value);
  }

  /** Transport entry point for runtime messages from admitted peers. */
  onMessage = (from: NodeRef, raw: RuntimeMessage): void => {
    if (this.closed) return;
    const message = parseRuntimeMessage(raw);
    if (!message) return this.deps.logger.warn({ message: String(raw?.t), peer: from.nodeId }, 'invalid runtime message dropped');
    switch (message.t) {
      case 'msg':
        return this.dispatch((message as { env: Envelope }).env, true);
      case 'reply':
        return this.settleTerminal((message as ReplyMessage).id, message as ReplyMessage);
      case 'bounce':
        return this.onBounce(from, message as BounceMessage);
      case 'via': {
        const via = message as ViaMessage;
        const entry = this.pending.get(via.id);
        if (entry) entry.via = nodeKey(via.node);
        return;
      }
      case 'mark':
        return this.onMark(message as MarkMessage);
      case 'marked':
        return this.releaseMark((message as { to: string }).to);
      case 'stale': {
        const stale = message as StaleMessage;
        if (this.routes.get(stale.to)?.gen === stale.gen) this.routes.delete(stale.to);
        return;
      }
      default:
        this.deps.onControl(from, raw);
    }
  };

  // ── Message Follow (owned by relocation units) ──────────────────────────────────────

  /** S1: messages for `key` follow to `to` (the follow route is also the bounce hint until S4, see movedTo). */
  setFollow(key: ObjectKey, to: NodeRef): void {
    if (this.followOf(key) === undefined) this.follows++;
    this.moved.set(key, { to, until: Infinity });
    // Usually empty on a source (its objects were local): no probe of a cold map per moved object then.
    if (this.routes.size !== 0) this.routes.delete(key);
  }

  /** S4: the relay ends; the bounce hint stays for restoreValidityMs while the new owner's CAS may still land. */
  removeFollow(key: ObjectKey): void {
    const entry = this.moved.get(key);
    if (entry === undefined || entry.until !== Infinity) return;
    this.follows--;
    entry.until = this.deps.clock.now() + this.deps.restoreValidityMs;
    this.movedExpiry.push({ key, entry });
    this.movedExpiry.expireDue();
  }

  get followCount(): number {
    return this.follows;
  }

  invalidate(key: ObjectKey): void {
    this.routes.delete(key);
  }

  /** Nothing accepted here still waits to be routed (lookups, re-routes, parked messages, order markers). */
  get idle(): boolean {
    return this.resolving.size === 0 && this.rerouting.size === 0 && this.parked.size === 0 && this.marking.size === 0;
  }

  /**
   * §14 step 3: resolves once every message this host accepted has been handed on (a send accepted just before
   * Shutdown is still delivered, not dropped by the router's close). The caller bounds it by the deadline.
   */
  whenIdle(): Promise<void> {
    if (this.idle) return Promise.resolve();
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve);
      this.pollIdle();
    });
  }

  private pollIdle(): void {
    this.deps.clock.setTimeout(() => (this.idle || this.closed ? this.notifyIdle() : this.pollIdle()), 5);
  }

  private notifyIdle(): void {
    if (!this.idle && !this.closed) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }

  /** §14: outstanding requests of this host end with a shutdown result; routes go with the transport. */
  close(): void {
    this.closed = true;
    for (const entry of this.parked.values()) this.deps.clock.clearTimeout(entry.timer);
    for (const [key, entry] of [...this.parked]) {
      this.parked.delete(key);
      for (const message of entry.messages) {
        const env = (message as { env?: Envelope }).env;
        if (message.t === 'msg' && env && !sameNode(env.from, this.deps.self)) this.undeliverable(env, 'shutdown', 'the forwarding host shut down');
      }
    }
    for (const entry of this.rerouting.values()) this.deps.clock.clearTimeout(entry.timer);
    this.rerouting.clear();
    for (const mark of this.marking.values()) {
      this.deps.clock.clearTimeout(mark.timer);
      for (const env of mark.held) this.terminal(env, { ok: false, kind: 'shutdown', error: 'the host shut down before the message was routed' });
    }
    this.marking.clear();
    this.notifyIdle();
    this.follows = 0;
    this.movedExpiry.clear();
    this.moved.clear();
    this.routes.clear();
    for (const id of [...this.pending.keys()]) this.settle(id, undefined, new RequestError('shutdown', 'the host shut down before the request completed'));
  }
}

const NO_BODY = new Uint8Array(0);

function checkTimeout(options: RequestOptions): void {
  const timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new RequestError('unavailable', 'options.timeoutMs: must be a finite number > 0');
}

/** Bounded outcome label of a settled request (`zlink.runtime.request.duration`). */
function requestOutcome(error: Error | undefined): string {
  if (!error) return 'ok';
  if (error instanceof RequestError) return error.kind;
  return error.name === 'AbortError' ? 'aborted' : 'error';
}
