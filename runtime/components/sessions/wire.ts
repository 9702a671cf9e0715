/**
 * The STREAM client wire: what a client (`zlink/client`) and a session endpoint exchange over one WebSocket. One
 * binary message per ws message, MessagePack (plain maps; bytes travel raw). Application frames are encoded on
 * their own with the runtime's one codec (runtime/codec.ts) and carried here as bytes (`d`), so the session owner
 * forwards them without decoding. Browser-safe: no Node imports (the client imports this file).
 *
 * Sequence numbers are per session and per direction, from 1: `s` of an upstream frame (client → Actor) is
 * assigned by the client, of a downstream frame (Actor → client) by the Actor. Each side acknowledges the highest
 * number it has delivered in order; unacknowledged frames are sent again after a resume and dropped as duplicates
 * by the receiver, so a frame is delivered exactly once and in order across reconnects and the Actor's moves.
 */
import { Packr } from 'msgpackr';

/** Version of this wire; an `open`/`resume` of another version is refused with code 'protocol'. */
export const SESSION_WIRE_VERSION = 1;

/** Query parameter that carries `connectSession({ auth })` (browsers cannot set headers on a WebSocket). */
export const AUTH_QUERY_PARAMETER = 'auth';

/** Why a session (or an attempt to open or resume one) ended: `SessionError.code` on the client. */
export const SESSION_CLOSE_CODES = [
  /** Closed by the client or by the Actor (`session.close()`), after every frame sent before was delivered. */
  'closed',
  /** The Actor refused the binding: `onSession` threw on 'open', or its type has no `onSession`. */
  'refused',
  /** The host is not Serving (§15 STREAM: Relocating, Relocated and Draining accept no new binding). */
  'admission',
  /** No Actor with that id exists. */
  'not-found',
  /** The Actor was created again under the same id (a new ObjectGeneration, §12): the application rebinds. */
  'stale-generation',
  /** The Actor could not be reached for longer than the seal timeout, or no endpoint took the resume in time. */
  'unavailable',
  /** The session's binding is gone: its resume window passed, or a later resume replaced this connection. */
  'expired',
  /** The endpoint refused the client's credentials (authenticate returned false). */
  'unauthorized',
  /** The other side broke this wire's rules. */
  'protocol',
] as const;
export type SessionCloseCode = (typeof SESSION_CLOSE_CODES)[number];

/** Client → session owner. */
export type ClientMessage =
  /** Bind a new session to the Actor `actor`. */
  | { readonly t: 'open'; readonly v: number; readonly actor: string }
  /** Take a session over on this connection: `down` is the last downstream seq delivered; `attach` grows by one per resume. */
  | { readonly t: 'resume'; readonly v: number; readonly sid: string; readonly actor: string; readonly gen: number; readonly attach: number; readonly down: number }
  /** One upstream frame. */
  | { readonly t: 'f'; readonly s: number; readonly d: Uint8Array }
  /** Downstream frames up to `d` were delivered to the application. */
  | { readonly t: 'a'; readonly d: number }
  /** Close the session once the frames sent so far are delivered. */
  | { readonly t: 'close' };

/** Session owner → client. */
export type ServerMessage =
  | { readonly t: 'opened'; readonly sid: string; readonly gen: number }
  /** The resume took: upstream frames up to `up` were delivered; the client sends the rest again. */
  | { readonly t: 'resumed'; readonly up: number }
  /** One downstream frame. */
  | { readonly t: 'f'; readonly s: number; readonly d: Uint8Array }
  /** Upstream frames up to `u` were delivered to the Actor. */
  | { readonly t: 'a'; readonly u: number }
  /** This endpoint is shutting down (§15 Draining): resume at one of `endpoints` (other Serving hosts). */
  | { readonly t: 'move'; readonly endpoints: readonly string[] }
  /** The session (or this attempt) ended; `endpoints` hint other Serving hosts when the code is 'admission'. */
  | { readonly t: 'closed'; readonly code: SessionCloseCode; readonly reason: string; readonly endpoints?: readonly string[] };

const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

export function encodeWire(message: ClientMessage | ServerMessage): Uint8Array {
  return packr.pack(message);
}

const isSeq = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isText = (v: unknown, max = 1024): v is string => typeof v === 'string' && v.length > 0 && v.length <= max;
const isBytes = (v: unknown): v is Uint8Array => v instanceof Uint8Array;
const isEndpoints = (v: unknown): v is string[] => Array.isArray(v) && v.length <= 1024 && v.every((e) => isText(e, 2048));

function unpack(bytes: Uint8Array): Record<string, unknown> | undefined {
  let raw: unknown;
  try {
    raw = packr.unpack(bytes);
  } catch {
    return undefined;
  }
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : undefined;
}

/** A client message checked by hand (untrusted input on the hot path), or undefined. */
export function decodeClientMessage(bytes: Uint8Array): ClientMessage | undefined {
  const m = unpack(bytes);
  if (!m) return undefined;
  switch (m.t) {
    case 'f':
      return isSeq(m.s) && m.s > 0 && isBytes(m.d) ? (m as ClientMessage) : undefined;
    case 'a':
      return isSeq(m.d) ? (m as ClientMessage) : undefined;
    case 'open':
      return isSeq(m.v) && isText(m.actor, 256) ? (m as ClientMessage) : undefined;
    case 'resume':
      return isSeq(m.v) && isText(m.sid, 128) && isText(m.actor, 256) && isSeq(m.gen) && isSeq(m.attach) && m.attach > 1 && isSeq(m.down)
        ? (m as ClientMessage)
        : undefined;
    case 'close':
      return { t: 'close' };
    default:
      return undefined;
  }
}

/** A server message checked by hand, or undefined. */
export function decodeServerMessage(bytes: Uint8Array): ServerMessage | undefined {
  const m = unpack(bytes);
  if (!m) return undefined;
  switch (m.t) {
    case 'f':
      return isSeq(m.s) && m.s > 0 && isBytes(m.d) ? (m as ServerMessage) : undefined;
    case 'a':
      return isSeq(m.u) ? (m as ServerMessage) : undefined;
    case 'opened':
      return isText(m.sid, 128) && isSeq(m.gen) ? (m as ServerMessage) : undefined;
    case 'resumed':
      return isSeq(m.up) ? (m as ServerMessage) : undefined;
    case 'move':
      return isEndpoints(m.endpoints) ? (m as ServerMessage) : undefined;
    case 'closed':
      return (SESSION_CLOSE_CODES as readonly unknown[]).includes(m.code) && typeof m.reason === 'string' && (m.endpoints === undefined || isEndpoints(m.endpoints))
        ? (m as ServerMessage)
        : undefined;
    default:
      return undefined;
  }
}
