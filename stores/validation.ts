/**
 * Request validation shared by both providers: a zod schema per request type. Bad input is a caller bug, so it
 * throws TypeError naming the field before anything is written (task rule; mirrors RelocationArgumentError).
 */
import { z } from 'zod';

/**
 * Generations stay below 2^46: Redis Lua numbers are doubles printed with 14 significant digits (cjson and
 * tostring), so larger integers would not survive a round trip through a script.
 */
export const MAX_GENERATION = 2 ** 46;

const id = z.string().min(1).max(4096);
const generation = z.number().int().min(0).max(MAX_GENERATION);
const opId = z.string().min(1).max(256);
const kind = z.enum(['actor', 'spot']);

export const objectIdSchema = z.object({ kind, id }).strict();
export const nodeRefSchema = z.object({ nodeId: id, lifecycleGeneration: generation }).strict();

/** Membership fields are Actor-only, and spotWide only means something together with the spot it describes. */
function membershipRules(value: { object: { kind: string }; spot?: string | null; spotWide?: boolean }, ctx: z.RefinementCtx): void {
  if (value.object.kind === 'spot' && (value.spot !== undefined || value.spotWide !== undefined))
    ctx.addIssue({ code: 'custom', path: ['spot'], message: 'applies to actors only' });
  if (value.spotWide !== undefined && value.spot === undefined)
    ctx.addIssue({ code: 'custom', path: ['spotWide'], message: 'is only read together with spot' });
  if (value.spotWide === true && value.spot === null)
    ctx.addIssue({ code: 'custom', path: ['spotWide'], message: 'true needs the spot id it describes, not null' });
}

export const claimSchema = z
  .object({ object: objectIdSchema, type: id, owner: nodeRefSchema, opId, spot: id.optional(), spotWide: z.boolean().optional() })
  .strict()
  .superRefine(membershipRules);

export const casSchema = z
  .object({
    object: objectIdSchema,
    opId,
    expectedAuthorityGeneration: generation,
    owner: nodeRefSchema.optional(),
    spot: id.nullable().optional(),
    spotWide: z.boolean().optional(),
  })
  .strict()
  .superRefine(membershipRules);

/**
 * A CAS request checked without zod when it has the plain shape the runtime sends (no membership change): the
 * target's owner commits are ~10k calls per 10k-unit move (issue [6/10]: zod was ~5% of the target's CPU). Anything
 * else goes through `casSchema`, so a bad request gets exactly the schema's error.
 */
export function parseCas(value: unknown, what: string): z.infer<typeof casSchema> {
  return isPlainCas(value) ? value : parse(casSchema, value, what);
}

const isId = (v: unknown): v is string => typeof v === 'string' && v.length >= 1 && v.length <= 4096;
const isGeneration = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= MAX_GENERATION;
const hasOnly = (v: object, keys: readonly string[]): boolean => {
  for (const k in v) if (!keys.includes(k)) return false;
  return true;
};

const isOpId = (v: unknown): v is string => typeof v === 'string' && v.length >= 1 && v.length <= 256;
const isPlainObjectId = (o: unknown): boolean => {
  const r = o as Record<string, unknown> | null;
  return typeof r === 'object' && r !== null && hasOnly(r, ['kind', 'id']) && (r.kind === 'actor' || r.kind === 'spot') && isId(r.id);
};
const isPlainNodeRef = (n: unknown): boolean => {
  const r = n as Record<string, unknown> | null;
  return typeof r === 'object' && r !== null && hasOnly(r, ['nodeId', 'lifecycleGeneration']) && isId(r.nodeId) && isGeneration(r.lifecycleGeneration);
};

function isPlainCas(v: unknown): v is z.infer<typeof casSchema> {
  if (typeof v !== 'object' || v === null || !hasOnly(v, ['object', 'opId', 'expectedAuthorityGeneration', 'owner'])) return false;
  const r = v as Record<string, unknown>;
  return isPlainObjectId(r.object) && isOpId(r.opId) && isGeneration(r.expectedAuthorityGeneration) && (r.owner === undefined || isPlainNodeRef(r.owner));
}

export const removeSchema = z.object({ object: objectIdSchema, opId, expectedAuthorityGeneration: generation }).strict();

export const ownerCommitSchema = z
  .object({
    opId,
    owner: nodeRefSchema,
    entries: z.array(z.object({ object: objectIdSchema, expectedAuthorityGeneration: generation, objectGeneration: generation }).strict()).min(1),
  })
  .strict();

/**
 * An owner commit checked without zod when every field has the shape the runtime sends (a relocation commits 100k
 * objects in ~1,600 calls); anything else goes through `ownerCommitSchema`, so a bad request gets the schema's error.
 */
export function parseOwnerCommit(value: unknown, what: string): z.infer<typeof ownerCommitSchema> {
  return isPlainCommit(value) ? value : parse(ownerCommitSchema, value, what);
}

function isPlainCommit(v: unknown): v is z.infer<typeof ownerCommitSchema> {
  if (typeof v !== 'object' || v === null || !hasOnly(v, ['opId', 'owner', 'entries'])) return false;
  const r = v as Record<string, unknown>;
  if (!isOpId(r.opId) || !isPlainNodeRef(r.owner) || !Array.isArray(r.entries) || r.entries.length === 0) return false;
  for (const e of r.entries as unknown[]) {
    if (typeof e !== 'object' || e === null || !hasOnly(e, ['object', 'expectedAuthorityGeneration', 'objectGeneration'])) return false;
    const x = e as Record<string, unknown>;
    if (!isPlainObjectId(x.object) || !isGeneration(x.expectedAuthorityGeneration) || !isGeneration(x.objectGeneration)) return false;
  }
  return true;
}

/** §10.3: a non-zero 128-bit id as 32 hex digits. */
const relocationId = z
  .string()
  .regex(/^[0-9a-f]{32}$/, 'must be 32 lowercase hex digits')
  .refine((value) => !/^0+$/.test(value), 'must be non-zero');
const spotObject = objectIdSchema.refine((value) => value.kind === 'spot', 'must be a spot');

export const stageSchema = z
  .object({
    relocationId,
    spot: spotObject,
    expectedSpotAuthorityGeneration: generation,
    members: z.array(
      z
        .object({
          object: objectIdSchema.refine((value) => value.kind === 'actor', 'SpotWide members are actors'),
          expectedAuthorityGeneration: generation,
        })
        .strict(),
    ),
    opId,
  })
  .strict()
  .superRefine((value, ctx) => {
    const seen = new Set<string>();
    value.members.forEach((member, index) => {
      if (seen.has(member.object.id)) ctx.addIssue({ code: 'custom', path: ['members', index, 'object', 'id'], message: 'duplicate member' });
      seen.add(member.object.id);
    });
  });

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'must be a sha256 hex digest');
export const headerSchema = z
  .object({ relocationId, total: z.number().int().min(0), pageChecksums: z.array(sha256Hex) })
  .strict();
export const commitSchema = z
  .object({ relocationId, spot: spotObject, owner: nodeRefSchema, opId, header: headerSchema })
  .strict();
export const discardSchema = z.object({ relocationId, spot: spotObject }).strict();

const capability = z
  .object({
    type: id,
    kind: z.enum(['actor', 'user', 'instance']),
    policy: z.enum(['preserve', 'recreate', 'disable']),
    adapter: z.string().optional(),
    executionMode: z.enum(['SpotWide', 'PerActor']).optional(),
  })
  .strict();
const count = z.number().int().min(0);
export const descriptorSchema = z
  .object({
    nodeId: id,
    lifecycleGeneration: generation,
    applicationVersion: count,
    state: z.number().int().min(0).max(6),
    endpoints: z.record(z.string(), z.string()),
    types: z.array(capability),
    capacity: count,
    load: count,
    weight: z.number().min(0),
    maintenanceWave: z.string().optional(),
    /** Each host component's published fields (runtime/components), checked by that component when read. */
    components: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export const leaseSchema = z.object({ nodeId: id, lifecycleGeneration: generation, token: z.string().min(16) }).strict();
export const leaseMsSchema = z.number().int().min(1);
export const nodeIdSchema = id;

export const instanceCreationSchema = z
  .object({ spotId: id, type: id, owner: nodeRefSchema, objectGeneration: generation, createdAt: z.number().int().min(0) })
  .strict();
export const terminalSchema = z.object({ ok: z.boolean(), value: z.unknown().optional(), error: z.string().optional() }).strict();
export const opIdSchema = opId;
export const channelSchema = id;
export const channelMemberSchema = z.object({ spot: id, type: id.optional() }).strict();
export const ttlMsSchema = z.number().int().min(1);
export const spotIdSchema = id;
export const generationSchema = generation;

/** Parses or throws TypeError("<what>: field '<path>' <rule>"). */
export function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.length > 0 ? issue.path.join('.') : '(value)';
  throw new TypeError(`${what}: field '${field}' ${issue.message}`);
}
