/**
 * Classic fanout on the wire: the `c.fanout.*` node messages and the descriptor entry (the fanout publisher
 * descriptor, §14). The one place their `t` values and shapes come from. Messages are checked by hand: `ev` and
 * `ack` are on the hot path of every event.
 *
 * A subscription link joins one subscription of a subscriber node to one publisher node run:
 *   subscriber → publisher  sub { s, topic, from, r? }  subscribe (from = 1), or resume (r = 1: the link was
 *                                                    accepted before; from = the next sequence it expects)
 *   publisher → subscriber  subok { s, from }        accepted (new or resumed)
 *   publisher → subscriber  refused { s, reason }    not accepted: the publisher host's state (§15), or 'unknown'
 *                                                    (a resume of a link the publisher no longer holds)
 *   publisher → subscriber  ev { s, q, p, v }        event q (1, 2, …) of this link, from publisher p, value bytes
 *   subscriber → publisher  ack { s, q }             every event up to q arrived (cumulative)
 *   subscriber → publisher  unsub { s }              end this link
 *   publisher → subscriber  end { s, reason }        the link ended ('unsubscribed', 'publisher-closed', 'overflow')
 * `s` is the link's number on the subscriber's run (a link made again to the same publisher run gets a new one);
 * the publisher keys a link by (subscriber run, s). An event for a link the subscriber no longer has is answered
 * with `unsub`, so a publisher never keeps feeding a link nobody reads.
 */
import type { NodeDescriptor } from '../../../stores/types';
import type { RuntimeMessage } from '../../../transport/types';

export const FANOUT = 'fanout';

/** Literal types so a message narrows by `t`; protocol.test.ts checks each is `componentMessageType(FANOUT, …)`. */
export const FANOUT_MESSAGES = {
  sub: 'c.fanout.sub',
  subok: 'c.fanout.subok',
  refused: 'c.fanout.refused',
  ev: 'c.fanout.ev',
  ack: 'c.fanout.ack',
  unsub: 'c.fanout.unsub',
  end: 'c.fanout.end',
} as const;

export type EndReason = 'unsubscribed' | 'publisher-closed' | 'overflow';

export type FanoutMessage =
  | { readonly t: typeof FANOUT_MESSAGES.sub; readonly s: number; readonly topic: string; readonly from: number; readonly r?: 1 }
  | { readonly t: typeof FANOUT_MESSAGES.subok; readonly s: number; readonly from: number }
  | { readonly t: typeof FANOUT_MESSAGES.refused; readonly s: number; readonly reason: string }
  | { readonly t: typeof FANOUT_MESSAGES.ev; readonly s: number; readonly q: number; readonly p: string; readonly v: Uint8Array }
  | { readonly t: typeof FANOUT_MESSAGES.ack; readonly s: number; readonly q: number }
  | { readonly t: typeof FANOUT_MESSAGES.unsub; readonly s: number }
  | { readonly t: typeof FANOUT_MESSAGES.end; readonly s: number; readonly reason: string };

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isSeq = (v: unknown): v is number => isCount(v) && v >= 1;
const isText = (v: unknown, max = 512): v is string => typeof v === 'string' && v.length > 0 && v.length <= max;

/** The message when it is a well-formed fanout message, else undefined (the caller logs and drops it). */
export function parseFanoutMessage(raw: RuntimeMessage): FanoutMessage | undefined {
  const m = raw as Record<string, unknown>;
  if (!isCount(m.s)) return undefined;
  switch (m.t) {
    case FANOUT_MESSAGES.ev:
      return isSeq(m.q) && isText(m.p) && m.v instanceof Uint8Array ? (raw as FanoutMessage) : undefined;
    case FANOUT_MESSAGES.ack:
      return isCount(m.q) ? (raw as FanoutMessage) : undefined;
    case FANOUT_MESSAGES.sub:
      return isText(m.topic) && isSeq(m.from) && (m.r === undefined || m.r === 1) ? (raw as FanoutMessage) : undefined;
    case FANOUT_MESSAGES.subok:
      return isSeq(m.from) ? (raw as FanoutMessage) : undefined;
    case FANOUT_MESSAGES.refused:
    case FANOUT_MESSAGES.end:
      return isText(m.reason, 64) ? (raw as FanoutMessage) : undefined;
    case FANOUT_MESSAGES.unsub:
      return raw as FanoutMessage;
    default:
      return undefined;
  }
}

/**
 * The fanout publisher descriptor (§14) as published in `descriptor.components.fanout`: the node's automatic
 * publishers, each with its topic and identity, under the node's run generation. The endpoint is the descriptor's
 * own `endpoints` (subscribers reach the publisher over the mesh connection to that node run).
 */
export interface FanoutDescription {
  readonly generation: number;
  readonly publishers: readonly { readonly topic: string; readonly id: string }[];
}

/** The topics a descriptor's node publishes automatically; a malformed or mismatched entry publishes nothing. */
export function publishedTopics(descriptor: NodeDescriptor): ReadonlySet<string> {
  const entry = descriptor.components?.[FANOUT] as Partial<FanoutDescription> | undefined;
  const topics = new Set<string>();
  if (typeof entry !== 'object' || entry === null || entry.generation !== descriptor.lifecycleGeneration || !Array.isArray(entry.publishers)) return topics;
  for (const p of entry.publishers as unknown[]) {
    const topic = (p as { topic?: unknown } | null)?.topic;
    if (isText(topic)) topics.add(topic);
  }
  return topics;
}
