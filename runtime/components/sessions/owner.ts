/**
 * The session owner: the host whose session endpoint a client is connected to. It keeps the client's physical
 * connection, routes the session's upstream frames to the Actor's current owner like any message (router), and
 * delivers the Actor's downstream frames to the client in order and once each, whichever node they come from.
 *
 * Per direction, a sequence number (wire.ts). Upstream: each client frame is a session envelope request to the
 * Actor; its reply is the last frame the Actor delivered (`up`), which goes back to the client as the acknowledgement.
 * A reply below the frame (a gap) or a lost request sends the unacknowledged frames again, in order; the Actor drops
 * what it already has. Downstream: frames from the Actor's old and new owner may arrive on different connections
 * around a move, so they are put in order here (a gap asks the Actor to send again) and duplicates are dropped.
 *
 * Around a move (§12): a seal notice (source S0) starts the seal timeout; the route update (command 44, target
 * after S3) ends it. Upstream frames meanwhile wait in the unit barrier's hold and are relayed like any message.
 * When this host drains (§15 Draining) its clients are told to move: they resume at another host's endpoint with
 * their last delivered sequence numbers, and the Actor rebinds the session there.
 */
import { randomUUID } from 'node:crypto';
import type { NodeRef } from '../../../stores/types';
import { FrameworkRuntimeState, nameOf } from '../../../vocabulary';
import type { Clock } from '../../clock';
import { RequestError } from '../../errors';
import { actorKey, sameNode, type ObjectKey } from '../../keys';
import type { RuntimeLog } from '../../logger';
import {
  encodeSessionEnvelope,
  readSessionReply,
  SESSION_MESSAGE,
  type DownMessage,
  type EndMessage,
  type RouteMessage,
  type SealMessage,
  type SessionEnvelope,
  type SessionNodeMessage,
} from './protocol';
import { decodeClientMessage, SESSION_WIRE_VERSION, type ServerMessage, type SessionCloseCode } from './wire';

/** Upstream acknowledgements to a client are coalesced this long. */
export const CLIENT_ACK_MS = 10;
/** A client's downstream acknowledgement reaches the Actor on the next frame, or alone after this. */
export const ACTOR_ACK_MS = 50;
/** A downstream gap that lasts this long asks the Actor to send again (doubling while it lasts). */
export const GAP_MS = 200;
const RESEND_MIN_MS = 20;
const RESEND_MAX_MS = 1000;
/** Upstream frames a session owner keeps unacknowledged, and downstream frames it holds out of order. */
export const MAX_SESSION_BUFFER = 10_000;

/** One client connection as the owner sees it (listener.ts implements it over ws). */
export interface ClientLink {
  /** Queued on the connection's write queue, in order; nothing after the link closed. */
  send(message: ServerMessage): void;
  /** Closes after the queued writes (a graceful WebSocket close). */
  close(code: number, reason: string): void;
  /** What authenticate returned, encoded (undefined for `true`). */
  readonly identity: Uint8Array | undefined;
}

export interface ConnectionHandlers {
  onMessage(bytes: Uint8Array): void;
  /** The connection closed (either side); called once. */
  onClose(): void;
}

export interface OwnerPorts {
  /** Read at each use. */
  readonly self: NodeRef;
  readonly clock: Clock;
  readonly logger: RuntimeLog;
  state(): FrameworkRuntimeState;
  /** A session envelope request to the Actor, routed like any message; ends exactly once. */
  request(actor: ObjectKey, body: Uint8Array, gen: number): Promise<unknown>;
  /** A one-way session envelope to the Actor (ordered after this host's earlier ones to it). */
  post(actor: ObjectKey, body: Uint8Array, gen: number): void;
  /** Session endpoints of the other Serving hosts (where a client resumes). */
  otherEndpoints(): string[];
  /** How long a sealed session waits for its route update, and an unreachable Actor is retried. */
  readonly sealTimeoutMs: number;
  /** How long an Actor keeps a binding whose client left this endpoint, for the client to resume elsewhere. */
  readonly resumeWindowMs: number;
}

type Phase = 'opening' | 'resuming' | 'open';

class Connection implements ConnectionHandlers {
  session: OwnedSession | undefined;
  done = false;
  constructor(
    private readonly owner: SessionOwner,
    readonly link: ClientLink,
  ) {}
  onMessage(bytes: Uint8Array): void {
    this.owner.onClientMessage(this, bytes);
  }
  onClose(): void {
    this.owner.onClientClosed(this);
  }
}

class OwnedSession {
  phase: Phase;
  ended = false;
  moving = false;
  /** ObjectGeneration the session is bound to (0 until the open reply). */
  gen: number;
  actorNode: NodeRef | undefined;
  /** Highest move number whose route update arrived, and of the seal in force. */
  routed = 0;
  sealed = 0;
  sealTimer: unknown;
  // upstream
  upAcked = 0;
  upReceived = 0;
  readonly upBuffer = new Map<number, Uint8Array>();
  upAckSent = 0;
  clientAckTimer: unknown;
  resendTimer: unknown;
  backoffMs = RESEND_MIN_MS;
  failingSince: number | undefined;
  // downstream
  downNext = 1;
  readonly reorder = new Map<number, Uint8Array>();
  gapTimer: unknown;
  gapMs = GAP_MS;
  clientDownAck = 0;
  sentDownAck = 0;
  actorAckTimer: unknown;
  ending: { last: number; reason: string } | undefined;

  constructor(
    readonly sid: string,
    readonly actor: ObjectKey,
    gen: number,
    readonly attach: number,
    public conn: Connection | undefined,
    phase: Phase,
  ) {
    this.gen = gen;
    this.phase = phase;
  }
}

export class SessionOwner {
  private readonly sessions = new Map<string, OwnedSession>();
  private readonly connections = new Set<Connection>();
  /** Open and resume requests in flight (§4: bindings settle before the inventory; §15: pending replies end). */
  private readonly admissions = new Set<Promise<void>>();
  private draining = false;
  private destroyed = false;
  private drainWaiters: (() => void)[] = [];

  constructor(private readonly ports: OwnerPorts) {}

  get sessionCount(): number {
    return this.sessions.size;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** A client connected (after authentication). */
  accept(link: ClientLink): ConnectionHandlers {
    const conn = new Connection(this, link);
    if (this.destroyed) {
      link.close(1001, 'the session endpoint is closing');
      conn.done = true;
      return conn;
    }
    this.connections.add(conn);
    return conn;
  }

  // ── client messages ─────────────────────────────────────────────────────────────

  onClientMessage(conn: Connection, bytes: Uint8Array): void {
    if (this.destroyed || conn.done) return;
    const message = decodeClientMessage(bytes);
    if (!message) return this.refuse(conn, 'protocol', 'invalid session message');
    const session = conn.session;
    switch (message.t) {
      case 'f':
        if (!session || session.phase !== 'open') return this.refuse(conn, 'protocol', 'a frame before the session was opened');
        if (session.moving) return; // told to move: the client sends it again where it resumes
        return this.onClientFrame(session, message.s, message.d);
      case 'a':
        if (session && !session.ended && message.d > session.clientDownAck && message.d < session.downNext) {
          session.clientDownAck = message.d;
          this.scheduleActorAck(session);
        }
        return;
      case 'open':
      case 'resume': {
        if (session) return this.refuse(conn, 'protocol', `'${message.t}' on a connection that already holds a session`);
        if (message.v !== SESSION_WIRE_VERSION) return this.refuse(conn, 'protocol', `session wire version ${message.v} is not ${SESSION_WIRE_VERSION}`);
        const refusal = this.admissionRefusal();
        if (refusal) return this.refuse(conn, 'admission', refusal, this.ports.otherEndpoints());
        return message.t === 'open' ? this.open(conn, message.actor) : this.resume(conn, message);
      }
      case 'close':
        if (!session || session.ended) return this.refuse(conn, 'closed', 'closed by the client');
        if (session.phase === 'open') this.post(session, { k: 'close', sid: session.sid, why: 'client' });
        return this.end(session, 'closed', 'closed by the client');
    }
  }

  /** §15 STREAM: only a Serving host takes new bindings (and resumed ones: a resume binds the session here). */
  private admissionRefusal(): string | undefined {
    const state = this.ports.state();
    if (state === FrameworkRuntimeState.Serving && !this.draining) return undefined;
    return `host ${this.ports.self.nodeId} is ${nameOf(FrameworkRuntimeState, state)}: it accepts no new session binding (docs/concepts.md "STREAM sessions"); connect to another host's session endpoint`;
  }

  private refuse(conn: Connection, code: SessionCloseCode, reason: string, endpoints?: string[]): void {
    if (conn.done) return;
    conn.done = true;
    conn.link.send({ t: 'closed', code, reason, ...(endpoints ? { endpoints } : {}) });
    conn.link.close(code === 'protocol' ? 4002 : 1000, code);
    if (conn.session && !conn.session.ended) this.end(conn.session, code, reason);
  }

  onClientClosed(conn: Connection): void {
    this.connections.delete(conn);
    conn.done = true;
    const session = conn.session;
    if (session && !session.ended && session.conn === conn) {
      session.conn = undefined;
      // Still opening or resuming: the reply handler finishes it (the client never saw it bound here).
      if (session.phase === 'open') {
        // Not the end of the session: the client may resume at another endpoint (or here) within the window.
        this.post(session, { k: 'detach', sid: session.sid, attach: session.attach, ms: this.ports.resumeWindowMs });
        this.forget(session);
      }
    }
    this.wakeDrain();
  }

  // ── open and resume (pending replies end exactly once) ──────────────────────────────

  private open(conn: Connection, actor: string): void {
    const session = new OwnedSession(randomUUID(), actorKey(actor), 0, 1, conn, 'opening');
    this.sessions.set(session.sid, session);
    conn.session = session;
    const body: SessionEnvelope = { k: 'open', sid: session.sid, owner: this.selfRef(), ...(conn.link.identity ? { id: conn.link.identity } : {}) };
    this.admit(
      this.ports.request(session.actor, encodeSessionEnvelope(body), 0).then(
        (value) => this.onAdmitted(session, value),
        (error: unknown) => this.onAdmissionFailed(session, error),
      ),
    );
  }

  private resume(conn: Connection, message: { sid: string; actor: string; gen: number; attach: number; down: number }): void {
    // The same client on a new connection here before the old one was noticed gone: the new one takes over.
    const previous = this.sessions.get(message.sid);
    if (previous) {
      const old = previous.conn;
      this.forget(previous);
      if (old && !old.done) {
        old.done = true;
        old.link.close(1000, 'resumed on another connection');
      }
    }
    const session = new OwnedSession(message.sid, actorKey(message.actor), message.gen, message.attach, conn, 'resuming');
    session.downNext = message.down + 1;
    session.clientDownAck = message.down;
    session.sentDownAck = message.down;
    this.sessions.set(session.sid, session);
    conn.session = session;
    const body: SessionEnvelope = {
      k: 'resume',
      sid: session.sid,
      owner: this.selfRef(),
      attach: session.attach,
      da: message.down,
      ...(conn.link.identity ? { id: conn.link.identity } : {}),
    };
    this.admit(
      this.ports.request(session.actor, encodeSessionEnvelope(body), session.gen).then(
        (value) => this.onAdmitted(session, value),
        (error: unknown) => this.onAdmissionFailed(session, error),
      ),
    );
  }

  private admit(work: Promise<void>): void {
    const tracked = work.catch((error: unknown) => this.ports.logger.error({ err: error }, 'session admission failed unexpectedly'));
    this.admissions.add(tracked);
    void tracked.finally(() => {
      this.admissions.delete(tracked);
      this.wakeDrain();
    });
  }

  private onAdmitted(session: OwnedSession, value: unknown): void {
    if (this.destroyed || session.ended) return;
    const reply = readSessionReply(value);
    if (!reply) return this.end(session, 'protocol', 'the Actor answered the binding with something that is not a session reply');
    if (reply.closed) return this.end(session, reply.closed, reply.reason ?? reply.closed);
    const opening = session.phase === 'opening';
    if (reply.gen !== undefined) session.gen = reply.gen;
    // Where the Actor is now, unless a route update already said more (a move may have ended meanwhile).
    if (reply.node && session.routed === 0 && session.sealed === 0) session.actorNode = reply.node;
    session.upAcked = session.upReceived = session.upAckSent = reply.up ?? 0;
    session.phase = 'open';
    const conn = session.conn;
    if (!conn || conn.done) {
      // The client left before it learned the outcome. A new binding is closed (its id never reached the client);
      // a resumed one is detached again (the client may still resume elsewhere).
      if (opening) this.post(session, { k: 'close', sid: session.sid, why: 'client' });
      else this.post(session, { k: 'detach', sid: session.sid, attach: session.attach, ms: this.ports.resumeWindowMs });
      return this.forget(session);
    }
    conn.link.send(opening ? { t: 'opened', sid: session.sid, gen: session.gen } : { t: 'resumed', up: session.upAcked });
    this.flushDown(session);
    this.afterDown(session);
    // Bound while the host started draining: this reply was pending (§15 Draining), and the client moves on now.
    if (this.draining) this.sendMove(session);
  }

  private onAdmissionFailed(session: OwnedSession, error: unknown): void {
    if (this.destroyed || session.ended) return;
    const code = codeOf(error);
    this.end(session, code, `${session.phase === 'opening' ? 'binding' : 'resuming'} the session failed: ${(error as Error)?.message ?? String(error)}`);
  }

  // ── upstream (client → Actor) ───────────────────────────────────────────────────

  private onClientFrame(session: OwnedSession, seq: number, d: Uint8Array): void {
    if (seq <= session.upReceived) return; // sent again by the client: already forwarded
    if (seq !== session.upReceived + 1) return this.refuse(session.conn!, 'protocol', `upstream frame ${seq} after ${session.upReceived}`);
    if (session.upBuffer.size >= MAX_SESSION_BUFFER)
      return this.refuse(session.conn!, 'protocol', `more than ${MAX_SESSION_BUFFER} upstream frames unacknowledged`);
    session.upReceived = seq;
    session.upBuffer.set(seq, d);
    this.forward(session, seq);
  }

  private forward(session: OwnedSession, seq: number): void {
    const d = session.upBuffer.get(seq);
    if (!d) return;
    session.sentDownAck = Math.max(session.sentDownAck, session.clientDownAck);
    const body: SessionEnvelope = { k: 'f', sid: session.sid, s: seq, d, da: session.clientDownAck };
    this.ports.request(session.actor, encodeSessionEnvelope(body), session.gen).then(
      (value) => this.onUpReply(session, value, seq),
      (error: unknown) => this.onUpFailed(session, error),
    );
  }

  private onUpReply(session: OwnedSession, value: unknown, seq: number): void {
    if (this.destroyed || session.ended) return;
    const reply = readSessionReply(value);
    if (!reply) {
      this.ports.logger.warn({ session: session.sid }, 'session frame answered with something that is not a session reply');
      return this.scheduleResend(session);
    }
    if (reply.closed) return this.end(session, reply.closed, reply.reason ?? reply.closed);
    const up = reply.up ?? 0;
    if (up > session.upAcked) {
      for (const s of session.upBuffer.keys()) if (s <= up) session.upBuffer.delete(s);
      session.upAcked = up;
      session.failingSince = undefined;
      session.backoffMs = RESEND_MIN_MS;
      this.scheduleClientAck(session);
    }
    if (seq > 0 && up < seq) this.scheduleResend(session);
  }

  private onUpFailed(session: OwnedSession, error: unknown): void {
    if (this.destroyed || session.ended) return;
    const code = codeOf(error);
    if (code === 'not-found' || code === 'stale-generation')
      return this.end(session, code, `the session's Actor ${session.actor.slice(2)}: ${(error as Error).message}`);
    const now = this.ports.clock.now();
    session.failingSince ??= now;
    if (now - session.failingSince >= this.ports.sealTimeoutMs)
      return this.end(session, 'unavailable', `the session's Actor ${session.actor.slice(2)} could not be reached for ${this.ports.sealTimeoutMs} ms: ${(error as Error).message}`);
    this.scheduleResend(session);
  }

  /** Go-back-N: every unacknowledged frame again, in order, after a backoff (a probe when none is left). */
  private scheduleResend(session: OwnedSession): void {
    if (session.resendTimer !== undefined || session.ended || session.phase !== 'open') return;
    session.resendTimer = this.ports.clock.setTimeout(() => {
      session.resendTimer = undefined;
      if (this.destroyed || session.ended) return;
      const pending = [...session.upBuffer.keys()].filter((s) => s > session.upAcked).sort((a, b) => a - b);
      if (pending.length === 0) return this.probe(session);
      for (const s of pending) this.forward(session, s);
    }, session.backoffMs);
    session.backoffMs = Math.min(session.backoffMs * 2, RESEND_MAX_MS);
  }

  /** Asks the Actor where the session stands (its owner may be gone, or the Actor re-created). */
  private probe(session: OwnedSession): void {
    const body: SessionEnvelope = { k: 'ack', sid: session.sid, da: session.clientDownAck };
    session.sentDownAck = Math.max(session.sentDownAck, session.clientDownAck);
    this.ports.request(session.actor, encodeSessionEnvelope(body), session.gen).then(
      (value) => this.onUpReply(session, value, 0),
      (error: unknown) => this.onUpFailed(session, error),
    );
  }

  private scheduleClientAck(session: OwnedSession): void {
    if (session.clientAckTimer !== undefined) return;
    session.clientAckTimer = this.ports.clock.setTimeout(() => {
      session.clientAckTimer = undefined;
      if (this.destroyed || session.ended || !session.conn || session.upAcked <= session.upAckSent) return;
      session.upAckSent = session.upAcked;
      session.conn.link.send({ t: 'a', u: session.upAcked });
    }, CLIENT_ACK_MS);
  }

  private scheduleActorAck(session: OwnedSession): void {
    if (session.actorAckTimer !== undefined || session.phase !== 'open') return;
    session.actorAckTimer = this.ports.clock.setTimeout(() => {
      session.actorAckTimer = undefined;
      if (this.destroyed || session.ended || session.clientDownAck <= session.sentDownAck) return;
      session.sentDownAck = session.clientDownAck;
      this.post(session, { k: 'ack', sid: session.sid, da: session.clientDownAck });
    }, ACTOR_ACK_MS);
  }

  // ── node messages from the Actor's owner ────────────────────────────────────────

  onNodeMessage(from: NodeRef, message: SessionNodeMessage): void {
    if (this.destroyed) return;
    const session = this.sessions.get(message.sid);
    if (!session || session.ended) return;
    switch (message.t) {
      case SESSION_MESSAGE.down:
        return this.onDown(session, message as DownMessage);
      case SESSION_MESSAGE.seal:
        return this.onSeal(session, message as SealMessage);
      case SESSION_MESSAGE.route:
        return this.onRoute(session, message as RouteMessage);
      case SESSION_MESSAGE.end: {
        const end = message as EndMessage;
        session.ending = { last: end.last, reason: end.reason };
        return this.afterDown(session);
      }
    }
    void from;
  }

  private onDown(session: OwnedSession, message: DownMessage): void {
    // §12: frames of another ObjectGeneration are not this session's (a re-created Actor must be rebound).
    if (session.phase !== 'opening' && message.gen !== session.gen) return;
    for (let i = 0; i < message.d.length; i++) {
      const seq = message.s + i;
      if (seq < session.downNext) continue;
      if (seq === session.downNext && session.phase === 'open' && session.conn) this.deliver(session, seq, message.d[i]!);
      else if (session.reorder.size < MAX_SESSION_BUFFER) session.reorder.set(seq, message.d[i]!);
    }
    this.flushDown(session);
    this.afterDown(session);
  }

  private deliver(session: OwnedSession, seq: number, d: Uint8Array): void {
    session.conn!.link.send({ t: 'f', s: seq, d });
    session.downNext = seq + 1;
  }

  private flushDown(session: OwnedSession): void {
    // Until the client got 'opened' / 'resumed', frames wait here in order.
    if (session.phase !== 'open' || !session.conn) return;
    for (let d = session.reorder.get(session.downNext); d !== undefined; d = session.reorder.get(session.downNext)) {
      session.reorder.delete(session.downNext);
      this.deliver(session, session.downNext, d);
    }
    for (const seq of session.reorder.keys()) if (seq < session.downNext) session.reorder.delete(seq);
  }

  /** After downstream progress: a gap asks for a resend; an Actor's end whose frames are all delivered ends it. */
  private afterDown(session: OwnedSession): void {
    if (session.ended || session.phase !== 'open') return;
    const ending = session.ending;
    if (ending && session.downNext > ending.last) {
      this.post(session, { k: 'close', sid: session.sid, why: 'actor' });
      return this.end(session, 'closed', ending.reason || 'closed by the Actor');
    }
    const gap = session.reorder.size > 0 || ending !== undefined;
    if (!gap) {
      this.ports.clock.clearTimeout(session.gapTimer);
      session.gapTimer = undefined;
      session.gapMs = GAP_MS;
      return;
    }
    if (session.gapTimer !== undefined) return;
    session.gapTimer = this.ports.clock.setTimeout(() => {
      session.gapTimer = undefined;
      if (this.destroyed || session.ended) return;
      this.post(session, { k: 'resend', sid: session.sid, from: session.downNext - 1 });
      session.gapMs = Math.min(session.gapMs * 2, RESEND_MAX_MS * 4);
      this.afterDown(session);
    }, session.gapMs);
  }

  private onSeal(session: OwnedSession, message: SealMessage): void {
    if (message.e <= session.routed) return; // the move it announces is over already (a late seal)
    session.sealed = message.e;
    this.ports.clock.clearTimeout(session.sealTimer);
    // §11: if the target never takes the Actor over, the session is given up after its seal timeout.
    session.sealTimer = this.ports.clock.setTimeout(() => {
      session.sealTimer = undefined;
      if (this.destroyed || session.ended || session.sealed <= session.routed) return;
      this.end(session, 'unavailable', `the session's Actor ${session.actor.slice(2)} did not reappear within ${message.ms} ms after it was sealed for a move (seal timeout)`);
    }, message.ms);
  }

  /** Command 44: the Actor's owner is `node` now. One-way; applying it never waits on anything. */
  private onRoute(session: OwnedSession, message: RouteMessage): void {
    if (message.gen !== session.gen || message.e < session.routed) return;
    session.routed = message.e;
    session.actorNode = message.node;
    if (session.sealed <= session.routed) {
      this.ports.clock.clearTimeout(session.sealTimer);
      session.sealTimer = undefined;
    }
    // Frames the old owner sent that have not arrived: ask the new owner now rather than after the gap timer.
    if (session.reorder.size > 0 && session.gapTimer === undefined) this.post(session, { k: 'resend', sid: session.sid, from: session.downNext - 1 });
  }

  /** A peer left: sessions whose Actor it held (and that no move explains) ask the Actor where they stand. */
  onPeerLost(peer: NodeRef): void {
    for (const session of this.sessions.values()) {
      if (session.ended || session.phase !== 'open' || session.sealed > session.routed) continue;
      if (sameNode(session.actorNode, peer)) this.scheduleResend(session);
    }
  }

  // ── endings ─────────────────────────────────────────────────────────────────────

  private post(session: OwnedSession, body: SessionEnvelope): void {
    if (this.destroyed) return;
    this.ports.post(session.actor, encodeSessionEnvelope(body), session.gen);
  }

  /** The session ends here and for its client (code and reason go to the client). */
  private end(session: OwnedSession, code: SessionCloseCode, reason: string): void {
    const conn = session.conn;
    this.forget(session);
    if (conn && !conn.done) {
      conn.done = true;
      conn.link.send({ t: 'closed', code, reason });
      conn.link.close(1000, code);
    }
  }

  /** Drops the session's state here (timers included); its client connection is handled by the caller. */
  private forget(session: OwnedSession): void {
    if (session.ended) return;
    session.ended = true;
    if (this.sessions.get(session.sid) === session) this.sessions.delete(session.sid);
    const clock = this.ports.clock;
    for (const timer of [session.sealTimer, session.clientAckTimer, session.resendTimer, session.gapTimer, session.actorAckTimer]) clock.clearTimeout(timer);
    session.sealTimer = session.clientAckTimer = session.resendTimer = session.gapTimer = session.actorAckTimer = undefined;
    session.upBuffer.clear();
    session.reorder.clear();
    this.wakeDrain();
  }

  private selfRef(): NodeRef {
    const self = this.ports.self;
    return { nodeId: self.nodeId, lifecycleGeneration: self.lifecycleGeneration };
  }

  // ── §4, §14, §15 ────────────────────────────────────────────────────────────────

  /** §4 first row: bindings in progress end before the inventory is fixed. */
  async settle(): Promise<void> {
    while (this.admissions.size > 0) await Promise.all([...this.admissions]);
  }

  private sendMove(session: OwnedSession): void {
    const conn = session.conn;
    if (!conn || conn.done || session.moving) return;
    session.moving = true;
    // The client's frames acknowledged so far are the Actor's; the rest it sends again where it resumes.
    conn.link.send({ t: 'move', endpoints: this.ports.otherEndpoints() });
  }

  /**
   * §14 step 3, §15 Draining: no new session; pending open/resume replies end; every client is told to move and
   * resumes elsewhere. Resolves once every client left this endpoint (or at the deadline).
   */
  async drain(signal: AbortSignal): Promise<void> {
    this.draining = true;
    for (const session of this.sessions.values()) if (session.phase === 'open') this.sendMove(session);
    // A connection that holds no session yet gets the same answer a new one would.
    for (const conn of [...this.connections]) if (!conn.session) this.refuse(conn, 'admission', this.admissionRefusal()!, this.ports.otherEndpoints());
    const done = () => this.admissions.size === 0 && this.allMovedLeft();
    while (!done() && !signal.aborted && !this.destroyed) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal.removeEventListener('abort', wake);
          resolve();
        };
        this.drainWaiters.push(wake);
        signal.addEventListener('abort', wake, { once: true });
      });
    }
  }

  /** Every client told to move has closed its connection (it resumes elsewhere). */
  private allMovedLeft(): boolean {
    for (const c of this.connections) if (!c.done) return false;
    return true;
  }

  private wakeDrain(): void {
    for (const w of this.drainWaiters.splice(0)) w();
  }

  /**
   * §14 step 5: every session still here is detached (its Actor keeps the binding for the resume window) and its
   * connection closed; no timer of this owner outlives it, and no late reply touches a session (destroyed).
   */
  close(): void {
    for (const session of [...this.sessions.values()]) {
      const conn = session.conn;
      if (session.phase === 'open') this.post(session, { k: 'detach', sid: session.sid, attach: session.attach, ms: this.ports.resumeWindowMs });
      this.forget(session);
      if (conn && !conn.done) {
        conn.done = true;
        conn.link.send({ t: 'move', endpoints: this.ports.otherEndpoints() });
        conn.link.close(1001, 'the session endpoint is closing');
      }
    }
    for (const conn of this.connections) {
      if (conn.done) continue;
      conn.done = true;
      conn.link.close(1001, 'the session endpoint is closing');
    }
    this.destroy();
  }

  /** Past the deadline: drop everything at once (the listener terminates the sockets). */
  forceClose(): void {
    for (const session of [...this.sessions.values()]) this.forget(session);
    for (const conn of this.connections) conn.done = true;
    this.destroy();
  }

  private destroy(): void {
    this.destroyed = true;
    this.wakeDrain();
  }
}

function codeOf(error: unknown): SessionCloseCode {
  if (error instanceof RequestError) {
    if (error.kind === 'not-found' || error.kind === 'stale-generation') return error.kind;
    if (error.kind === 'handler') return 'refused';
  }
  return 'unavailable';
}
