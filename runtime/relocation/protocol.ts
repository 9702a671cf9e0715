/**
 * Relocation protocol messages between a source unit and its target unit (runtime messages `r.*`), validated
 * on receipt. The `t` values are wire values: they come from RELOCATION_MESSAGE only.
 */
import { z } from 'zod';
import type { RuntimeMessage } from '../../transport/types';
import { envelopeWireBytes, type Envelope } from '../envelope';
import { envelopeSchema, isEnvelope } from '../protocol';

export const RELOCATION_MESSAGE = {
  /** Source → target: register the temporary queue(s) for these objects (before the seal, §8). */
  prepare: 'r.prepare',
  /** Target → source: temporary queue registered. */
  prepared: 'r.prepared',
  /** Target → source: explicit failure before relay-ready (§11), with a RelocationReason. */
  fail: 'r.fail',
  /** Target → source: payload verified and restored — the relay-ready reply (§13). */
  ready: 'r.ready',
  /** Source → target: a leading part of a pre-boundary relay batch too large for one frame (§7: no cap on relay records). */
  relayPart: 'r.relay',
  /** Source → target: (the last part of) the pre-boundary relay batch and one-way cutover (also its retransmission, §13). */
  cutover: 'r.cutover',
  /** Source → target: the unit did not start (deadline, shutdown); drop the temporary queue. */
  abort: 'r.abort',
} as const;

export type UnitKind = 'actor' | 'perActorShell' | 'spotWide' | 'instance';

const capability = z.object({
  type: z.string().min(1),
  kind: z.enum(['actor', 'user', 'instance']),
  policy: z.enum(['preserve', 'recreate', 'disable']),
  adapter: z.string().optional(),
  executionMode: z.enum(['SpotWide', 'PerActor']).optional(),
});

export const prepareSchema = z.object({
  t: z.literal(RELOCATION_MESSAGE.prepare),
  u: z.string().min(1),
  kind: z.enum(['actor', 'perActorShell', 'spotWide', 'instance']),
  keys: z.array(z.string().regex(/^[as]:.+/)).min(1),
  types: z.array(capability).min(1),
});
export const preparedSchema = z.object({ t: z.literal(RELOCATION_MESSAGE.prepared), u: z.string().min(1) });
export const failSchema = z.object({
  t: z.literal(RELOCATION_MESSAGE.fail),
  u: z.string().min(1),
  reason: z.number().int().min(1).max(10),
  error: z.string().optional(),
});
export const readySchema = z.object({ t: z.literal(RELOCATION_MESSAGE.ready), u: z.string().min(1) });
/** `first` marks the first frame of one (re)transmitted batch: the target starts the span afresh there (§13). */
export const relayPartSchema = z.object({
  t: z.literal(RELOCATION_MESSAGE.relayPart),
  u: z.string().min(1),
  relay: z.array(envelopeSchema),
  first: z.boolean().optional(),
  retransmit: z.boolean().optional(),
});
export const cutoverSchema = z.object({
  t: z.literal(RELOCATION_MESSAGE.cutover),
  u: z.string().min(1),
  relay: z.array(envelopeSchema),
  first: z.boolean().optional(),
  retransmit: z.boolean().optional(),
});
export const abortSchema = z.object({ t: z.literal(RELOCATION_MESSAGE.abort), u: z.string().min(1) });

export type PrepareMessage = z.infer<typeof prepareSchema>;
export type CutoverMessage = z.infer<typeof cutoverSchema>;
export type RelayPartMessage = z.infer<typeof relayPartSchema>;

/** Relayed envelope bytes per frame: well under the transport's frame limit (default 4 MiB). */
export const RELAY_PART_BYTES = 1024 * 1024;

/**
 * One pre-boundary relay batch and its cutover as frames: leading `r.relay` parts, then `r.cutover` with the rest.
 * The batch has no record cap (§7); it is split by encoded size so no frame exceeds the transport's limit.
 */
export function relayBatchMessages(u: string, relay: readonly Envelope[], retransmit: boolean): RuntimeMessage[] {
  const parts: Envelope[][] = [];
  let part: Envelope[] = [];
  let bytes = 0;
  for (const env of relay) {
    const size = envelopeWireBytes(env);
    if (part.length > 0 && bytes + size > RELAY_PART_BYTES) {
      parts.push(part);
      part = [];
      bytes = 0;
    }
    part.push(env);
    bytes += size;
  }
  parts.push(part);
  const extra = retransmit ? { retransmit: true } : {};
  return parts.map((p, i) => ({
    t: i === parts.length - 1 ? RELOCATION_MESSAGE.cutover : RELOCATION_MESSAGE.relayPart,
    u,
    relay: p,
    ...(i === 0 ? { first: true } : {}),
    ...extra,
  }));
}

const relocationMessage = z.discriminatedUnion('t', [prepareSchema, preparedSchema, failSchema, readySchema, relayPartSchema, cutoverSchema, abortSchema]);
export type RelocationMessage = z.infer<typeof relocationMessage>;

const isUnitId = (v: unknown): v is string => typeof v === 'string' && v.length > 0;

/**
 * One per unit and step: the per-unit replies and the relay/cutover frames are checked by hand (issue [6/10]: no
 * zod on the hot path); `r.prepare` (capabilities) and the rare ones go through their schemas.
 */
export function parseRelocationMessage(raw: unknown): RelocationMessage | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const m = raw as Record<string, unknown>;
  switch (m.t) {
    case RELOCATION_MESSAGE.prepared:
    case RELOCATION_MESSAGE.ready:
    case RELOCATION_MESSAGE.abort:
      return isUnitId(m.u) ? (raw as RelocationMessage) : undefined;
    case RELOCATION_MESSAGE.cutover:
    case RELOCATION_MESSAGE.relayPart:
      return isUnitId(m.u) &&
        Array.isArray(m.relay) &&
        m.relay.every(isEnvelope) &&
        (m.first === undefined || typeof m.first === 'boolean') &&
        (m.retransmit === undefined || typeof m.retransmit === 'boolean')
        ? (raw as RelocationMessage)
        : undefined;
  }
  const parsed = relocationMessage.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}
