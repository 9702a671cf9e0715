/**
 * `zlink/client`: a STREAM session from outside the cluster, in Node or in a browser (docs/concepts.md "STREAM
 * sessions").
 *
 * ```ts
 * import { connectSession } from 'zlink/client';
 * const session = await connectSession({ urls: ['ws://10.0.0.5:7200/', 'ws://10.0.0.6:7200/'], actor: 'room-7' });
 * session.on('frame', (frame) => render(frame));     // or: for await (const frame of session) …
 * session.send({ say: 'hi' });
 * await session.close();
 * ```
 *
 * The client connects to any host's session endpoint (that host is the session owner) and binds a session to the
 * Actor `actor`, wherever it lives. Frames are application values, copied with the runtime's one codec (msgpackr:
 * Date, Map, Set, BigInt, typed arrays … round-trip; a value it refuses throws ArgumentError at `send`). Both
 * directions are numbered; each side acknowledges what it delivered and sends the rest again after a reconnect, so
 * every frame arrives once and in order — through the Actor's moves (the connection is kept) and through the
 * session owner's shutdown (the client is told to move and resumes at another host's endpoint on its own).
 *
 * Browser-safe: it uses the global `WebSocket` when there is one and loads the `ws` package only when there is not.
 */
import { decodeValue, encodeValue } from '../runtime/codec';
import { ArgumentError } from '../vocabulary';
import {
  AUTH_QUERY_PARAMETER,
  decodeServerMessage,
  encodeWire,
  SESSION_WIRE_VERSION,
  type ClientMessage,
  type ServerMessage,
  type SessionCloseCode,
} from '../runtime/components/sessions/wire';

export { SESSION_CLOSE_CODES, type SessionCloseCode } from '../runtime/components/sessions/wire';
export { ArgumentError } from '../vocabulary';

/** The part of the WebSocket API the client uses (the browser's, or the `ws` package's). */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code?: number; reason?: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}
export type WebSocketConstructor = new (url: string) => WebSocketLike;

export interface SessionOptions {
  /** One session endpoint (`host.sessionEndpoint`, a descriptor's `components.sessions.endpoint`). */
  url?: string;
  /** Several endpoints, tried in order; resumes also go to these. Give `url` or `urls`. */
  urls?: readonly string[];
  /** Id of the Actor to bind the session to. */
  actor: string;
  /** Credentials for the endpoint's `authenticate`: sent as the `auth` query parameter of each connection. */
  auth?: string;
  /** Follow the endpoints a refusing or draining host names (§15: they are other Serving hosts). @default true */
  followRedirects?: boolean;
  /** How long connectSession may take before it rejects (every endpoint tried, redirects followed). @default 10000 */
  openTimeoutMs?: number;
  /** How long a lost or moved session keeps trying to resume before it closes with code 'unavailable'. @default 30000 */
  resumeTimeoutMs?: number;
  /** Frames sent but not yet acknowledged by the Actor; `send` throws past it (code 'backpressure'). @default 10000 */
  maxBufferedFrames?: number;
  /** `close()` waits this long for the frames sent before it to be acknowledged. @default 5000 */
  closeTimeoutMs?: number;
  /** A WebSocket implementation. @default the global WebSocket, else the `ws` package */
  WebSocket?: WebSocketConstructor;
  /** Aborts connectSession (not an open session: use close()). */
  signal?: AbortSignal;
}

export type SessionState = 'open' | 'resuming' | 'closed';

export interface SessionCloseInfo {
  readonly code: SessionCloseCode;
  readonly reason: string;
}

/** Why a session could not be opened, a send was refused, or the session ended. */
export class SessionError extends Error {
  override readonly name = 'SessionError';
  constructor(
    readonly code: SessionCloseCode | 'backpressure' | 'aborted',
    message: string,
  ) {
    super(message);
  }
}

export interface Session extends AsyncIterable<unknown> {
  /** Session id (kept across reconnects). */
  readonly id: string;
  readonly actor: string;
  readonly state: SessionState;
  /** The endpoint the session is connected to now (it changes when the session resumes elsewhere). */
  readonly endpoint: string;
  /** Physical connections opened for this session so far (1 = it never reconnected). */
  readonly connections: number;
  /** Resolves once the session ended (never rejects). */
  readonly closed: Promise<SessionCloseInfo>;
  /** One frame to the Actor (encoded now; delivered once and in order, also across reconnects). */
  send(frame: unknown): void;
  on(event: 'frame', listener: (frame: unknown) => void): () => void;
  on(event: 'state', listener: (state: SessionState) => void): () => void;
  on(event: 'close', listener: (info: SessionCloseInfo) => void): () => void;
  /** Frames from the Actor, in order; the iteration ends when the session closes. */
  frames(): AsyncIterableIterator<unknown>;
  /** Closes after the frames sent so far were acknowledged (bounded by closeTimeoutMs). */
  close(): Promise<void>;
}

const DEFAULTS = { openTimeoutMs: 10_000, resumeTimeoutMs: 30_000, maxBufferedFrames: 10_000, closeTimeoutMs: 5000 } as const;
/** Downstream acknowledgements are sent after this many frames, or this long after the first unacknowledged one. */
const ACK_EVERY_FRAMES = 64;
const ACK_DELAY_MS = 20;
const RETRY_MIN_MS = 50;
const RETRY_MAX_MS = 2000;
/** Close codes the session owner uses that say "do not come back here". */
const FINAL_CODES: ReadonlySet<SessionCloseCode> = new Set(['closed', 'refused', 'not-found', 'stale-generation', 'expired', 'protocol']);

/** Opens a session bound to `options.actor` (docs/concepts.md "STREAM sessions"). */
export async function connectSession(options: SessionOptions): Promise<Session> {
  const o = parseOptions(options);
  const session = new ClientSession(o);
  await session.open();
  return session;
}

interface Resolved {
  urls: string[];
  actor: string;
  auth: string | undefined;
  followRedirects: boolean;
  openTimeoutMs: number;
  resumeTimeoutMs: number;
  maxBufferedFrames: number;
  closeTimeoutMs: number;
  WebSocket: WebSocketConstructor;
  signal: AbortSignal | undefined;
}

function parseOptions(options: SessionOptions): Resolved {
  if (typeof options !== 'object' || options === null) throw new ArgumentError('options', 'must be an object');
  const known = ['url', 'urls', 'actor', 'auth', 'followRedirects', 'openTimeoutMs', 'resumeTimeoutMs', 'maxBufferedFrames', 'closeTimeoutMs', 'WebSocket', 'signal'];
  for (const key of Object.keys(options)) if (!known.includes(key)) throw new ArgumentError(key, `is not a connectSession option (known: ${known.join(', ')})`);
  const urls = [...(options.url !== undefined ? [options.url] : []), ...(options.urls ?? [])];
  if (options.urls !== undefined && !Array.isArray(options.urls)) throw new ArgumentError('urls', 'must be an array of ws:// or wss:// URLs');
  if (urls.length === 0) throw new ArgumentError('url', 'give url or urls: the session endpoint(s) to connect to');
  urls.forEach((u, i) => {
    if (typeof u !== 'string' || !/^wss?:\/\/./i.test(u)) throw new ArgumentError(options.url !== undefined && i === 0 ? 'url' : `urls[${i}]`, `must be a ws:// or wss:// URL; got ${String(u)}`);
  });
  if (typeof options.actor !== 'string' || options.actor.length === 0 || options.actor.length > 256) throw new ArgumentError('actor', 'must be an Actor id (a non-empty string, at most 256 characters)');
  if (options.auth !== undefined && typeof options.auth !== 'string') throw new ArgumentError('auth', 'must be a string');
  if (options.followRedirects !== undefined && typeof options.followRedirects !== 'boolean') throw new ArgumentError('followRedirects', 'must be a boolean');
  const ms = (field: 'openTimeoutMs' | 'resumeTimeoutMs' | 'closeTimeoutMs' | 'maxBufferedFrames'): number => {
    const v = options[field];
    if (v === undefined) return DEFAULTS[field];
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new ArgumentError(field, 'must be a number greater than 0');
    return v;
  };
  if (options.signal !== undefined && (typeof options.signal !== 'object' || typeof options.signal.addEventListener !== 'function'))
    throw new ArgumentError('signal', 'must be an AbortSignal');
  if (options.WebSocket !== undefined && typeof options.WebSocket !== 'function') throw new ArgumentError('WebSocket', 'must be a WebSocket constructor');
  return {
    urls: [...new Set(urls)],
    actor: options.actor,
    auth: options.auth,
    followRedirects: options.followRedirects ?? true,
    openTimeoutMs: ms('openTimeoutMs'),
    resumeTimeoutMs: ms('resumeTimeoutMs'),
    maxBufferedFrames: ms('maxBufferedFrames'),
    closeTimeoutMs: ms('closeTimeoutMs'),
    WebSocket: options.WebSocket ?? defaultWebSocket(),
    signal: options.signal,
  };
}

function defaultWebSocket(): WebSocketConstructor {
  const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (global) return global;
  // Node without a global WebSocket (Node < 22): the `ws` package, loaded only here (never in a browser).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('ws') as WebSocketConstructor;
}

/** One physical connection attempt; the session sees its messages and its end once. */
class Attempt {
  ws: WebSocketLike;
  ended = false;
  opened = false;
  /** The server sent this connection away (it is not tried first for the resume that follows). */
  moved = false;
  /** …with a `move` (its host drains): the resume starts at once, without a backoff. */
  toldToMove = false;
  constructor(
    readonly url: string,
    ctor: WebSocketConstructor,
    auth: string | undefined,
    private readonly onMessage: (a: Attempt, m: ServerMessage) => void,
    private readonly onEnd: (a: Attempt, why: { code?: number; error?: string }) => void,
  ) {
    let target = url;
    if (auth !== undefined) target += `${url.includes('?') ? '&' : '?'}${AUTH_QUERY_PARAMETER}=${encodeURIComponent(auth)}`;
    this.ws = new ctor(target);
    this.ws.binaryType = 'arraybuffer';
    let error: string | undefined;
    this.ws.onopen = () => {
      this.opened = true;
    };
    this.ws.onmessage = (event) => {
      if (this.ended) return;
      const data = event.data;
      const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : data instanceof Uint8Array ? data : undefined;
      const message = bytes && decodeServerMessage(bytes);
      if (!message) return this.end({ error: 'the endpoint sent a message that is not part of the session wire' });
      this.onMessage(this, message);
    };
    this.ws.onerror = (event) => {
      error = (event as { message?: string })?.message ?? (event as { error?: Error })?.error?.message ?? 'connection error';
    };
    this.ws.onclose = (event) => this.end({ code: event?.code, error });
  }

  send(message: ClientMessage): boolean {
    if (this.ended || this.ws.readyState !== 1) return false;
    this.ws.send(encodeWire(message));
    return true;
  }

  whenOpen(): Promise<boolean> {
    if (this.opened) return Promise.resolve(true);
    return new Promise((resolve) => {
      const previousOpen = this.ws.onopen;
      this.ws.onopen = (e) => {
        previousOpen?.(e);
        resolve(true);
      };
      this.waitEnd = () => resolve(false);
    });
  }
  private waitEnd: (() => void) | undefined;

  /** Ends this attempt (once): closes the socket and reports to the session. */
  end(why: { code?: number; error?: string } = {}): void {
    if (this.ended) return;
    this.ended = true;
    this.waitEnd?.();
    try {
      if (this.ws.readyState === 0 || this.ws.readyState === 1) this.ws.close(1000, 'client');
    } catch {
      // closing a socket that is already going is not an error for the session
    }
    this.onEnd(this, why);
  }
}

type Listener = (value: never) => void;

class ClientSession implements Session {
  id = '';
  private gen = 0;
  private attach = 1;
  state: SessionState = 'resuming';
  endpoint = '';
  connections = 0;
  private attempt: Attempt | undefined;
  // upstream
  private upSeq = 0;
  private upAcked = 0;
  private readonly unacked: { s: number; d: Uint8Array }[] = [];
  // downstream
  private downDelivered = 0;
  private downAckSent = 0;
  private ackTimer: ReturnType<typeof setTimeout> | undefined;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private closeInfo: SessionCloseInfo | undefined;
  private readonly listeners = { frame: new Set<Listener>(), state: new Set<Listener>(), close: new Set<Listener>() };
  /** Frames that arrived while nobody consumed them (no 'frame' listener, no iterator): kept for the first consumer. */
  private unconsumed: unknown[] | undefined = [];
  private iterators = new Set<{ queue: unknown[]; wake: (() => void) | undefined }>();
  private waiters: (() => void)[] = [];
  private resolveClosed!: (info: SessionCloseInfo) => void;
  readonly closed: Promise<SessionCloseInfo>;
  private closing = false;
  /** Endpoints to try first on the next resume (a move hint). */
  private hints: string[] = [];

  constructor(private readonly o: Resolved) {
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
  }

  get actor(): string {
    return this.o.actor;
  }

  // ── opening ──────────────────────────────────────────────────────────────────────

  async open(): Promise<void> {
    const deadline = Date.now() + this.o.openTimeoutMs;
    const queue = [...this.o.urls];
    const tried = new Set<string>();
    let last: SessionError = new SessionError('unavailable', 'no session endpoint was reachable');
    while (queue.length > 0) {
      const url = queue.shift()!;
      if (tried.has(url)) continue;
      tried.add(url);
      if (this.o.signal?.aborted) throw new SessionError('aborted', 'connectSession was aborted');
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      const outcome = await this.tryOpen(url, remaining);
      if (outcome === 'opened') return;
      last = outcome;
      if (FINAL_CODES.has(outcome.code as SessionCloseCode) || outcome.code === 'aborted') throw outcome;
      const hinted = (outcome as SessionError & { endpoints?: string[] }).endpoints;
      if (hinted && this.o.followRedirects) queue.unshift(...hinted.filter((e) => !tried.has(e)));
    }
    throw last;
  }

  private tryOpen(url: string, timeoutMs: number): Promise<'opened' | (SessionError & { endpoints?: string[] })> {
    return new Promise((resolve) => {
      let settled = false;
      const finish = (result: 'opened' | (SessionError & { endpoints?: string[] })) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.o.signal?.removeEventListener('abort', onAbort);
        if (result !== 'opened') attempt.end();
        resolve(result);
      };
      const onAbort = () => finish(new SessionError('aborted', 'connectSession was aborted'));
      const timer = setTimeout(() => finish(new SessionError('unavailable', `${url} did not open the session within ${timeoutMs} ms`)), timeoutMs);
      this.o.signal?.addEventListener('abort', onAbort, { once: true });
      const attempt = new Attempt(
        url,
        this.o.WebSocket,
        this.o.auth,
        (a, m) => {
          if (settled) return this.onMessage(a, m);
          if (m.t === 'opened') {
            this.id = m.sid;
            this.gen = m.gen;
            this.attempt = a;
            this.endpoint = url;
            this.setState('open');
            finish('opened');
            return;
          }
          if (m.t === 'closed') {
            const error = new SessionError(m.code, m.reason) as SessionError & { endpoints?: string[] };
            if (m.endpoints) error.endpoints = [...m.endpoints];
            return finish(error);
          }
          finish(new SessionError('protocol', `unexpected '${m.t}' before the session was opened`));
        },
        (a, why) => {
          if (settled) return this.onAttemptEnd(a, why);
          finish(
            new SessionError(
              /\b401\b/.test(why.error ?? '') ? 'unauthorized' : 'unavailable',
              `${url}: ${why.error ?? `the connection closed (${why.code ?? 'no code'})`} before the session was opened`,
            ),
          );
        },
      );
      this.connections++;
      void attempt.whenOpen().then((ok) => {
        if (ok && !settled) attempt.send({ t: 'open', v: SESSION_WIRE_VERSION, actor: this.o.actor });
      });
    });
  }

  // ── the open session ────────────────────────────────────────────────────────────

  private onMessage(a: Attempt, m: ServerMessage): void {
    if (a !== this.attempt || this.state === 'closed') return;
    switch (m.t) {
      case 'f':
        return this.onFrame(a, m.s, m.d);
      case 'a':
        return this.onAck(m.u);
      case 'resumed':
        this.onAck(m.up);
        this.setState('open');
        this.retryDelay = RETRY_MIN_MS;
        // Whatever the Actor has not acknowledged goes again, in order (it drops what it already has).
        for (const f of this.unacked) a.send({ t: 'f', s: f.s, d: f.d });
        return;
      case 'move':
        a.moved = true;
        a.toldToMove = true;
        this.hints = [...m.endpoints];
        return a.end({ error: 'moved' });
      case 'closed':
        if (FINAL_CODES.has(m.code)) return this.finish({ code: m.code, reason: m.reason });
        // 'admission' (that host does not take the session now) or 'unavailable': resume elsewhere.
        if (m.endpoints && this.o.followRedirects) this.hints = [...m.endpoints];
        a.moved = true;
        return a.end({ error: m.reason });
      default:
        return a.end({ error: `unexpected '${m.t}'` });
    }
  }

  private onFrame(a: Attempt, s: number, d: Uint8Array): void {
    if (s <= this.downDelivered) return; // delivered before a reconnect: dropped
    if (s !== this.downDelivered + 1) return a.end({ error: `downstream frame ${s} after ${this.downDelivered}` }); // resume fixes it
    let frame: unknown;
    try {
      frame = decodeValue(d);
    } catch (error) {
      frame = new SessionError('protocol', `frame ${s} could not be decoded: ${(error as Error).message}`);
    }
    this.downDelivered = s;
    this.emitFrame(frame);
    if (this.downDelivered - this.downAckSent >= ACK_EVERY_FRAMES) this.sendAck();
    else this.ackTimer ??= setTimeout(() => this.sendAck(), ACK_DELAY_MS);
  }

  private sendAck(): void {
    if (this.ackTimer !== undefined) clearTimeout(this.ackTimer);
    this.ackTimer = undefined;
    if (this.downDelivered <= this.downAckSent || this.state !== 'open') return;
    if (this.attempt?.send({ t: 'a', d: this.downDelivered })) this.downAckSent = this.downDelivered;
  }

  private onAck(u: number): void {
    if (u <= this.upAcked) return;
    this.upAcked = Math.min(u, this.upSeq);
    let drop = 0;
    while (drop < this.unacked.length && this.unacked[drop]!.s <= this.upAcked) drop++;
    this.unacked.splice(0, drop);
    this.wake();
  }

  send(frame: unknown): void {
    if (this.state === 'closed' || this.closing) throw new SessionError('closed', `session ${this.id} is ${this.state === 'closed' ? 'closed' : 'closing'}`);
    if (this.unacked.length >= this.o.maxBufferedFrames)
      throw new SessionError('backpressure', `${this.unacked.length} frames are not acknowledged yet (maxBufferedFrames); wait for the Actor to catch up`);
    const d = encodeValue(frame, 'frame');
    const s = ++this.upSeq;
    this.unacked.push({ s, d });
    if (this.state === 'open') this.attempt?.send({ t: 'f', s, d });
  }

  // ── reconnect and resume ────────────────────────────────────────────────────────

  private resumeStarted = 0;
  private retryDelay = RETRY_MIN_MS;

  private onAttemptEnd(a: Attempt, why: { code?: number; error?: string }): void {
    if (a !== this.attempt || this.state === 'closed') return;
    this.attempt = undefined;
    if (this.closing && this.unacked.length === 0) return this.finish({ code: 'closed', reason: 'closed by the client' });
    if (this.state === 'open') {
      this.resumeStarted = Date.now();
      this.setState('resuming');
    }
    void why;
    this.scheduleResume(a.moved ? a.url : undefined, a.toldToMove);
  }

  private scheduleResume(avoid: string | undefined, now = false): void {
    if (this.state === 'closed' || this.retryTimer !== undefined) return;
    if (Date.now() - this.resumeStarted >= this.o.resumeTimeoutMs)
      return this.finish({ code: 'unavailable', reason: `no session endpoint took the session back within ${this.o.resumeTimeoutMs} ms` });
    // Move hints first (other Serving hosts), then the endpoint in use, then the rest of the list.
    const order = [...this.hints, this.endpoint, ...this.o.urls].filter((u, i, all) => u && all.indexOf(u) === i && u !== avoid);
    if (order.length === 0 && avoid) order.push(avoid);
    this.hints = [];
    // A draining host's `move` is followed at once; anything else (refused, unreachable) backs off.
    const delay = now && order[0] !== avoid ? 0 : this.retryDelay;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.resumeAt(order, 0);
    }, delay);
    if (!now) this.retryDelay = Math.min(this.retryDelay * 2, RETRY_MAX_MS);
  }

  private resumeAt(order: string[], index: number): void {
    if (this.state === 'closed') return;
    const url = order[index % order.length]!;
    this.attach++;
    this.endpoint = url;
    const attempt = new Attempt(
      url,
      this.o.WebSocket,
      this.o.auth,
      (a, m) => this.onMessage(a, m),
      (a, why) => {
        if (a !== this.attempt || this.state === 'closed') return;
        if (!a.moved && index + 1 < order.length && Date.now() - this.resumeStarted < this.o.resumeTimeoutMs) {
          // That endpoint is not reachable: the next one at once.
          this.attempt = undefined;
          return this.resumeAt(order, index + 1);
        }
        this.onAttemptEnd(a, why);
      },
    );
    this.attempt = attempt;
    this.connections++;
    void attempt.whenOpen().then((ok) => {
      if (ok) attempt.send({ t: 'resume', v: SESSION_WIRE_VERSION, sid: this.id, actor: this.o.actor, gen: this.gen, attach: this.attach, down: this.downDelivered });
    });
  }

  // ── close ──────────────────────────────────────────────────────────────────────

  async close(): Promise<void> {
    if (this.state === 'closed') return;
    if (!this.closing) {
      this.closing = true;
      const until = Date.now() + this.o.closeTimeoutMs;
      // The frames sent before close() are the Actor's first (each acknowledged), then the session ends.
      // (Read through now(): the state changes while this waits.)
      const now = (): SessionState => this.state;
      while (this.unacked.length > 0 && Date.now() < until && now() !== 'closed') await this.nextChange(until - Date.now());
      if (now() === 'open' && this.attempt?.send({ t: 'close' })) {
        while (Date.now() < until && now() !== 'closed') await this.nextChange(until - Date.now());
      }
      this.finish({ code: 'closed', reason: 'closed by the client' });
    }
    await this.closed;
  }

  private nextChange(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, Math.max(1, ms));
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.push(done);
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  private finish(info: SessionCloseInfo): void {
    if (this.state === 'closed') return;
    this.closeInfo = info;
    if (this.ackTimer !== undefined) clearTimeout(this.ackTimer);
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.ackTimer = this.retryTimer = undefined;
    const attempt = this.attempt;
    this.attempt = undefined;
    attempt?.end();
    this.setState('closed');
    for (const l of this.listeners.close) safely(l, info);
    for (const it of this.iterators) it.wake?.();
    this.wake();
    this.resolveClosed(info);
  }

  // ── events and iteration ──────────────────────────────────────────────────────

  private setState(state: SessionState): void {
    if (this.state === state) return;
    this.state = state;
    for (const l of this.listeners.state) safely(l, state);
    this.wake();
  }

  private emitFrame(frame: unknown): void {
    if (this.unconsumed) return void this.unconsumed.push(frame);
    for (const l of this.listeners.frame) safely(l, frame);
    for (const it of this.iterators) {
      it.queue.push(frame);
      it.wake?.();
    }
  }

  /** The first consumer takes the frames that arrived before it (none is dropped for want of a listener). */
  private consumerAttached(): unknown[] {
    const early = this.unconsumed ?? [];
    this.unconsumed = undefined;
    return early;
  }

  on(event: 'frame' | 'state' | 'close', listener: (value: never) => void): () => void {
    if (typeof listener !== 'function') throw new ArgumentError('listener', 'must be a function');
    const set = this.listeners[event];
    if (!set) throw new ArgumentError('event', "must be 'frame', 'state' or 'close'");
    set.add(listener);
    if (event === 'frame') {
      const early = this.consumerAttached();
      for (const it of this.iterators) it.queue.push(...early);
      if (early.length) queueMicrotask(() => early.forEach((f) => safely(listener, f)));
    }
    if (event === 'close' && this.closeInfo) queueMicrotask(() => safely(listener, this.closeInfo));
    return () => set.delete(listener);
  }

  frames(): AsyncIterableIterator<unknown> {
    const it = { queue: this.consumerAttached(), wake: undefined as (() => void) | undefined };
    this.iterators.add(it);
    const session = this;
    const iterator: AsyncIterableIterator<unknown> = {
      async next(): Promise<IteratorResult<unknown>> {
        for (;;) {
          if (it.queue.length > 0) return { value: it.queue.shift(), done: false };
          if (session.state === 'closed') {
            session.iterators.delete(it);
            return { value: undefined, done: true };
          }
          await new Promise<void>((resolve) => (it.wake = resolve));
          it.wake = undefined;
        }
      },
      async return(): Promise<IteratorResult<unknown>> {
        session.iterators.delete(it);
        it.wake?.();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }

  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    return this.frames();
  }
}

function safely(listener: (value: never) => void, value: unknown): void {
  try {
    listener(value as never);
  } catch (error) {
    // A listener's error is the application's; the session goes on. Reported asynchronously, like an event emitter's.
    queueMicrotask(() => {
      throw error;
    });
  }
}
