/**
 * Relocation protocol messages between a source unit and its target unit (runtime messages `r.*`), validated
 * on receipt. The `t` values are wire values: they come from RELOCATION_MESSAGE only.
 */
import { z } from 'zod';
import type { TypeCapability } from '../../stores/types';
import type { RuntimeMessage } from '../../transport/types';
import { envelopeWireBytes, type Envelope } from '../envelope';
import { envelopeSchema, isEnvelope } from '../protocol';

export const RELOCATION_MESSAGE = {
  /**
   * Source → target: register the temporary queue(s) of these units (before the seal, §8). One message carries the
   * units of one I/O turn: `{ units: [{ u, kind, keys, ty }], types }`, where `types` are the type capabilities
   * (§4 unit compatibility) deduplicated across the units and `ty` indexes the ones each unit uses.
   */
  prepare: 'r.prepare',
  /**
   * Source → target: one part of a single unit's prepare too large for one message (a SpotWide Spot with very many
   * members): `{ u, part, keys }`, parts 0, 1, … in order on the one connection. Part 0 also carries the `head` —
   * the unit's kind, its type capabilities, and how many parts and keys there are in all. The target assembles the
   * parts (prepare-assembly.ts) and then handles the unit exactly like one unit of an `r.prepare`.
   */
  prepareKeys: 'r.prepareKeys',
  /** Target → source: temporary queue registered, for each unit in `us`. */
  prepared: 'r.prepared',
  /** Target → source: explicit failure before relay-ready (§11), with a RelocationReason; one unit `u`. */
  fail: 'r.fail',
  /** Target → source: payload verified and restored — the relay-ready reply (§13), for each unit in `us`. */
  ready: 'r.ready',
  /** Source → target: a leading part of a pre-boundary relay batch too large for one frame (§7: no cap on relay records). */
  relayPart: 'r.relay',
  /** Source → target: (the last part of) the pre-boundary relay batch and one-way cutover (also its retransmission, §13). */
  cutover: 'r.cutover',
  /**
   * Source → target: the one-way cutover of each unit in `us` whose pre-boundary relay batch is empty — the common
   * case, so the units cut over in one step share one message (DESIGN "Relocation at scale"). Each entry means exactly
   * an `r.cutover` with an empty relay batch; a retransmission (§13) still goes as the unit's own `r.cutover`.
   */
  cutovers: 'r.cutovers',
  /** Source → target: the unit `u` did not start (deadline, shutdown); drop the temporary queue. */
  abort: 'r.abort',
} as const;

export type UnitKind = 'actor' | 'perActorShell' | 'spotWide' | 'instance';
const UNIT_KINDS: ReadonlySet<unknown> = new Set<UnitKind>(['actor', 'perActorShell', 'spotWide', 'instance']);
const TYPE_KINDS: ReadonlySet<unknown> = new Set<TypeCapability['kind']>(['actor', 'user', 'instance']);
const POLICIES: ReadonlySet<unknown> = new Set<TypeCapability['policy']>(['preserve', 'recreate', 'disable']);
const EXECUTION_MODES: ReadonlySet<unknown> = new Set(['SpotWide', 'PerActor']);

/** One unit of an `r.prepare`: its objects' keys and the indexes of its types in the message's `types`. */
export interface PrepareUnit {
  u: string;
  kind: UnitKind;
  keys: string[];
  ty: number[];
}
export interface PrepareMessage {
  t: typeof RELOCATION_MESSAGE.prepare;
  units: PrepareUnit[];
  types: TypeCapability[];
}
/** What part 0 of an `r.prepareKeys` adds: the rest of the unit's PrepareUnit, and the size of the whole. */
export interface PrepareHead {
  /** Parts in all (≥ 1), this one included. */
  parts: number;
  /** Keys in all parts together (≥ 1). */
  n: number;
  kind: UnitKind;
  /** Indexes into `types`, as in an `r.prepare`. */
  ty: number[];
  types: TypeCapability[];
}
export interface PrepareKeysMessage {
  t: typeof RELOCATION_MESSAGE.prepareKeys;
  u: string;
  /** 0-based; part 0 and only part 0 has the head. */
  part: number;
  keys: string[];
  head?: PrepareHead;
}
/** `r.prepared` / `r.ready` / `r.cutovers`: the same step for each unit in `us`. */
export interface UnitsMessage {
  t: typeof RELOCATION_MESSAGE.prepared | typeof RELOCATION_MESSAGE.ready | typeof RELOCATION_MESSAGE.cutovers;
  us: string[];
}
export const failSchema = z.object({
  t: z.literal(RELOCATION_MESSAGE.fail),
  u: z.string().min(1),
  reason: z.number().int().min(1).max(10),
  error: z.string().optional(),
});
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

export type RelocationMessage =
  | PrepareMessage
  | PrepareKeysMessage
  | UnitsMessage
  | z.infer<typeof failSchema>
  | RelayPartMessage
  | CutoverMessage
  | z.infer<typeof abortSchema>;

const isUnitId = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
const isUnitIds = (v: unknown): v is string[] => Array.isArray(v) && v.length > 0 && v.every(isUnitId);
const isOptionalString = (v: unknown) => v === undefined || typeof v === 'string';
/** An object key of the wire: `a:<id>` or `s:<id>`. */
const isKey = (v: unknown) => typeof v === 'string' && v.length > 2 && (v.startsWith('a:') || v.startsWith('s:'));

/** A type capability (§4 unit compatibility): the same rules as TypeCapability, checked strictly. */
function isCapability(v: unknown): v is TypeCapability {
  if (typeof v !== 'object' || v === null) return false;
  const c = v as Record<string, unknown>;
  return (
    typeof c.type === 'string' &&
    c.type.length > 0 &&
    TYPE_KINDS.has(c.kind) &&
    POLICIES.has(c.policy) &&
    isOptionalString(c.adapter) &&
    (c.executionMode === undefined || EXECUTION_MODES.has(c.executionMode))
  );
}

function isPrepareUnit(v: unknown, types: number): v is PrepareUnit {
  if (typeof v !== 'object' || v === null) return false;
  const p = v as Record<string, unknown>;
  return (
    isUnitId(p.u) &&
    UNIT_KINDS.has(p.kind) &&
    Array.isArray(p.keys) &&
    p.keys.length > 0 &&
    p.keys.every(isKey) &&
    Array.isArray(p.ty) &&
    p.ty.length > 0 &&
    p.ty.every((i) => Number.isInteger(i) && (i as number) >= 0 && (i as number) < types)
  );
}

const isIndexes = (v: unknown, below: number): boolean =>
  Array.isArray(v) && v.length > 0 && v.every((i) => Number.isInteger(i) && (i as number) >= 0 && (i as number) < below);
const isPositiveCount = (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) > 0;

function isPrepareHead(v: unknown): v is PrepareHead {
  if (typeof v !== 'object' || v === null) return false;
  const h = v as Record<string, unknown>;
  const types = h.types;
  return (
    isPositiveCount(h.parts) &&
    isPositiveCount(h.n) &&
    UNIT_KINDS.has(h.kind) &&
    Array.isArray(types) &&
    types.length > 0 &&
    types.every(isCapability) &&
    isIndexes(h.ty, types.length)
  );
}

/**
 * Hand-checked, no zod on the hot path (issue [6/10]): the batched prepare (units and capabilities), the parts of
 * one large unit's prepare, the batched replies and the relay/cutover frames; only the rare `r.fail` goes through
 * its schema.
 */
export function parseRelocationMessage(raw: unknown): RelocationMessage | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const m = raw as Record<string, unknown>;
  switch (m.t) {
    case RELOCATION_MESSAGE.prepare: {
      const types = m.types;
      if (!Array.isArray(types) || types.length === 0 || !types.every(isCapability)) return undefined;
      return Array.isArray(m.units) && m.units.length > 0 && m.units.every((u) => isPrepareUnit(u, types.length)) ? (raw as RelocationMessage) : undefined;
    }
    case RELOCATION_MESSAGE.prepareKeys: {
      if (!isUnitId(m.u) || !Number.isSafeInteger(m.part) || (m.part as number) < 0) return undefined;
      if (!Array.isArray(m.keys) || m.keys.length === 0 || !m.keys.every(isKey)) return undefined;
      return (m.part === 0 ? isPrepareHead(m.head) : m.head === undefined) ? (raw as RelocationMessage) : undefined;
    }
    case RELOCATION_MESSAGE.prepared:
    case RELOCATION_MESSAGE.ready:
    case RELOCATION_MESSAGE.cutovers:
      return isUnitIds(m.us) ? (raw as RelocationMessage) : undefined;
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
    case RELOCATION_MESSAGE.fail: {
      const parsed = failSchema.safeParse(raw);
      return parsed.success ? parsed.data : undefined;
    }
  }
  return undefined;
}
