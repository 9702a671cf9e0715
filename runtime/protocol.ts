/**
 * Runtime messages carried by the transport (the transport validates framing; this validates content).
 * The `t` values are wire values: this module is the one place they come from.
 */
import { z } from 'zod';

/** Encoded application values (runtime/codec.ts) travel as raw bytes. */
const bytes = z.custom<Uint8Array>((v) => v instanceof Uint8Array, 'must be encoded bytes');

const nodeRef = z.object({ nodeId: z.string().min(1), lifecycleGeneration: z.number().int().nonnegative() });

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isText = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
/** `a:<id>` or `s:<id>`. */
export const isObjectKey = (v: unknown): v is string =>
  typeof v === 'string' && v.length > 2 && (v.charCodeAt(0) === 97 || v.charCodeAt(0) === 115) && v.charCodeAt(1) === 58;
const isNodeRef = (v: unknown): boolean => typeof v === 'object' && v !== null && isText((v as { nodeId?: unknown }).nodeId) && isCount((v as { lifecycleGeneration?: unknown }).lifecycleGeneration);

/**
 * One envelope, checked by hand: it is on the hot path of every application message and relay record (issue
 * [6/10]: no zod per message). Same rules as a schema would state; unknown fields are ignored.
 */
export function isEnvelope(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return false;
  const e = v as Record<string, unknown>;
  return (
    isText(e.id) &&
    isObjectKey(e.to) &&
    isCount(e.gen) &&
    e.body instanceof Uint8Array &&
    isNodeRef(e.from) &&
    (e.req === undefined || e.req === 1) &&
    (e.place === undefined || isText(e.place)) &&
    (e.hops === undefined || isCount(e.hops)) &&
    (e.seq === undefined || isCount(e.seq)) &&
    (e.moved === undefined || e.moved === 1) &&
    (e.close === undefined || e.close === 1) &&
    (e.ses === undefined || e.ses === 1)
  );
}

export const envelopeSchema = z.custom<{
  id: string;
  to: string;
  gen: number;
  body: Uint8Array;
  from: { nodeId: string; lifecycleGeneration: number };
  req?: 1;
  place?: string;
  hops?: number;
  seq?: number;
  moved?: 1;
  close?: 1;
  ses?: 1;
}>(isEnvelope, 'must be an envelope');

/**
 * The kinds of a request's terminal other than a reply (errors.ts RequestError): `closed` — the Instance Spot was
 * closed while the request waited for it; `moving` — a closeSpot lost to a relocation that came first (§12).
 */
const REPLY_KIND_VALUES = ['handler', 'not-found', 'stale-generation', 'unavailable', 'shutdown', 'closed', 'moving'] as const;
const REPLY_KINDS: ReadonlySet<string> = new Set(REPLY_KIND_VALUES);

const msg = z.object({ t: z.literal('msg'), env: envelopeSchema });
/**
 * "Not here": the sender re-routes. `moved` names the node this one moved the object to, when it knows (a unit it
 * relocated whose Message Follow route already ended, DESIGN "Convergence"): the sender may go there directly.
 */
const bounce = z.object({ t: z.literal('bounce'), env: envelopeSchema, moved: nodeRef.optional() });
/** A forwarder tells a request's origin which node now holds it, so a lost forwarder does not fail it (item 8). */
const via = z.object({ t: z.literal('via'), id: z.string().min(1), node: nodeRef });
/** A one-way message reached an object of another ObjectGeneration (§12) and was rejected: drop the cached route. */
const stale = z.object({ t: z.literal('stale'), to: z.string().regex(/^[as]:.+/), gen: z.number().int().nonnegative() });
const reply = z.object({
  t: z.literal('reply'),
  id: z.string().min(1),
  ok: z.boolean(),
  value: bytes.optional(),
  error: z.string().optional(),
  kind: z.enum(REPLY_KIND_VALUES).optional(),
});
/** Relocation protocol messages are validated by runtime/relocation/protocol.ts. */
const control = z.object({ t: z.string().regex(/^[rc]\./) }).passthrough();

/**
 * Order marker (item 10): when this node's route for an object changes while earlier messages for it may still be
 * on the old path (the old owner is leaving, or the object came to this node), `mark` follows those messages along
 * the same path — the old owner forwards it like one of them (Message Follow) — and whoever finally holds the
 * object (or knows it is gone) answers `marked` to the origin. New messages wait for that answer, so they never
 * overtake the ones still on the way.
 */
const mark = z.object({ t: z.literal('mark'), to: z.string().regex(/^[as]:.+/), origin: nodeRef });
const marked = z.object({ t: z.literal('marked'), to: z.string().regex(/^[as]:.+/) });

const runtimeMessage = z.union([msg, bounce, reply, via, stale, mark, marked, control]);
export type RuntimeMessageParsed = z.infer<typeof runtimeMessage>;
export type ReplyMessage = z.infer<typeof reply>;
export type BounceMessage = z.infer<typeof bounce>;
export type ViaMessage = z.infer<typeof via>;
export type StaleMessage = z.infer<typeof stale>;
export type MarkMessage = z.infer<typeof mark>;


export function parseRuntimeMessage(raw: unknown): RuntimeMessageParsed | undefined {
  // The two messages every request and send produce are checked by hand (hot path); the rare ones by schema.
  if (typeof raw !== 'object' || raw === null) return undefined;
  const m = raw as Record<string, unknown>;
  if (m.t === 'msg') return isEnvelope(m.env) ? (raw as RuntimeMessageParsed) : undefined;
  // Relocation protocol messages are validated by runtime/relocation/protocol.ts, once.
  if (typeof m.t === 'string' && m.t.startsWith('r.')) return raw as RuntimeMessageParsed;
  // Component messages (runtime/components: `c.<component>.<message>`) are validated by their component.
  if (typeof m.t === 'string' && m.t.startsWith('c.')) return raw as RuntimeMessageParsed;
  if (m.t === 'reply') {
    const ok =
      isText(m.id) &&
      typeof m.ok === 'boolean' &&
      (m.value === undefined || m.value instanceof Uint8Array) &&
      (m.error === undefined || typeof m.error === 'string') &&
      (m.kind === undefined || REPLY_KINDS.has(m.kind as string));
    return ok ? (raw as RuntimeMessageParsed) : undefined;
  }
  const parsed = runtimeMessage.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}
