/**
 * The unit payload (§9): application state bytes, the unexecuted queue and timer registrations, sent straight
 * from source memory to the target (never through a store). The transport adds chunking and the sha256.
 *
 * Encoded as plain MessagePack so state bytes and the queued envelopes' bodies (already encoded by runtime/codec.ts)
 * travel as raw bytes and come back byte-exact — no JSON, no base64. Issue [6/10] replaces this with parcels.
 */
import { Packr } from 'msgpackr';
import { z } from 'zod';
import type { Envelope } from '../envelope';
import { envelopeSchema } from '../protocol';
import type { HostedMode } from '../objects';
import type { TimerRegistration } from '../timers';
import type { UnitKind } from './protocol';

export const PAYLOAD_VERSION = 2;

export interface CapturedObject {
  readonly key: string;
  readonly type: string;
  readonly gen: number;
  readonly auth: number;
  readonly mode: HostedMode;
  readonly spot?: string;
  /** The adapter's bytes (PreserveStateWith); absent for RecreateOnRelocation and PerActor shells. */
  readonly state?: Uint8Array;
  readonly timers: readonly TimerRegistration[];
}

/** Queue items in their lane order; ticks are pending timer ticks (§12). */
export type CapturedItem = { readonly k: 'msg'; readonly to: string; readonly env: Envelope } | { readonly k: 'tick'; readonly to: string; readonly name: string };

export interface UnitPayload {
  readonly v: number;
  readonly unit: string;
  readonly kind: UnitKind;
  readonly objects: readonly CapturedObject[];
  readonly queue: readonly CapturedItem[];
}

const payloadSchema = z.object({
  v: z.literal(PAYLOAD_VERSION),
  unit: z.string().min(1),
  kind: z.enum(['actor', 'perActorShell', 'spotWide', 'instance']),
  objects: z
    .array(
      z.object({
        key: z.string().regex(/^[as]:.+/),
        type: z.string().min(1),
        gen: z.number().int().nonnegative(),
        auth: z.number().int().nonnegative(),
        mode: z.enum(['entry', 'member', 'SpotWide', 'PerActor', 'instance']),
        spot: z.string().optional(),
        state: z.custom<Uint8Array>((v) => v instanceof Uint8Array, 'state must be bytes').optional(),
        timers: z.array(z.object({ name: z.string().min(1), remainingMs: z.number().nonnegative(), periodMs: z.number().positive().optional() })),
      }),
    )
    .min(1),
  queue: z.array(
    z.union([
      z.object({ k: z.literal('msg'), to: z.string(), env: envelopeSchema }),
      z.object({ k: z.literal('tick'), to: z.string(), name: z.string().min(1) }),
    ]),
  ),
});

const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

export function encodePayload(payload: UnitPayload): Buffer {
  return packr.pack(payload);
}

/** Throws on anything that is not a payload of this version. */
export function decodePayload(bytes: Buffer): UnitPayload {
  return payloadSchema.parse(packr.unpack(bytes)) as UnitPayload;
}
