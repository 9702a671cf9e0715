/**
 * STREAM between hosts: the one place its wire values come from.
 *
 * - Session envelopes (session owner → Actor) are application envelopes with `ses: 1` (runtime/envelope.ts), routed
 *   like any message to the Actor's current owner — held at its unit barrier, relayed, followed — and run in the
 *   Actor's turn beside `receive`. Their bodies are `SessionEnvelope` below; requests are answered with a
 *   `SessionReply` encoded with the runtime codec (the router decodes replies with it).
 * - Node messages (`c.sessions.*`, Actor's host → session owner) carry downstream frames, the seal notice of a unit
 *   barrier and the route update after S3 (the spec's command 44). They are one-way: nothing waits for an answer.
 */
import { Packr } from 'msgpackr';
import type { NodeRef } from '../../../stores/types';
import type { RuntimeMessage } from '../../../transport/types';
import { componentMessageType } from '../component';
import type { SessionCloseCode } from './wire';
import { SESSION_CLOSE_CODES } from './wire';

export const SESSIONS = 'sessions';

export const SESSION_MESSAGE = {
  /** Downstream frames `s`, `s+1`, … of one session (Actor's host → session owner). */
  down: componentMessageType(SESSIONS, 'down'),
  /** §12: the session's Actor is sealed at its unit barrier (source, S0); a route update is due within `ms`. */
  seal: componentMessageType(SESSIONS, 'seal'),
  /** Command 44: the Actor's owner is `node` now (target after S3; the source again after a restore). One-way. */
  route: componentMessageType(SESSIONS, 'route'),
  /** The Actor closed the session after downstream frame `last`. */
  end: componentMessageType(SESSIONS, 'end'),
} as const;

export interface DownMessage {
  readonly t: typeof SESSION_MESSAGE.down;
  readonly sid: string;
  readonly gen: number;
  readonly s: number;
  readonly d: readonly Uint8Array[];
}
export interface SealMessage {
  readonly t: typeof SESSION_MESSAGE.seal;
  readonly sid: string;
  /** The Actor's move number since the binding (a seal older than the last route update is ignored). */
  readonly e: number;
  readonly ms: number;
}
export interface RouteMessage {
  readonly t: typeof SESSION_MESSAGE.route;
  readonly sid: string;
  /** The move this update ends (the same number as its seal). */
  readonly e: number;
  readonly node: NodeRef;
  readonly gen: number;
}
export interface EndMessage {
  readonly t: typeof SESSION_MESSAGE.end;
  readonly sid: string;
  readonly last: number;
  readonly reason: string;
}
export type SessionNodeMessage = DownMessage | SealMessage | RouteMessage | EndMessage;

/** Session envelopes: what a session owner asks of the Actor a session is bound to (run in the Actor's turn). */
export type SessionEnvelope =
  /** Request: bind session `sid` (owner = this session owner); `id` is the encoded identity from authenticate. */
  | { readonly k: 'open'; readonly sid: string; readonly owner: NodeRef; readonly id?: Uint8Array }
  /** Request: one upstream frame; `da` piggybacks the client's downstream acknowledgement. */
  | { readonly k: 'f'; readonly sid: string; readonly s: number; readonly d: Uint8Array; readonly da: number }
  /** One-way (request when probing): the client delivered downstream frames up to `da`. */
  | { readonly k: 'ack'; readonly sid: string; readonly da: number }
  /** Request: the client resumed at `owner` with attach number `attach`; it delivered downstream frames up to `da`. */
  | { readonly k: 'resume'; readonly sid: string; readonly owner: NodeRef; readonly attach: number; readonly da: number; readonly id?: Uint8Array }
  /** One-way: downstream frames after `from` did not all arrive at the session owner; send them again. */
  | { readonly k: 'resend'; readonly sid: string; readonly from: number }
  /** One-way: the session ended at its owner (`why` 'client': the client closed it; 'actor': the Actor's end was delivered). */
  | { readonly k: 'close'; readonly sid: string; readonly why: 'client' | 'actor' }
  /** One-way: the session owner with attach number `attach` no longer holds the client; it may resume within `ms`. */
  | { readonly k: 'detach'; readonly sid: string; readonly attach: number; readonly ms: number };

/** Answer of a session envelope request: `up` = last upstream frame delivered; `closed` = the binding is gone. */
export interface SessionReply {
  readonly up?: number;
  readonly gen?: number;
  /** The node that answered (the Actor's owner now): a session owner that loses it asks where the Actor went. */
  readonly node?: NodeRef;
  readonly closed?: SessionCloseCode;
  readonly reason?: string;
}

const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

export function encodeSessionEnvelope(body: SessionEnvelope): Uint8Array {
  return packr.pack(body);
}

const isSeq = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isText = (v: unknown, max = 256): v is string => typeof v === 'string' && v.length > 0 && v.length <= max;
const isNodeRef = (v: unknown): v is NodeRef =>
  typeof v === 'object' && v !== null && isText((v as NodeRef).nodeId) && isSeq((v as NodeRef).lifecycleGeneration);
const isOptionalBytes = (v: unknown): boolean => v === undefined || v instanceof Uint8Array;

/** A session envelope body checked by hand (it runs per frame), or undefined. */
export function decodeSessionEnvelope(bytes: Uint8Array): SessionEnvelope | undefined {
  let m: Record<string, unknown>;
  try {
    m = packr.unpack(bytes) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof m !== 'object' || m === null || !isText(m.sid, 128)) return undefined;
  switch (m.k) {
    case 'f':
      return isSeq(m.s) && m.s > 0 && m.d instanceof Uint8Array && isSeq(m.da) ? (m as SessionEnvelope) : undefined;
    case 'ack':
      return isSeq(m.da) ? (m as SessionEnvelope) : undefined;
    case 'open':
      return isNodeRef(m.owner) && isOptionalBytes(m.id) ? (m as SessionEnvelope) : undefined;
    case 'resume':
      return isNodeRef(m.owner) && isSeq(m.attach) && isSeq(m.da) && isOptionalBytes(m.id) ? (m as SessionEnvelope) : undefined;
    case 'resend':
      return isSeq(m.from) ? (m as SessionEnvelope) : undefined;
    case 'close':
      return m.why === 'client' || m.why === 'actor' ? (m as SessionEnvelope) : undefined;
    case 'detach':
      return isSeq(m.attach) && isSeq(m.ms) ? (m as SessionEnvelope) : undefined;
    default:
      return undefined;
  }
}

/** A `c.sessions.*` node message checked by hand, or undefined. */
export function parseSessionNodeMessage(raw: RuntimeMessage): SessionNodeMessage | undefined {
  const m = raw as Record<string, unknown>;
  if (!isText(m.sid, 128)) return undefined;
  switch (m.t) {
    case SESSION_MESSAGE.down:
      return isSeq(m.gen) && isSeq(m.s) && m.s > 0 && Array.isArray(m.d) && m.d.length > 0 && m.d.every((x) => x instanceof Uint8Array)
        ? (raw as unknown as DownMessage)
        : undefined;
    case SESSION_MESSAGE.seal:
      return isSeq(m.e) && isSeq(m.ms) ? (raw as unknown as SealMessage) : undefined;
    case SESSION_MESSAGE.route:
      return isSeq(m.e) && isNodeRef(m.node) && isSeq(m.gen) ? (raw as unknown as RouteMessage) : undefined;
    case SESSION_MESSAGE.end:
      return isSeq(m.last) && typeof m.reason === 'string' ? (raw as unknown as EndMessage) : undefined;
    default:
      return undefined;
  }
}

/** A request's reply value (decoded by the router with the runtime codec), checked by hand. */
export function readSessionReply(value: unknown): SessionReply | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Record<string, unknown>;
  if (r.up !== undefined && !isSeq(r.up)) return undefined;
  if (r.gen !== undefined && !isSeq(r.gen)) return undefined;
  if (r.node !== undefined && !isNodeRef(r.node)) return undefined;
  if (r.closed !== undefined && !(SESSION_CLOSE_CODES as readonly unknown[]).includes(r.closed)) return undefined;
  if (r.reason !== undefined && typeof r.reason !== 'string') return undefined;
  return r as SessionReply;
}
