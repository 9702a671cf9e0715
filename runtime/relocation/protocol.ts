/**
 * Relocation protocol messages between a source unit and its target unit (runtime messages `r.*`), validated
 * on receipt. The `t` values are wire values: they come from RELOCATION_MESSAGE only.
 */
import { z } from 'zod';
import { envelopeSchema } from '../protocol';

export const RELOCATION_MESSAGE = {
  /** Source → target: register the temporary queue(s) for these objects (before the seal, §8). */
  prepare: 'r.prepare',
  /** Target → source: temporary queue registered. */
  prepared: 'r.prepared',
  /** Target → source: explicit failure before relay-ready (§11), with a RelocationReason. */
  fail: 'r.fail',
  /** Target → source: payload verified and restored — the relay-ready reply (§13). */
  ready: 'r.ready',
  /** Source → target: pre-boundary relay batch and one-way cutover (also its retransmission, §13). */
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
export const cutoverSchema = z.object({
  t: z.literal(RELOCATION_MESSAGE.cutover),
  u: z.string().min(1),
  relay: z.array(envelopeSchema),
  retransmit: z.boolean().optional(),
});
export const abortSchema = z.object({ t: z.literal(RELOCATION_MESSAGE.abort), u: z.string().min(1) });

export type PrepareMessage = z.infer<typeof prepareSchema>;
export type CutoverMessage = z.infer<typeof cutoverSchema>;

const relocationMessage = z.discriminatedUnion('t', [prepareSchema, preparedSchema, failSchema, readySchema, cutoverSchema, abortSchema]);
export type RelocationMessage = z.infer<typeof relocationMessage>;

export function parseRelocationMessage(raw: unknown): RelocationMessage | undefined {
  const parsed = relocationMessage.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}
