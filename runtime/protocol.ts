/**
 * Runtime messages carried by the transport (the transport validates framing; this validates content).
 * The `t` values are wire values: this module is the one place they come from.
 */
import { z } from 'zod';

/** Encoded application values (runtime/codec.ts) travel as raw bytes. */
const bytes = z.custom<Uint8Array>((v) => v instanceof Uint8Array, 'must be encoded bytes');

const nodeRef = z.object({ nodeId: z.string().min(1), lifecycleGeneration: z.number().int().nonnegative() });

export const envelopeSchema = z.object({
  id: z.string().min(1),
  to: z.string().regex(/^[as]:.+/),
  gen: z.number().int().nonnegative(),
  body: bytes,
  from: nodeRef,
  req: z.literal(1).optional(),
  place: z.string().min(1).optional(),
  hops: z.number().int().nonnegative().optional(),
  seq: z.number().int().nonnegative().optional(),
  moved: z.literal(1).optional(),
});

const msg = z.object({ t: z.literal('msg'), env: envelopeSchema });
const bounce = z.object({ t: z.literal('bounce'), env: envelopeSchema });
const reply = z.object({
  t: z.literal('reply'),
  id: z.string().min(1),
  ok: z.boolean(),
  value: bytes.optional(),
  error: z.string().optional(),
  kind: z.enum(['handler', 'not-found', 'stale-generation', 'unavailable', 'shutdown']).optional(),
});
/** Relocation protocol messages are validated by runtime/relocation/protocol.ts. */
const control = z.object({ t: z.string().regex(/^r\./) }).passthrough();

const runtimeMessage = z.union([msg, bounce, reply, control]);
export type RuntimeMessageParsed = z.infer<typeof runtimeMessage>;
export type ReplyMessage = z.infer<typeof reply>;

export function parseRuntimeMessage(raw: unknown): RuntimeMessageParsed | undefined {
  const parsed = runtimeMessage.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}
