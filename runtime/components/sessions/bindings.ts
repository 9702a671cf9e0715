/**
 * The Actor's side of STREAM sessions: the bindings an Actor holds, the session envelopes run in its turns, the
 * downstream frames it sends, and what happens to its bindings when it moves (§12 "A session connected to an
 * Actor": the physical connection is kept).
 *
 * A binding is framework state of the Actor (an ObjectExtension, objects.ts): it is captured into the unit payload at
 * the seal and restored on the target with the Actor's state, queue and timers — session id, session owner, attach
 * number, ObjectGeneration, the last upstream frame delivered, the last downstream frame sent and the downstream
 * frames the client has not acknowledged yet. So the target continues both sequences where the source stopped.
 *
 * Around a move: at S0 the source tells each session owner the session is sealed (its frames are held and relayed by
 * the unit barrier like any message); after S3 the target sends each session owner a one-way route update (the
 * spec's command 44). Nothing waits for an answer, so one session owner's slow route update never holds another
 * Actor (§10.2). Downstream frames that were lost on the way are sent again when the session owner asks (a gap) or
 * when they stay unacknowledged too long (retransmission), and the session owner drops what it already delivered.
 */
import { Packr } from 'msgpackr';
import type { NodeRef } from '../../../stores/types';
import type { RuntimeMessage } from '../../../transport/types';
import { FrameworkRuntimeState, nameOf } from '../../../vocabulary';
import type { Clock } from '../../clock';
import { decodeValue, encodeValue } from '../../codec';
import type { SessionCloseReason, SessionEvent, SessionHandle, SessionsApi } from '../../context';
import type { ActorDefinition } from '../../definitions';
import type { Envelope } from '../../envelope';
import { AdmissionError } from '../../errors';
import type { RuntimeLog } from '../../logger';
import type { Hosted, ObjectExtension, Terminal } from '../../objects';
import type { UnitEvent } from '../../relocation/events';
import {
  decodeSessionEnvelope,
  SESSION_MESSAGE,
  SESSIONS,
  type DownMessage,
  type EndMessage,
  type RouteMessage,
  type SealMessage,
  type SessionEnvelope,
  type SessionReply,
} from './protocol';
import type { SessionCloseCode } from './wire';

/** Downstream frames an Actor keeps for one session until the client acknowledges them. */
export const MAX_UNACKED_FRAMES = 10_000;
/** How often bindings are checked for retransmission, expiry and undelivered route updates. */
export const SWEEP_MS = 250;
/** Unacknowledged downstream frames older than this are sent again (the session owner drops duplicates). */
export const RETRANSMIT_MS = 1000;
/** Largest batch of frames in one `c.sessions.down` message (a frame is at most one value, MAX_VALUE_BYTES). */
const DOWN_BATCH_BYTES = 1024 * 1024;

export interface ActorSidePorts {
  /** Read at each use: the generation is known once the host started. */
  readonly self: NodeRef;
  readonly clock: Clock;
  readonly logger: RuntimeLog;
  state(): FrameworkRuntimeState;
  /** A `c.sessions.*` message to a session owner (this host's own owner included); false when not taken now. */
  toOwner(owner: NodeRef, message: RuntimeMessage): boolean;
  /** The one terminal of a session envelope request. */
  reply(env: Envelope, terminal: Terminal): void;
  /** Runs `fn` as a turn of `hosted`'s lane (expiry runs the 'closed' callback in the Actor's turn). */
  inTurn(hosted: Hosted, fn: () => unknown): void;
  /** The object this host dispatches under `key` now (undefined once it moved away). */
  hosted(key: string): Hosted | undefined;
  /** Unit events of this host, subscribed only while this host holds or restores bindings. */
  onUnitEvent(listener: (event: UnitEvent) => void): () => void;
  /** How long a session owner waits for the route update after a seal before it gives the session up. */
  readonly sealTimeoutMs: number;
}

/** One session bound to an Actor. Everything but `handle`, `lastSendAt` and `expiring` moves with the Actor. */
export interface Binding {
  readonly sid: string;
  owner: NodeRef;
  /** Attach number: 1 at open, one more per resume; an older session owner's detach is ignored. */
  attach: number;
  /** Moves of the Actor since the binding: seal and route update carry it, so a late seal never re-seals. */
  moves: number;
  /** ObjectGeneration the session was bound to (§12: a re-created Actor is not this binding's). */
  readonly gen: number;
  readonly identity: Uint8Array | undefined;
  /** Last upstream frame delivered to onSession. */
  up: number;
  /** Last downstream frame sent. */
  down: number;
  /** Last downstream frame the client acknowledged; `unacked[i]` is frame `acked + 1 + i`. */
  acked: number;
  unacked: Uint8Array[];
  /** The Actor closed the session after downstream frame `closing`. */
  closing: number | undefined;
  closeReason: string;
  /** No session owner holds the client since then (local clock): the binding expires after `detachMs`. */
  detachedAt: number | undefined;
  detachMs: number;
  /** Local clock of the last downstream send (not captured). */
  lastSendAt: number;
  expiring: boolean;
  handle: SessionHandle | undefined;
}

/** The bindings of one Actor: its ObjectExtension named 'sessions'. */
export class ActorBindings implements ObjectExtension {
  readonly map = new Map<string, Binding>();

  capture(): Uint8Array | undefined {
    if (this.map.size === 0) return undefined;
    const list = [...this.map.values()].map((b) => ({
      sid: b.sid,
      owner: { nodeId: b.owner.nodeId, lifecycleGeneration: b.owner.lifecycleGeneration },
      attach: b.attach,
      moves: b.moves,
      gen: b.gen,
      ...(b.identity ? { identity: b.identity } : {}),
      up: b.up,
      down: b.down,
      acked: b.acked,
      unacked: b.unacked,
      ...(b.closing !== undefined ? { closing: b.closing, closeReason: b.closeReason } : {}),
      ...(b.detachedAt !== undefined ? { detachMs: b.detachMs } : {}),
    }));
    return capturePackr.pack(list);
  }
}

const capturePackr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

const isSeq = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** Reads captured bindings (target side); throws on anything else, which fails the restore explicitly (§11). */
export function readBindings(bytes: Uint8Array, now: number): Binding[] {
  const raw = capturePackr.unpack(bytes) as unknown;
  if (!Array.isArray(raw)) throw new Error('session bindings: not a list');
  return raw.map((r: Record<string, unknown>, i) => {
    const owner = r.owner as NodeRef | undefined;
    const ok =
      typeof r.sid === 'string' &&
      typeof owner === 'object' &&
      owner !== null &&
      typeof owner.nodeId === 'string' &&
      isSeq(owner.lifecycleGeneration) &&
      isSeq(r.attach) &&
      isSeq(r.moves) &&
      isSeq(r.gen) &&
      (r.identity === undefined || r.identity instanceof Uint8Array) &&
      isSeq(r.up) &&
      isSeq(r.down) &&
      isSeq(r.acked) &&
      Array.isArray(r.unacked) &&
      r.unacked.every((f) => f instanceof Uint8Array) &&
      r.acked + r.unacked.length === r.down &&
      (r.closing === undefined || isSeq(r.closing)) &&
      (r.detachMs === undefined || isSeq(r.detachMs));
    if (!ok) throw new Error(`session bindings[${i}]: not a binding`);
    return {
      sid: r.sid as string,
      owner: { nodeId: owner!.nodeId, lifecycleGeneration: owner!.lifecycleGeneration },
      attach: r.attach as number,
      moves: r.moves as number,
      gen: r.gen as number,
      identity: r.identity as Uint8Array | undefined,
      up: r.up as number,
      down: r.down as number,
      acked: r.acked as number,
      unacked: r.unacked as Uint8Array[],
      closing: r.closing as number | undefined,
      closeReason: typeof r.closeReason === 'string' ? r.closeReason : '',
      // The window restarts on the target's clock (no other node's clock is read): a move extends it, never cuts it.
      detachedAt: r.detachMs !== undefined ? now : undefined,
      detachMs: (r.detachMs as number | undefined) ?? 0,
      lastSendAt: now,
      expiring: false,
      handle: undefined,
    };
  });
}

const bindingsOf = (hosted: Hosted): ActorBindings | undefined => hosted.ext?.get(SESSIONS) as ActorBindings | undefined;

/** The Actor side of every session bound to an Actor hosted here. */
export class ActorSessions {
  /** Hosted objects with bindings on this host (the sweep drops those that moved away). */
  private readonly live = new Set<Hosted>();
  /** Objects restored with bindings whose dispatch has not opened yet (S3 sends their route updates). */
  private readonly restoring = new Set<string>();
  /** Route updates the transport did not take yet: retried by the sweep until the seal timeout. */
  private routeRetries: { owner: NodeRef; message: RouteMessage; until: number }[] = [];
  private unsubscribe: (() => void) | undefined;
  private sweepTimer: unknown;
  private closed = false;

  constructor(private readonly ports: ActorSidePorts) {}

  /** ObjectServer.extensions entry: bindings restored on the target with their Actor (before S3). */
  restore = (hosted: Hosted, bytes: Uint8Array): void => {
    const list = readBindings(bytes, this.ports.clock.now());
    if (list.length === 0) return;
    const ext = new ActorBindings();
    for (const b of list) ext.map.set(b.sid, b);
    (hosted.ext ??= new Map()).set(SESSIONS, ext);
    this.restoring.add(hosted.key);
    this.listen();
  };

  /** ObjectServer.sessionsApi: what `ctx.sessions` is for `hosted`. */
  api = (hosted: Hosted): SessionsApi => {
    const sessions = this;
    return {
      list: () => [...(bindingsOf(hosted)?.map.values() ?? [])].map((b) => sessions.handle(hosted, b)),
      get: (id) => {
        const b = bindingsOf(hosted)?.map.get(id);
        return b ? sessions.handle(hosted, b) : undefined;
      },
      broadcast: (frame) => {
        const list = [...(bindingsOf(hosted)?.map.values() ?? [])].filter((b) => b.closing === undefined);
        if (list.length === 0) return 0;
        const bytes = encodeValue(frame, 'frame');
        for (const b of list) sessions.sendDown(hosted, b, bytes);
        return list.length;
      },
    };
  };

  private handle(hosted: Hosted, b: Binding): SessionHandle {
    if (b.handle) return b.handle;
    const sessions = this;
    let identity: { value: unknown } | undefined;
    b.handle = {
      id: b.sid,
      get identity() {
        return (identity ??= { value: b.identity ? decodeValue(b.identity) : undefined }).value;
      },
      send: (frame) => sessions.sendDown(hosted, b, encodeValue(frame, 'frame')),
      close: (reason) => sessions.closeByActor(hosted, b, reason === undefined ? '' : String(reason)),
    };
    return b.handle;
  }

  // ── downstream (Actor → client) ───────────────────────────────────────────────────

  private sendDown(hosted: Hosted, b: Binding, bytes: Uint8Array): void {
    this.checkSendable(hosted, b);
    if (b.unacked.length >= MAX_UNACKED_FRAMES)
      throw new AdmissionError(
        nameOf(FrameworkRuntimeState, this.ports.state()),
        `session ${b.sid} has ${b.unacked.length} frames its client has not acknowledged (MAX_UNACKED_FRAMES): the client is not reading or is away`,
      );
    b.down++;
    b.unacked.push(bytes);
    const message: DownMessage = { t: SESSION_MESSAGE.down, sid: b.sid, gen: b.gen, s: b.down, d: [bytes] };
    b.lastSendAt = this.ports.clock.now();
    this.ports.toOwner(b.owner, message as unknown as RuntimeMessage);
  }

  private checkSendable(hosted: Hosted, b: Binding): void {
    if (this.ports.hosted(hosted.key) !== hosted || hosted.hold !== undefined || !bindingsOf(hosted)?.map.has(b.sid))
      throw new AdmissionError(
        nameOf(FrameworkRuntimeState, this.ports.state()),
        `session ${b.sid}: the Actor ${hosted.id} is sealed for a move or gone from this host; send session frames from the Actor's turns`,
      );
    if (b.closing !== undefined) throw new AdmissionError(nameOf(FrameworkRuntimeState, this.ports.state()), `session ${b.sid} is closing`);
  }

  private closeByActor(hosted: Hosted, b: Binding, reason: string): void {
    if (b.closing !== undefined) return;
    this.checkSendable(hosted, b);
    b.closing = b.down;
    b.closeReason = reason;
    this.sendEnd(b);
  }

  private sendEnd(b: Binding): void {
    const message: EndMessage = { t: SESSION_MESSAGE.end, sid: b.sid, last: b.closing!, reason: b.closeReason };
    this.ports.toOwner(b.owner, message as unknown as RuntimeMessage);
  }

  /** Sends the unacknowledged frames after `from` again, in batches (resume, resend request, retransmission). */
  private retransmit(b: Binding, from: number): void {
    b.lastSendAt = this.ports.clock.now();
    let index = Math.max(0, from - b.acked);
    while (index < b.unacked.length) {
      const first = b.acked + 1 + index;
      const batch: Uint8Array[] = [];
      let bytes = 0;
      while (index < b.unacked.length && (batch.length === 0 || bytes + b.unacked[index]!.length <= DOWN_BATCH_BYTES)) {
        bytes += b.unacked[index]!.length;
        batch.push(b.unacked[index++]!);
      }
      const message: DownMessage = { t: SESSION_MESSAGE.down, sid: b.sid, gen: b.gen, s: first, d: batch };
      if (!this.ports.toOwner(b.owner, message as unknown as RuntimeMessage)) return;
    }
    if (b.closing !== undefined) this.sendEnd(b);
  }

  private acknowledge(b: Binding, da: number): void {
    const upTo = Math.min(da, b.down);
    if (upTo <= b.acked) return;
    b.unacked.splice(0, upTo - b.acked);
    b.acked = upTo;
  }

  // ── session envelopes (run in the Actor's turn) ─────────────────────────────────

  /** ObjectServer.sessionHandler. */
  onEnvelope = (obj: Hosted, env: Envelope): unknown => {
    const body = decodeSessionEnvelope(env.body);
    if (!body) {
      this.ports.logger.warn({ object: obj.key, origin: env.from.nodeId }, 'invalid session envelope dropped');
      if (env.req) this.ports.reply(env, { ok: false, kind: 'unavailable', error: 'invalid session envelope' });
      return undefined;
    }
    if (obj.kind !== 'actor') return this.answer(env, { closed: 'refused', reason: `sessions bind to Actors; ${obj.key} is a Spot` });
    if (body.k === 'f' || body.k === 'ack') {
      // Traffic from the session owner holding the client: a loss of its connection was not the end of it.
      const b = bindingsOf(obj)?.map.get(body.sid);
      if (b?.detachedAt !== undefined && b.owner.nodeId === env.from.nodeId && b.owner.lifecycleGeneration === env.from.lifecycleGeneration) b.detachedAt = undefined;
    }
    switch (body.k) {
      case 'open':
        return this.open(obj, env, body);
      case 'f':
        return this.frame(obj, env, body);
      case 'ack': {
        const b = bindingsOf(obj)?.map.get(body.sid);
        if (b) this.acknowledge(b, body.da);
        return this.answer(env, b ? { up: b.up } : gone(body.sid));
      }
      case 'resume':
        return this.resume(obj, env, body);
      case 'resend': {
        const b = bindingsOf(obj)?.map.get(body.sid);
        if (b) this.retransmit(b, body.from);
        return undefined;
      }
      case 'close': {
        const b = bindingsOf(obj)?.map.get(body.sid);
        if (!b) return undefined;
        this.remove(obj, b);
        return this.callback(obj, { type: 'closed', session: this.handle(obj, b), reason: body.why });
      }
      case 'detach': {
        const b = bindingsOf(obj)?.map.get(body.sid);
        // An older session owner's detach after the client resumed elsewhere changes nothing.
        if (b && b.attach === body.attach && b.detachedAt === undefined) {
          b.detachedAt = this.ports.clock.now();
          b.detachMs = body.ms;
        }
        return undefined;
      }
    }
  };

  private answer(env: Envelope, reply: SessionReply): undefined {
    if (env.req) this.ports.reply(env, { ok: true, value: encodeValue(reply, 'reply') });
    return undefined;
  }

  private open(obj: Hosted, env: Envelope, body: Extract<SessionEnvelope, { k: 'open' }>): unknown {
    const state = this.ports.state();
    // §15 STREAM: a host that is not Serving is excluded from new binding (existing sessions go on).
    if (state !== FrameworkRuntimeState.Serving)
      return this.answer(env, {
        closed: 'admission',
        reason: `the Actor ${obj.id} is on ${this.ports.self.nodeId}, which is ${nameOf(FrameworkRuntimeState, state)}: new session binding is refused (docs/concepts.md "STREAM sessions"); bind again once it moved`,
      });
    const def = obj.def as ActorDefinition;
    if (!def.onSession)
      return this.answer(env, { closed: 'refused', reason: `actor type '${def.type}' does not accept sessions (defineActor({ onSession }))` });
    const ext = bindingsOf(obj) ?? new ActorBindings();
    const existing = ext.map.get(body.sid);
    if (existing) return this.answer(env, { gen: existing.gen, up: existing.up });
    const now = this.ports.clock.now();
    const b: Binding = {
      sid: body.sid,
      owner: body.owner,
      attach: 1,
      moves: 0,
      gen: obj.objectGeneration,
      identity: body.id,
      up: 0,
      down: 0,
      acked: 0,
      unacked: [],
      closing: undefined,
      closeReason: '',
      detachedAt: undefined,
      detachMs: 0,
      lastSendAt: now,
      expiring: false,
      handle: undefined,
    };
    ext.map.set(b.sid, b);
    (obj.ext ??= new Map()).set(SESSIONS, ext);
    this.track(obj);
    const refused = (error: unknown) => {
      ext.map.delete(b.sid);
      return this.answer(env, { closed: 'refused', reason: error instanceof Error ? error.message : String(error) });
    };
    let result: unknown;
    try {
      result = def.onSession(obj.state, { type: 'open', session: this.handle(obj, b) }, obj.ctx);
    } catch (error) {
      return refused(error);
    }
    const bound = (): undefined => this.answer(env, { gen: b.gen, up: 0, node: this.selfRef() });
    if (isThenable(result)) return result.then(bound, refused);
    return bound();
  }

  private frame(obj: Hosted, env: Envelope, body: Extract<SessionEnvelope, { k: 'f' }>): unknown {
    const b = bindingsOf(obj)?.map.get(body.sid);
    if (!b) return this.answer(env, gone(body.sid));
    this.acknowledge(b, body.da);
    // Exactly once and in order: a frame seen before is only acknowledged; one after a gap waits for the gap's resend.
    if (body.s !== b.up + 1) return this.answer(env, { up: b.up });
    b.up = body.s;
    // After the Actor closed the session, late client frames are acknowledged but not handed to it.
    if (b.closing !== undefined) return this.answer(env, { up: b.up });
    let frame: unknown;
    try {
      frame = decodeValue(body.d);
    } catch (error) {
      this.ports.logger.warn({ object: obj.key, session: b.sid, seq: body.s, err: error }, 'session frame could not be decoded; skipped');
      return this.answer(env, { up: b.up });
    }
    const result = this.callback(obj, { type: 'frame', session: this.handle(obj, b), frame });
    if (isThenable(result)) return result.then(() => this.answer(env, { up: b.up }));
    return this.answer(env, { up: b.up });
  }

  private resume(obj: Hosted, env: Envelope, body: Extract<SessionEnvelope, { k: 'resume' }>): unknown {
    const b = bindingsOf(obj)?.map.get(body.sid);
    if (!b) return this.answer(env, gone(body.sid));
    if (!sameBytes(b.identity, body.id)) return this.answer(env, { closed: 'refused', reason: `session ${b.sid} was opened by another identity` });
    if (body.attach <= b.attach) return this.answer(env, { closed: 'expired', reason: `session ${b.sid} was resumed again since (attach ${b.attach})` });
    b.owner = body.owner;
    b.attach = body.attach;
    b.detachedAt = undefined;
    b.expiring = false;
    this.acknowledge(b, body.da);
    this.answer(env, { up: b.up, gen: b.gen, node: this.selfRef() });
    // The new session owner already waits at `da + 1`; it drops whatever it gets twice.
    this.retransmit(b, b.acked);
    return undefined;
  }

  /** onSession in the current turn; a throw is logged, never a terminal of the frame (it was delivered). */
  private callback(obj: Hosted, event: SessionEvent): unknown {
    const onSession = (obj.def as ActorDefinition).onSession;
    if (!onSession) return undefined;
    const fail = (error: unknown) =>
      this.ports.logger.warn({ object: obj.key, session: event.session.id, event: event.type, err: error }, `onSession threw on '${event.type}'`);
    try {
      const result = onSession(obj.state, event, obj.ctx);
      return isThenable(result) ? result.then(undefined, fail) : undefined;
    } catch (error) {
      fail(error);
      return undefined;
    }
  }

  private remove(obj: Hosted, b: Binding): void {
    const ext = bindingsOf(obj);
    ext?.map.delete(b.sid);
    if (ext && ext.map.size === 0) obj.ext?.delete(SESSIONS);
  }

  // ── moves (§12) ─────────────────────────────────────────────────────────────────

  private onUnitEvent = (event: UnitEvent): void => {
    if (this.closed) return;
    if (event.side === 'source' && (event.state === 'sealed' || event.state === 'restored')) {
      for (const key of event.objects) {
        const hosted = this.ports.hosted(key);
        const ext = hosted && bindingsOf(hosted);
        if (!ext) continue;
        for (const b of ext.map.values()) {
          if (event.state === 'sealed') {
            // Emitted before the capture: the count moves with the binding.
            b.moves++;
            const seal: SealMessage = { t: SESSION_MESSAGE.seal, sid: b.sid, e: b.moves, ms: this.ports.sealTimeoutMs };
            this.ports.toOwner(b.owner, seal as unknown as RuntimeMessage);
          } else this.routeUpdate(b);
        }
      }
      return;
    }
    if (event.side !== 'target') return;
    if (event.state === 'opened') {
      for (const key of event.objects) {
        if (!this.restoring.delete(key)) continue;
        const hosted = this.ports.hosted(key);
        const ext = hosted && bindingsOf(hosted);
        if (!hosted || !ext) continue;
        this.track(hosted);
        // Command 44 after S3, one-way: each session owner switches its route; nothing here waits for it.
        for (const b of ext.map.values()) this.routeUpdate(b);
      }
    } else if (event.state === 'discarded') for (const key of event.objects) this.restoring.delete(key);
    this.maybeStopListening();
  };

  private selfRef(): NodeRef {
    const self = this.ports.self;
    return { nodeId: self.nodeId, lifecycleGeneration: self.lifecycleGeneration };
  }

  private routeUpdate(b: Binding): void {
    const self = this.ports.self;
    const message: RouteMessage = {
      t: SESSION_MESSAGE.route,
      sid: b.sid,
      e: b.moves,
      node: { nodeId: self.nodeId, lifecycleGeneration: self.lifecycleGeneration },
      gen: b.gen,
    };
    if (!this.ports.toOwner(b.owner, message as unknown as RuntimeMessage))
      this.routeRetries.push({ owner: b.owner, message, until: this.ports.clock.now() + this.ports.sealTimeoutMs });
  }

  // ── housekeeping ────────────────────────────────────────────────────────────────

  private track(hosted: Hosted): void {
    this.live.add(hosted);
    this.listen();
  }

  private listen(): void {
    if (this.closed) return;
    this.unsubscribe ??= this.ports.onUnitEvent(this.onUnitEvent);
    if (this.sweepTimer === undefined && this.live.size > 0) this.sweepTimer = this.ports.clock.setTimeout(this.sweep, SWEEP_MS);
  }

  private maybeStopListening(): void {
    if (this.live.size > 0 || this.restoring.size > 0 || this.routeRetries.length > 0) return;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /** Retransmission, expiry of detached bindings, route updates not taken yet. */
  private sweep = (): void => {
    this.sweepTimer = undefined;
    if (this.closed) return;
    const now = this.ports.clock.now();
    for (const hosted of [...this.live]) {
      const ext = bindingsOf(hosted);
      if (this.ports.hosted(hosted.key) !== hosted || !ext || ext.map.size === 0) {
        this.live.delete(hosted);
        continue;
      }
      if (hosted.hold !== undefined) continue; // sealed: the target continues from the captured bindings
      for (const b of ext.map.values()) {
        if (b.unacked.length > 0 && now - b.lastSendAt >= RETRANSMIT_MS) this.retransmit(b, b.acked);
        if (b.detachedAt !== undefined && !b.expiring && now - b.detachedAt >= b.detachMs) {
          b.expiring = true;
          this.ports.inTurn(hosted, () => this.expire(hosted, b));
        }
      }
    }
    const retries = this.routeRetries;
    this.routeRetries = [];
    for (const r of retries) if (now < r.until && !this.ports.toOwner(r.owner, r.message as unknown as RuntimeMessage)) this.routeRetries.push(r);
    if (this.live.size > 0 || this.routeRetries.length > 0) this.sweepTimer = this.ports.clock.setTimeout(this.sweep, SWEEP_MS);
    this.maybeStopListening();
  };

  /** In the Actor's turn: a detached binding nobody resumed within its window ends ('closed', reason 'expired'). */
  private expire(hosted: Hosted, b: Binding): unknown {
    if (this.closed || this.ports.hosted(hosted.key) !== hosted || bindingsOf(hosted)?.map.get(b.sid) !== b || b.detachedAt === undefined) return undefined;
    this.remove(hosted, b);
    const reason: SessionCloseReason = 'expired';
    return this.callback(hosted, { type: 'closed', session: this.handle(hosted, b), reason });
  }

  /**
   * A session owner left the cluster (crashed, or closed before it could detach its sessions): each binding it held
   * waits for its client to resume elsewhere, for `windowMs`, then expires — it does not keep frames forever.
   */
  onOwnerLost(peer: NodeRef, windowMs: number): void {
    const now = this.ports.clock.now();
    for (const hosted of this.live) {
      if (this.ports.hosted(hosted.key) !== hosted) continue;
      for (const b of bindingsOf(hosted)?.map.values() ?? []) {
        if (b.detachedAt !== undefined || b.owner.nodeId !== peer.nodeId || b.owner.lifecycleGeneration !== peer.lifecycleGeneration) continue;
        b.detachedAt = now;
        b.detachMs = windowMs;
      }
    }
  }

  /** §14: no timer or listener of this side outlives the host. */
  close(): void {
    this.closed = true;
    this.ports.clock.clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.live.clear();
    this.restoring.clear();
    this.routeRetries = [];
  }

  /** For tests and diagnostics: sessions bound to Actors hosted here. */
  get bindingCount(): number {
    let n = 0;
    for (const hosted of this.live) if (this.ports.hosted(hosted.key) === hosted) n += bindingsOf(hosted)?.map.size ?? 0;
    return n;
  }
}

function gone(sid: string): SessionReply {
  const code: SessionCloseCode = 'expired';
  return { closed: code, reason: `session ${sid} is not bound to this Actor (it ended, or its resume window passed)` };
}

function sameBytes(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
