/**
 * One peer connection on one mesh: the Hello/Admit/Ready handshake (§5 order 5), the per-connection write queue
 * with per-tick coalescing, chunked payloads and their intake acknowledgements. Transport-agnostic: it speaks
 * frames (frames.ts) over a Link (link.ts). Decisions that need the whole peer table (stale generation, duplicate,
 * replacement) are asked of the owner (mesh-node.ts).
 *
 * Handshake (client = the dialing side):
 *   server → challenge {mesh, server identity, nonce}
 *   client → hello {mesh, client identity, client nonce, proof = HMAC(key, challenge + identity)}
 *   server → admit {proof' = HMAC(key, client nonce + server identity)}     (both sides now: Admitted)
 *   client → ready;  server → ready                                         (each side: Ready on the other's Ready)
 * Runtime messages, chunks and acks are accepted only once Ready. §14 step 1: a sealed node sends no Hello and no
 * Admit; on an admitted connection it sends only `draining`.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { CHUNK_WRITE_WINDOW, CloseCode } from './constants';
import { splitPayload, Reassembler, type PayloadResult } from './chunks';
import { abortError, FrameError, PayloadRejectedError, PeerUnavailableError } from './errors';
import { batchFrameBytes, decodeFrame, encodeBatch, encodeChunk, encodeControl, FrameKind, type ControlFrame } from './frames';
import type { Link, LinkHandlers } from './link';
import type { MeshConfig, RuntimeMessage } from './types';
import type { NodeRef } from '../vocabulary';

/** Queued message bytes at which a batch leaves before the turn ends (see queueMessage). */
const EARLY_FLUSH_BYTES = 64 * 1024;

export interface PeerIdentity extends NodeRef {
  readonly applicationVersion: number;
}

/** What a connection asks of its mesh node. Returning a close code refuses the peer. */
export interface ConnectionOwner {
  readonly mesh: MeshConfig;
  readonly self: PeerIdentity;
  readonly maxFrameBytes: number;
  readonly chunkBytes: number;
  readonly handshakeTimeoutMs: number;
  isSealed(): boolean;
  /** Client side, before sending Hello; server side, before sending Admit. */
  judge(conn: Connection, peer: PeerIdentity): CloseCode | undefined;
  admitted(conn: Connection): void;
  ready(conn: Connection): void;
  draining(conn: Connection): void;
  /** The peer announced it is about to close (`quiesce`): nothing more is sent to it. */
  leaving(conn: Connection): void;
  messages(conn: Connection, messages: RuntimeMessage[]): void;
  payload(conn: Connection, payloadId: string, result: PayloadResult): void;
  protocolError(conn: Connection, reason: string): void;
  refused(conn: Connection): void;
  closed(conn: Connection, code: number, reason: string): void;
}

type State = 'opening' | 'awaiting-challenge' | 'awaiting-hello' | 'awaiting-admit' | 'awaiting-ready' | 'ready' | 'closing' | 'closed';

interface OutgoingPayload {
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
}

const NONCE_BYTES = 32;

function proofText(parts: readonly (string | number)[]): string {
  return JSON.stringify(parts);
}

function hmac(key: string | Buffer, text: string): string {
  return createHmac('sha256', key).update(text).digest('hex');
}

function proofMatches(key: string | Buffer, text: string, given: string | undefined): boolean {
  if (given === undefined) return false;
  const expected = Buffer.from(hmac(key, text), 'hex');
  const actual = Buffer.from(given, 'hex');
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

export class Connection {
  private state: State;
  private link!: Link;
  /** Peer identity, known from the challenge (client) or Hello (server). */
  peer: PeerIdentity | undefined;
  /** Set by the owner: how the connection came about (descriptor discovery or manual registration). */
  source: 'descriptor' | 'manual' = 'descriptor';
  /** Close code received or sent last; read by the owner in `closed`. */
  closeCode = 0;
  /** true once the peer sent `draining` (§14 step 1). */
  peerDraining = false;
  /** true once the peer sent `quiesce`: it is about to close, so runtime messages go elsewhere. */
  peerLeaving = false;
  /** Waiting for the peer's `quiesced` answer to our `quiesce`. */
  private quiesceWaiters: (() => void)[] | undefined;
  private sentDraining = false;
  private myNonce = '';
  private theirNonce = '';
  private handshakeTimer: NodeJS.Timeout | undefined;
  private flushScheduled: NodeJS.Immediate | undefined;
  private pending: Uint8Array[] = [];
  /** The runtime messages behind `pending`, handed back unwritten if the link closes first. */
  private pendingMessages: RuntimeMessage[] = [];
  private pendingBytes = 0;
  private inflightWrites = 0;
  private writeWaiters: (() => void)[] = [];
  private readonly outgoing = new Map<string, OutgoingPayload>();
  private readonly reassembler = new Reassembler();
  private cancelError: (() => Error) | undefined;
  private violated = false;
  private closeWaiters: (() => void)[] = [];

  readonly outbound: boolean;

  private constructor(
    private readonly owner: ConnectionOwner,
    outbound: boolean,
  ) {
    this.outbound = outbound;
    this.state = outbound ? 'opening' : 'awaiting-hello';
  }

  /** Inbound: wraps an accepted link and sends the challenge (or refuses at once when sealed, §14 step 1). */
  static accept(owner: ConnectionOwner, link: Link): { conn: Connection; handlers: LinkHandlers } {
    const conn = new Connection(owner, false);
    conn.link = link;
    const handlers = conn.handlers();
    if (owner.isSealed()) {
      conn.refuse(CloseCode.Sealed, 'sealed: no new peer admission');
    } else {
      conn.startHandshakeTimer();
      conn.myNonce = randomBytes(NONCE_BYTES).toString('hex');
      const s = owner.self;
      conn.sendControl({ k: 'challenge', mesh: owner.mesh.name, nodeId: s.nodeId, gen: s.lifecycleGeneration, app: s.applicationVersion, nonce: conn.myNonce });
    }
    return { conn, handlers };
  }

  /** Outbound: `dial` receives the handlers and returns the link. */
  static dial(owner: ConnectionOwner, dial: (handlers: LinkHandlers) => Link): Connection {
    const conn = new Connection(owner, true);
    conn.startHandshakeTimer();
    conn.link = dial(conn.handlers());
    return conn;
  }

  /** Runtime traffic could flow at some point (so its loss may have cost messages). */
  canExchangeBeforeClose = false;
  /** Runtime messages still queued (never written) when the link closed: certainly not read by the peer. */
  unwrittenAtClose: RuntimeMessage[] = [];

  get isReady(): boolean {
    return this.state === 'ready';
  }
  /**
   * Runtime traffic may flow: Ready, or admitted with a Draining side (a sealed node never completes Ready, yet
   * already-accepted work still needs its messages and payloads, §14 step 3).
   */
  get canExchange(): boolean {
    return this.state === 'ready' || (this.state === 'awaiting-ready' && (this.peerDraining || this.sentDraining));
  }
  /** Admit sent (server) or received (client): the peer belongs in the peer table. */
  get isAdmitted(): boolean {
    return this.state === 'awaiting-ready' || this.state === 'ready';
  }
  get isOpen(): boolean {
    return this.state !== 'closing' && this.state !== 'closed';
  }
  get payloadsInFlight(): number {
    return this.outgoing.size;
  }

  private handlers(): LinkHandlers {
    return {
      onOpen: () => {
        if (this.state === 'opening') this.state = 'awaiting-challenge';
      },
      onFrame: (frame) => this.onFrame(frame),
      onViolation: (reason) => this.violation(reason),
      onClose: (code, reason) => this.onLinkClose(code, reason),
    };
  }

  private startHandshakeTimer(): void {
    this.handshakeTimer = setTimeout(() => {
      this.handshakeTimer = undefined;
      if (this.state !== 'ready' && this.isOpen) this.close(CloseCode.HandshakeTimeout, 'handshake timeout');
    }, this.owner.handshakeTimeoutMs);
  }

  private clearHandshakeTimer(): void {
    if (this.handshakeTimer) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = undefined;
  }

  // ---- receiving -------------------------------------------------------------------------------------------

  private onFrame(buf: Buffer): void {
    if (this.state === 'closed') return; // nothing is delivered after the link reported closed
    // Runtime messages the peer sent before it saw our close still count (a disconnect must not swallow them);
    // everything else racing our own close is dropped. The owner drops all of it once the transport closes.
    if (this.state === 'closing' && (this.violated || !this.canExchangeBeforeClose || buf[2] !== FrameKind.Batch)) return;
    let frame;
    try {
      frame = decodeFrame(buf, this.owner.maxFrameBytes);
    } catch (err) {
      this.violation((err as Error).message);
      return;
    }
    try {
      if (frame.kind === 'control') this.onControl(frame.frame);
      else if (frame.kind === 'batch' && this.state === 'closing') this.owner.messages(this, frame.messages);
      else if (!this.canExchange) throw new FrameError(`${frame.kind} frame before Ready`);
      else if (frame.kind === 'batch') this.owner.messages(this, frame.messages);
      else {
        const result = this.reassembler.accept(frame.chunk);
        if (result) this.payloadDone(frame.chunk.id, result);
      }
    } catch (err) {
      if (err instanceof FrameError) this.violation(err.message);
      else throw err; // a handler's own exception is the application's, not a protocol error
    }
  }

  private payloadDone(id: string, result: PayloadResult): void {
    this.owner.payload(this, id, result);
    // Intake acknowledgement: releases the sender's budget (§7). Sent after the handler saw the bytes.
    if (this.isOpen) this.sendControl(result.ok ? { k: 'ack', id, ok: true } : { k: 'ack', id, ok: false, error: result.error.message.slice(0, 1024) });
  }

  private onControl(f: ControlFrame): void {
    const key = this.owner.mesh.sharedKey;
    switch (f.k) {
      case 'challenge': {
        if (this.state !== 'awaiting-challenge') throw new FrameError(`challenge in state ${this.state}`);
        if (f.mesh !== this.owner.mesh.name) return this.refuse(CloseCode.WrongMesh, `mesh ${f.mesh} is not ${this.owner.mesh.name}`);
        if (this.owner.isSealed()) return this.refuse(CloseCode.Sealed, 'sealed: no Hello is sent');
        this.peer = { nodeId: f.nodeId, lifecycleGeneration: f.gen, applicationVersion: f.app };
        const verdict = this.owner.judge(this, this.peer);
        if (verdict !== undefined) return this.refuse(verdict, 'refused before Hello');
        this.theirNonce = f.nonce;
        this.myNonce = randomBytes(NONCE_BYTES).toString('hex');
        const s = this.owner.self;
        const proof = key === undefined ? undefined : hmac(key, this.helloText(s, f.nonce, this.myNonce));
        this.state = 'awaiting-admit';
        this.sendControl({
          k: 'hello',
          mesh: this.owner.mesh.name,
          nodeId: s.nodeId,
          gen: s.lifecycleGeneration,
          app: s.applicationVersion,
          nonce: this.myNonce,
          ...(proof === undefined ? {} : { proof }),
        });
        return;
      }
      case 'hello': {
        if (this.state !== 'awaiting-hello') throw new FrameError(`hello in state ${this.state}`);
        const peer: PeerIdentity = { nodeId: f.nodeId, lifecycleGeneration: f.gen, applicationVersion: f.app };
        this.peer = peer;
        if (f.mesh !== this.owner.mesh.name) return this.refuse(CloseCode.WrongMesh, `mesh ${f.mesh} is not ${this.owner.mesh.name}`);
        // §4/DESIGN.md: no proof, no Admit. Compared in constant time.
        if (key !== undefined && !proofMatches(key, this.helloText(peer, this.myNonce, f.nonce), f.proof)) {
          return this.refuse(CloseCode.Unauthorized, 'shared key proof missing or wrong');
        }
        if (this.owner.isSealed()) return this.refuse(CloseCode.Sealed, 'sealed: no Hello is answered with Admit');
        const verdict = this.owner.judge(this, peer);
        if (verdict !== undefined) return this.refuse(verdict, 'refused');
        const s = this.owner.self;
        const proof = key === undefined ? undefined : hmac(key, this.admitText(s, f.nonce, this.myNonce));
        this.state = 'awaiting-ready';
        this.sendControl({ k: 'admit', ...(proof === undefined ? {} : { proof }) });
        this.owner.admitted(this);
        return;
      }
      case 'admit': {
        if (this.state !== 'awaiting-admit') throw new FrameError(`admit in state ${this.state}`);
        // Mutual: the server proves the key too, so a node never admits an impostor listener either.
        if (key !== undefined && !proofMatches(key, this.admitText(this.peer!, this.myNonce, this.theirNonce), f.proof)) {
          return this.refuse(CloseCode.Unauthorized, 'server proof missing or wrong');
        }
        if (this.owner.isSealed()) return this.refuse(CloseCode.Sealed, 'sealed during handshake');
        this.state = 'awaiting-ready';
        this.owner.admitted(this);
        if (this.isOpen) this.sendControl({ k: 'ready' });
        return;
      }
      case 'ready': {
        if (this.state !== 'awaiting-ready') throw new FrameError(`ready in state ${this.state}`);
        this.state = 'ready';
        this.canExchangeBeforeClose = true;
        this.clearHandshakeTimer();
        // A sealed node sends admitted peers only the Draining update (§14 step 1), so no Ready back.
        if (!this.outbound && !this.sentDraining) this.sendControl({ k: 'ready' });
        this.owner.ready(this);
        return;
      }
      case 'draining': {
        if (!this.isAdmitted) throw new FrameError(`draining in state ${this.state}`);
        if (this.peerDraining) return;
        this.peerDraining = true;
        if (this.canExchange) this.canExchangeBeforeClose = true;
        this.clearHandshakeTimer(); // a draining peer never sends Ready; the connection stays for accepted work
        this.owner.draining(this);
        return;
      }
      case 'quiesce': {
        if (!this.canExchange) throw new FrameError('quiesce before Ready');
        if (this.peerLeaving) return;
        // The runtime may still queue last messages here (order markers), then re-routes everything else …
        this.owner.leaving(this);
        this.peerLeaving = true;
        if (this.isOpen) this.sendControl({ k: 'quiesced' }); // … and this answer follows our last queued message
        return;
      }
      case 'quiesced': {
        if (!this.quiesceWaiters) throw new FrameError('quiesced without quiesce');
        for (const w of this.quiesceWaiters.splice(0)) w();
        return;
      }
      case 'ack': {
        if (!this.canExchange) throw new FrameError('ack before Ready');
        const out = this.outgoing.get(f.id);
        if (!out) return; // the payload was aborted locally; its late ack is harmless
        this.outgoing.delete(f.id);
        if (f.ok) out.resolve();
        else out.reject(new PayloadRejectedError(`target refused payload ${f.id}: ${f.error ?? 'unknown'}`));
        return;
      }
      case 'cancel': {
        if (!this.canExchange) throw new FrameError('cancel before Ready');
        if (this.reassembler.cancel(f.id)) this.owner.payload(this, f.id, { ok: false, error: new PayloadRejectedError(`payload ${f.id} cancelled by its sender`) });
        return;
      }
    }
  }

  private helloText(client: PeerIdentity, challengeNonce: string, clientNonce: string): string {
    return proofText(['zlink-hello', this.owner.mesh.name, challengeNonce, clientNonce, client.nodeId, client.lifecycleGeneration, client.applicationVersion]);
  }

  private admitText(server: PeerIdentity, clientNonce: string, challengeNonce: string): string {
    return proofText(['zlink-admit', this.owner.mesh.name, clientNonce, challengeNonce, server.nodeId, server.lifecycleGeneration, server.applicationVersion]);
  }

  private refuse(code: CloseCode, reason: string): void {
    this.closeCode = code;
    this.owner.refused(this);
    this.close(code, reason);
  }

  private violation(reason: string): void {
    if (this.violated || this.state === 'closed') return;
    this.violated = true;
    this.owner.protocolError(this, reason);
    this.close(CloseCode.ProtocolError, `protocol error: ${reason}`.slice(0, 120));
  }

  // ---- sending ---------------------------------------------------------------------------------------------

  private sendControl(frame: ControlFrame): void {
    this.flush(); // keeps control frames in order with messages queued before them
    this.link.send(encodeControl(frame));
  }

  /**
   * Queues one encoded runtime message (frames.encodeMessage); all messages of a tick leave as one batch frame (DESIGN.md: not one
   * syscall per message). A batch that would exceed maxFrameBytes is flushed early, and so is one that reached
   * EARLY_FLUSH_BYTES: a long turn (thousands of cutovers, §13) then lets its first messages leave while it runs,
   * instead of holding them all until it ends.
   */
  queueMessage(part: Uint8Array, message: RuntimeMessage): void {
    const bytes = part.length;
    if (this.pending.length > 0 && batchFrameBytes(this.pendingBytes + bytes, this.pending.length + 1) > this.owner.maxFrameBytes) this.flush();
    else if (this.pendingBytes >= EARLY_FLUSH_BYTES) this.flush();
    this.pending.push(part);
    this.pendingMessages.push(message);
    this.pendingBytes += bytes;
    if (!this.flushScheduled) this.flushScheduled = setImmediate(() => {
      this.flushScheduled = undefined;
      this.flush();
    });
  }

  private flush(): void {
    if (this.flushScheduled) {
      clearImmediate(this.flushScheduled);
      this.flushScheduled = undefined;
    }
    if (this.pending.length === 0) return;
    // The link is closing: these were never written; they stay queued and are handed back at the close (item 8).
    if (!this.link.writable) return;
    const frame = encodeBatch(this.pending);
    this.pending = [];
    this.pendingMessages = [];
    this.pendingBytes = 0;
    if (this.isOpen) this.link.send(frame);
  }

  /** §14 step 1: the one update a sealed node still sends to an admitted peer. Unadmitted connections close. */
  seal(): void {
    if (!this.isOpen) return;
    if (!this.isAdmitted) return this.close(CloseCode.Sealed, 'sealed: no new peer admission');
    if (this.sentDraining) return;
    this.sentDraining = true;
    if (this.canExchange) this.canExchangeBeforeClose = true;
    this.sendControl({ k: 'draining' });
  }

  /**
   * §14 cleanup step 4: asks the peer to stop sending and resolves once it answered (everything it sent before
   * the answer has been read and handed to the owner) or the connection closed. Bounded by the caller.
   */
  quiesce(): Promise<void> {
    if (!this.isOpen || !this.canExchange) return Promise.resolve();
    const first = !this.quiesceWaiters;
    this.quiesceWaiters ??= [];
    const done = new Promise<void>((resolve) => this.quiesceWaiters!.push(resolve));
    if (first) this.sendControl({ k: 'quiesce' });
    return done;
  }

  /**
   * Chunked transfer (§7). Chunks go through the same ordered write path as messages; at most CHUNK_WRITE_WINDOW
   * chunks wait in the socket at a time, so a large payload does not buffer itself whole in the socket layer.
   * Resolves on the target's intake ack.
   */
  async sendPayload(id: string, bytes: Buffer, signal?: AbortSignal): Promise<void> {
    if (!this.canExchange) throw new PeerUnavailableError(`no Ready connection to ${this.describePeer()} on mesh ${this.owner.mesh.name}`);
    if (this.outgoing.has(id)) throw new TypeError(`payload id ${id} is already in flight to ${this.describePeer()}`);
    if (signal?.aborted) throw abortError(signal, 'sendPayload');
    const split = splitPayload(id, bytes, this.owner.chunkBytes);
    let rejectAck!: (err: Error) => void;
    const acked = new Promise<void>((resolve, reject) => {
      rejectAck = reject;
      this.outgoing.set(id, { resolve, reject });
    });
    acked.catch(() => undefined); // observed below; avoids an unhandled rejection while chunks are still written
    let sent = 0;
    const onAbort = (): void => {
      if (!this.outgoing.delete(id)) return;
      if (sent > 0 && this.isOpen && this.canExchange) this.sendControl({ k: 'cancel', id });
      rejectAck(abortError(signal, 'sendPayload'));
      this.wakeWriters();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for (let i = 0; i < split.count; i++) {
        await this.writable();
        if (!this.outgoing.has(id)) break; // aborted, or the connection was lost / cancelled (acked rejects)
        this.flush(); // messages queued before this chunk leave before it
        this.inflightWrites++;
        this.link.send(encodeChunk(split.chunk(i)), () => {
          this.inflightWrites--;
          this.wakeWriters();
        });
        sent++;
      }
      await acked;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  private writable(): Promise<void> {
    if (this.inflightWrites < CHUNK_WRITE_WINDOW || !this.isOpen) return Promise.resolve();
    return new Promise((resolve) => this.writeWaiters.push(resolve));
  }

  private wakeWriters(): void {
    while (this.writeWaiters.length > 0 && (this.inflightWrites < CHUNK_WRITE_WINDOW || !this.isOpen)) this.writeWaiters.shift()!();
  }

  private describePeer(): string {
    return this.peer ? `${this.peer.nodeId}#${this.peer.lifecycleGeneration}` : 'an unidentified peer';
  }

  // ---- closing ---------------------------------------------------------------------------------------------

  /**
   * Graceful close: queued messages are flushed first, then the link closes. Pending payload sends reject with
   * `cancelError` (set by the transport's close) or a PeerUnavailableError once the link reports closed.
   */
  close(code: number, reason: string, cancelError?: () => Error): void {
    if (cancelError) this.cancelError ??= cancelError;
    if (!this.isOpen) return;
    this.flush();
    this.state = 'closing';
    this.closeCode ||= code;
    this.clearHandshakeTimer();
    if (cancelError) this.failOutgoing();
    this.link.close(code, reason);
  }

  /** Bounded teardown: the link did not finish closing within the grace period. */
  destroy(): void {
    if (this.state !== 'closed') this.link.destroy();
  }

  /** Resolves once the link reported closed (so no later callback touches it). */
  whenClosed(): Promise<void> {
    if (this.state === 'closed') return Promise.resolve();
    return new Promise((resolve) => this.closeWaiters.push(resolve));
  }

  private failOutgoing(): void {
    const err = this.cancelError ?? (() => new PeerUnavailableError(`connection to ${this.describePeer()} on mesh ${this.owner.mesh.name} was lost`));
    const outs = [...this.outgoing.values()];
    this.outgoing.clear();
    for (const o of outs) o.reject(err());
    this.wakeWriters();
  }

  private onLinkClose(code: number, reason: string): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.closeCode ||= code;
    this.clearHandshakeTimer();
    if (this.flushScheduled) clearImmediate(this.flushScheduled);
    this.flushScheduled = undefined;
    this.unwrittenAtClose = this.pendingMessages;
    this.pending = [];
    this.pendingMessages = [];
    this.failOutgoing();
    // Half-received payloads are truncated by the loss (onPayload ok:false), unless the transport is closing.
    for (const id of this.reassembler.abandonAll()) {
      this.owner.payload(this, id, { ok: false, error: new PayloadRejectedError(`payload ${id} truncated: connection closed (${code})`) });
    }
    this.owner.closed(this, this.closeCode, reason);
    for (const w of this.quiesceWaiters?.splice(0) ?? []) w();
    for (const w of this.closeWaiters.splice(0)) w();
  }
}
