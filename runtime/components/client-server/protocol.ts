/**
 * ClientServer wire values, in one place: the component name, the `c.clientServer.*` node messages, the descriptor
 * fields a server publishes, and the ChannelName rule. Messages are checked by hand (every call and reply passes
 * here); anything malformed is dropped by the caller with a log line, never half-used.
 */
import { componentMessageType } from '../component';
import { ArgumentError } from '../../errors';

/** Wire name: `descriptor.components.clientServer` and `c.clientServer.*` messages. */
export const CLIENT_SERVER = 'clientServer';

/** A call: `d` = 1 for Node direct (the caller named this node), 0 for select-one (the caller chose it by weight). */
export const CALL = componentMessageType(CLIENT_SERVER, 'call');
/** The one terminal of a call, sent back by the server. */
export const REPLY = componentMessageType(CLIENT_SERVER, 'reply');
/** The caller stopped waiting (timeout, abort): the handler's `signal` aborts; its reply is then dropped. */
export const CANCEL = componentMessageType(CLIENT_SERVER, 'cancel');

/**
 * Why a server did not run a call. `not-selectable` never reaches the application: a select-one caller whose
 * descriptor snapshot was stale (the server is not Serving, or no longer serves the channel) picks another server.
 */
export type RefusalKind = 'handler' | 'shutdown' | 'not-found' | 'unavailable' | 'not-selectable';
const REFUSAL_KINDS: ReadonlySet<string> = new Set<RefusalKind>(['handler', 'shutdown', 'not-found', 'unavailable', 'not-selectable']);

export interface CallMessage {
  readonly t: typeof CALL;
  readonly id: string;
  readonly ch: string;
  /** The request, encoded with runtime/codec.ts at the call. */
  readonly b: Uint8Array;
  readonly d: 0 | 1;
}

export type ReplyMessage =
  | { readonly t: typeof REPLY; readonly id: string; readonly ok: true; readonly b: Uint8Array }
  | { readonly t: typeof REPLY; readonly id: string; readonly ok: false; readonly k: RefusalKind; readonly e: string };

export interface CancelMessage {
  readonly t: typeof CANCEL;
  readonly id: string;
}

const MAX_ID = 128;
const isId = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= MAX_ID;

export function parseCall(m: Record<string, unknown>): CallMessage | undefined {
  if (!isId(m.id) || typeof m.ch !== 'string' || !isChannelName(m.ch) || !(m.b instanceof Uint8Array) || (m.d !== 0 && m.d !== 1)) return undefined;
  return m as unknown as CallMessage;
}

export function parseReply(m: Record<string, unknown>): ReplyMessage | undefined {
  if (!isId(m.id)) return undefined;
  if (m.ok === true) return m.b instanceof Uint8Array ? (m as unknown as ReplyMessage) : undefined;
  if (m.ok === false) return typeof m.k === 'string' && REFUSAL_KINDS.has(m.k) && typeof m.e === 'string' ? (m as unknown as ReplyMessage) : undefined;
  return undefined;
}

export function parseCancel(m: Record<string, unknown>): CancelMessage | undefined {
  return isId(m.id) ? (m as unknown as CancelMessage) : undefined;
}

// ── ChannelName ───────────────────────────────────────────────────────────────────────────────────

/** Longest ChannelName (it is published in the descriptor and sent with every call). */
export const CHANNEL_NAME_MAX = 256;
/** Letters, digits and `. _ - : /`, starting with a letter or digit: safe as a descriptor value and in logs. */
const CHANNEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._:/-]*$/;

export function isChannelName(value: string): boolean {
  return value.length <= CHANNEL_NAME_MAX && CHANNEL_NAME.test(value);
}

export function checkChannelName(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0) throw new ArgumentError(field, 'must be a non-empty string (a ChannelName)');
  if (value.length > CHANNEL_NAME_MAX) throw new ArgumentError(field, `must be at most ${CHANNEL_NAME_MAX} characters`);
  if (!CHANNEL_NAME.test(value))
    throw new ArgumentError(field, `'${value}' is not a ChannelName: use letters, digits and . _ - : / (starting with a letter or digit)`);
  return value;
}

// ── descriptor ────────────────────────────────────────────────────────────────────────────────────

/** What a host publishes as `descriptor.components.clientServer`: its servers (§1.1: coordinated with the host). */
export interface ServersDescriptor {
  readonly servers: readonly { readonly channel: string; readonly weight: number }[];
}

/** The servers a peer's descriptor lists; anything malformed is ignored (a descriptor is another host's data). */
export function readServers(components: Readonly<Record<string, unknown>> | undefined): ReadonlyMap<string, number> | undefined {
  const value = components?.[CLIENT_SERVER] as { servers?: unknown } | undefined;
  if (typeof value !== 'object' || value === null || !Array.isArray(value.servers)) return undefined;
  const servers = new Map<string, number>();
  for (const s of value.servers as unknown[]) {
    if (typeof s !== 'object' || s === null) continue;
    const { channel, weight } = s as { channel?: unknown; weight?: unknown };
    if (typeof channel === 'string' && isChannelName(channel) && isWeight(weight)) servers.set(channel, weight);
  }
  return servers;
}

export const isWeight = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0;
