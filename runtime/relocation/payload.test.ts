import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { z } from 'zod';
import { decodeValue, encodeValue } from '../codec';
import { envelopeSchema } from '../protocol';
import { decodePayload, encodePayload, PAYLOAD_VERSION, PayloadError, type UnitPayload } from './payload';

const from = { nodeId: 'src', lifecycleGeneration: 2 };

const payload: UnitPayload = {
  v: PAYLOAD_VERSION,
  unit: 'u:room-1',
  kind: 'spotWide',
  objects: [
    {
      key: 's:room-1',
      type: 'room',
      gen: 1,
      auth: 7,
      mode: 'SpotWide',
      state: Buffer.from(JSON.stringify({ topic: 'héllo ✓' })),
      timers: [
        { name: 'tick', remainingMs: 450, periodMs: 500 },
        { name: 'once', remainingMs: 0 },
      ],
    },
    { key: 'a:alice', type: 'member', gen: 3, auth: 8, mode: 'member', spot: 'room-1', timers: [] },
  ],
  queue: [
    { k: 'msg', to: 's:room-1', env: { id: 'op-1', to: 's:room-1', gen: 1, body: encodeValue({ say: 'hi', n: [1, 2, { deep: null }], at: new Date(5), m: new Map([[1, 2n]]), u: undefined }, 'message'), from, req: 1 } },
    { k: 'tick', to: 's:room-1', name: 'tick' },
    { k: 'msg', to: 'a:alice', env: { id: 'op-2', to: 'a:alice', gen: 3, body: encodeValue('plain', 'message'), from, hops: 1 } },
  ],
};

/**
 * The zod schema payload.ts used before issue [6/10] (zod left the hot path): the oracle the hand-written decoder
 * must agree with — the same payloads accepted, the same value returned.
 */
const formerSchema = z.object({
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

/** The same MessagePack options as payload.ts, to see what the decoder was given. */
const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

/** decodePayload, or the error it threw — which must be a PayloadError, never a TypeError, RangeError, … */
function attempt(bytes: Buffer): { ok: true; value: UnitPayload } | { ok: false; error: PayloadError } {
  try {
    return { ok: true, value: decodePayload(bytes) };
  } catch (error) {
    expect(error).toBeInstanceOf(PayloadError);
    expect((error as Error).constructor).toBe(PayloadError);
    return { ok: false, error: error as PayloadError };
  }
}

/** The decoder and the former schema agree on `bytes`: both refuse, or both accept with the same value. */
function agreesWithFormerSchema(bytes: Buffer): void {
  const got = attempt(bytes);
  let raw: unknown;
  try {
    raw = packr.unpack(bytes);
  } catch {
    expect(got.ok).toBe(false);
    return;
  }
  const former = formerSchema.safeParse(raw);
  expect(got.ok).toBe(former.success);
  if (got.ok && former.success) expect(got.value).toStrictEqual(former.data);
}

describe('round trips', () => {
  test('encode → decode round-trips a payload, queue order included', () => {
    const bytes = encodePayload(payload);
    expect(Buffer.isBuffer(bytes)).toBe(true);
    const decoded = decodePayload(bytes);
    expect(decoded).toEqual(payload);
    expect(decoded.queue.map((q) => (q.k === 'msg' ? q.env.id : q.name))).toEqual(['op-1', 'tick', 'op-2']);
    expect(Buffer.from(decoded.objects[0]!.state!).toString()).toBe('{"topic":"héllo ✓"}');
    expect(decoded.objects[0]!.timers).toEqual([
      { name: 'tick', remainingMs: 450, periodMs: 500 },
      { name: 'once', remainingMs: 0 },
    ]);
  });

  test('state bytes and queued bodies come back byte-exact, as raw bytes (no base64, no JSON of bytes)', () => {
    const bytes = encodePayload(payload);
    const decoded = decodePayload(bytes);
    for (let i = 0; i < payload.queue.length; i++) {
      const a = payload.queue[i]!;
      const b = decoded.queue[i]!;
      if (a.k === 'msg' && b.k === 'msg') {
        expect(Buffer.from(b.env.body).equals(Buffer.from(a.env.body))).toBe(true);
        expect(bytes.includes(Buffer.from(a.env.body))).toBe(true);
      }
    }
    const first = decoded.queue[0]!;
    if (first.k !== 'msg') throw new Error('msg expected');
    expect(decodeValue(first.env.body)).toEqual({ say: 'hi', n: [1, 2, { deep: null }], at: new Date(5), m: new Map([[1, 2n]]), u: undefined });
    expect(bytes.includes(Buffer.from(payload.objects[0]!.state!))).toBe(true);
  });

  test('every byte value of the state survives (binary state, not text)', () => {
    const state = Buffer.from(Array.from({ length: 1024 }, (_, i) => i % 256));
    const p: UnitPayload = { ...payload, objects: [{ key: 'a:bin', type: 't', gen: 0, auth: 0, mode: 'entry', state, timers: [] }], queue: [] };
    const decoded = decodePayload(encodePayload(p)).objects[0]!.state!;
    expect(decoded).toBeInstanceOf(Uint8Array);
    expect(Buffer.compare(Buffer.from(decoded), state)).toBe(0);
  });

  test.each(['actor', 'perActorShell', 'instance'] as const)('a %s payload round-trips', (kind) => {
    const p: UnitPayload = { ...payload, kind, objects: [{ key: 'a:x', type: 't', gen: 0, auth: 0, mode: 'entry', timers: [] }], queue: [] };
    expect(decodePayload(encodePayload(p))).toEqual(p);
  });

  test('unknown fields are dropped, except inside an envelope (kept as it came, as before)', () => {
    const bytes = mutated((p) => {
      p.extra = 1;
      p.objects[0].extra = 'x';
      p.objects[0].timers[0].extra = true;
      p.queue[1].extra = [];
      p.queue[0].extra = {};
      p.queue[0].env.trace = 'kept';
    });
    const decoded = decodePayload(bytes) as unknown as Record<string, any>;
    expect(decoded).not.toHaveProperty('extra');
    expect(decoded.objects[0]).not.toHaveProperty('extra');
    expect(decoded.objects[0].timers[0]).not.toHaveProperty('extra');
    expect(decoded.queue[1]).not.toHaveProperty('extra');
    expect(decoded.queue[0]).not.toHaveProperty('extra');
    expect(decoded.queue[0].env.trace).toBe('kept');
    agreesWithFormerSchema(bytes);
  });

  test('large and fractional numbers where allowed: safe integers, finite times', () => {
    const p: UnitPayload = {
      ...payload,
      objects: [{ key: 's:x', type: 't', gen: Number.MAX_SAFE_INTEGER, auth: 2 ** 40, mode: 'SpotWide', timers: [{ name: 't', remainingMs: 0.25, periodMs: 1e-3 }] }],
      queue: [],
    };
    expect(decodePayload(encodePayload(p))).toEqual(p);
  });
});

/** Encodes `p` after a change (bypassing the type), for the rejection cases. */
function mutated(change: (p: Record<string, any>) => void): Buffer {
  const copy = structuredClone(payload) as Record<string, any>;
  // structuredClone turns Buffers into Uint8Arrays; put the originals back.
  copy.objects[0].state = payload.objects[0]!.state;
  change(copy);
  return encodePayload(copy as UnitPayload);
}

describe('rejections name the field and the rule', () => {
  test.each([
    ['a newer version', mutated((p) => (p.v = PAYLOAD_VERSION + 1)), /^payload\.v must be 2/],
    ['an older version', mutated((p) => (p.v = 0)), /^payload\.v must be 2/],
    ['no version', mutated((p) => delete p.v), /^payload\.v must be 2/],
    ['a version as a string', mutated((p) => (p.v = String(PAYLOAD_VERSION))), /^payload\.v must be 2/],
    ['no unit id', mutated((p) => delete p.unit), /^payload\.unit must be a non-empty string$/],
    ['an empty unit id', mutated((p) => (p.unit = '')), /^payload\.unit must be a non-empty string$/],
    ['a unit id as a number', mutated((p) => (p.unit = 7)), /^payload\.unit must be a non-empty string$/],
    ['an unknown kind', mutated((p) => (p.kind = 'spot')), /^payload\.kind must be one of actor, perActorShell, spotWide, instance$/],
    ['no objects', mutated((p) => (p.objects = [])), /^payload\.objects must be a non-empty array$/],
    ['objects missing', mutated((p) => delete p.objects), /^payload\.objects must be a non-empty array$/],
    ['objects as a map', mutated((p) => (p.objects = { 0: p.objects[0] })), /^payload\.objects must be a non-empty array$/],
    ['an object that is not a map', mutated((p) => (p.objects[1] = 'a:alice')), /^payload\.objects\[1\] must be a map$/],
    ['an object that is null', mutated((p) => (p.objects[0] = null)), /^payload\.objects\[0\] must be a map$/],
    ['an object key without a kind prefix', mutated((p) => (p.objects[0].key = 'room-1')), /^payload\.objects\[0\]\.key must be an object key/],
    ['an object key of another kind', mutated((p) => (p.objects[1].key = 'x:alice')), /^payload\.objects\[1\]\.key must be an object key/],
    ['an object key with an empty id', mutated((p) => (p.objects[1].key = 'a:')), /^payload\.objects\[1\]\.key must be an object key/],
    ['an object key whose id starts with a line break', mutated((p) => (p.objects[1].key = 'a:\nalice')), /^payload\.objects\[1\]\.key must be an object key/],
    ['an object key with an upper-case prefix', mutated((p) => (p.objects[1].key = 'A:alice')), /^payload\.objects\[1\]\.key must be an object key/],
    ['an empty type', mutated((p) => (p.objects[1].type = '')), /^payload\.objects\[1\]\.type must be a non-empty string$/],
    ['a negative generation', mutated((p) => (p.objects[0].gen = -1)), /^payload\.objects\[0\]\.gen must be a non-negative safe integer$/],
    ['a generation as a string', mutated((p) => (p.objects[0].gen = '1')), /^payload\.objects\[0\]\.gen must be a non-negative safe integer$/],
    ['a generation beyond safe integers', mutated((p) => (p.objects[0].gen = 2 ** 53)), /^payload\.objects\[0\]\.gen must be a non-negative safe integer$/],
    ['a fractional authority generation', mutated((p) => (p.objects[0].auth = 1.5)), /^payload\.objects\[0\]\.auth must be a non-negative safe integer$/],
    ['a negative authority generation', mutated((p) => (p.objects[1].auth = -8)), /^payload\.objects\[1\]\.auth must be a non-negative safe integer$/],
    ['an unknown hosted mode', mutated((p) => (p.objects[0].mode = 'spotwide')), /^payload\.objects\[0\]\.mode must be one of entry, member, SpotWide, PerActor, instance$/],
    ['a spot id that is not a string', mutated((p) => (p.objects[1].spot = 5)), /^payload\.objects\[1\]\.spot must be a string when present$/],
    ['state as base64 text (version 1)', mutated((p) => (p.objects[0].state = 'eyJ9')), /^payload\.objects\[0\]\.state must be bytes when present$/],
    ['state as an array of numbers', mutated((p) => (p.objects[0].state = [1, 2, 3])), /^payload\.objects\[0\]\.state must be bytes when present$/],
    ['state as null', mutated((p) => (p.objects[0].state = null)), /^payload\.objects\[0\]\.state must be bytes when present$/],
    ['timers missing', mutated((p) => delete p.objects[1].timers), /^payload\.objects\[1\]\.timers must be an array$/],
    ['a timer that is not a map', mutated((p) => (p.objects[0].timers[1] = 'once')), /^payload\.objects\[0\]\.timers\[1\] must be a map$/],
    ['a timer without a name', mutated((p) => delete p.objects[0].timers[0].name), /^payload\.objects\[0\]\.timers\[0\]\.name must be a non-empty string$/],
    ['a timer with negative remaining time', mutated((p) => (p.objects[0].timers[1].remainingMs = -1)), /^payload\.objects\[0\]\.timers\[1\]\.remainingMs must be a non-negative number$/],
    ['a timer with no remaining time', mutated((p) => delete p.objects[0].timers[1].remainingMs), /^payload\.objects\[0\]\.timers\[1\]\.remainingMs must be a non-negative number$/],
    ['a timer with infinite remaining time', mutated((p) => (p.objects[0].timers[1].remainingMs = Infinity)), /^payload\.objects\[0\]\.timers\[1\]\.remainingMs must be a non-negative number$/],
    ['a timer with NaN remaining time', mutated((p) => (p.objects[0].timers[1].remainingMs = NaN)), /^payload\.objects\[0\]\.timers\[1\]\.remainingMs must be a non-negative number$/],
    ['a timer with a zero period', mutated((p) => (p.objects[0].timers[0].periodMs = 0)), /^payload\.objects\[0\]\.timers\[0\]\.periodMs must be a positive number when present$/],
    ['a timer with a negative period', mutated((p) => (p.objects[0].timers[0].periodMs = -500)), /^payload\.objects\[0\]\.timers\[0\]\.periodMs must be a positive number when present$/],
    ['a timer with a period as a string', mutated((p) => (p.objects[0].timers[0].periodMs = '500')), /^payload\.objects\[0\]\.timers\[0\]\.periodMs must be a positive number when present$/],
    ['a queue that is not an array', mutated((p) => (p.queue = {})), /^payload\.queue must be an array$/],
    ['no queue', mutated((p) => delete p.queue), /^payload\.queue must be an array$/],
    ['a queue item that is not a map', mutated((p) => (p.queue[2] = 7)), /^payload\.queue\[2\] must be a map$/],
    ['a queue item of an unknown kind', mutated((p) => (p.queue[1].k = 'ctl')), /^payload\.queue\[1\]\.k must be 'msg' or 'tick'$/],
    ['a queue item without a kind', mutated((p) => delete p.queue[1].k), /^payload\.queue\[1\]\.k must be 'msg' or 'tick'$/],
    ['a message without a recipient', mutated((p) => delete p.queue[0].to), /^payload\.queue\[0\]\.to must be a string$/],
    ['a tick with a recipient as a number', mutated((p) => (p.queue[1].to = 1)), /^payload\.queue\[1\]\.to must be a string$/],
    ['a message without an envelope', mutated((p) => delete p.queue[0].env), /^payload\.queue\[0\]\.env must be an envelope/],
    ['an envelope without a sender', mutated((p) => delete p.queue[0].env.from), /^payload\.queue\[0\]\.env must be an envelope/],
    ['an envelope with an empty operation id', mutated((p) => (p.queue[0].env.id = '')), /^payload\.queue\[0\]\.env must be an envelope/],
    ['an envelope to a key without a prefix', mutated((p) => (p.queue[2].env.to = 'alice')), /^payload\.queue\[2\]\.env must be an envelope/],
    ['an envelope with a negative generation', mutated((p) => (p.queue[2].env.gen = -3)), /^payload\.queue\[2\]\.env must be an envelope/],
    ['a body that is not bytes', mutated((p) => (p.queue[0].env.body = { say: 'hi' })), /^payload\.queue\[0\]\.env must be an envelope/],
    ['a tick without a name', mutated((p) => (p.queue[1].name = '')), /^payload\.queue\[1\]\.name must be a non-empty string$/],
    ['not MessagePack: JSON text', Buffer.from('{"v":1,'), /^payload /],
    ['JSON null', Buffer.from('null'), /^payload /],
    ['a JSON array', Buffer.from('[]'), /^payload /],
    ['empty bytes', Buffer.alloc(0), /^payload is not MessagePack/],
    ['random bytes', Buffer.from([0xff, 0x00, 0x13, 0x37]), /^payload /],
    ['a MessagePack array', packr.pack([payload]), /^payload must be a map$/],
    ['MessagePack nil', packr.pack(null), /^payload must be a map$/],
    ['a payload followed by more bytes', Buffer.concat([encodePayload(payload), Buffer.from([0])]), /^payload is not MessagePack/],
    ['a truncated payload', encodePayload(payload).subarray(0, 40), /^payload is not MessagePack/],
  ])('decode rejects %s', (_name, bytes, message) => {
    const got = attempt(bytes);
    expect(got.ok).toBe(false);
    if (!got.ok) expect(got.error.message).toMatch(message);
    agreesWithFormerSchema(bytes);
  });

  test('the path names the failing item deep in the payload', () => {
    const objects = Array.from({ length: 5 }, (_, i) => ({ key: `a:m${i}`, type: 'member', gen: 1, auth: 1, mode: 'member', timers: [{ name: 't', remainingMs: 5 }] }));
    objects[3]!.timers[0]!.remainingMs = -2;
    const bytes = encodePayload({ ...payload, objects } as unknown as UnitPayload);
    expect(() => decodePayload(bytes)).toThrow(new PayloadError('payload.objects[3].timers[0].remainingMs must be a non-negative number'));
  });
});

// ── fuzz ──────────────────────────────────────────────────────────────────────────────────

const idArb = fc.string({ minLength: 1, maxLength: 10 });
const keyArb = fc.tuple(fc.constantFrom('a:', 's:'), idArb).map(([prefix, id]) => prefix + id);
const bytesArb = fc.uint8Array({ maxLength: 64 }).map((u) => Buffer.from(u));
/** Finite, ≥ 0, never -0 (MessagePack has no -0 integer; it would come back as 0). */
const timeArb = fc.double({ min: 0, max: 1e9, noNaN: true }).map((x) => x + 0);
const envArb = fc.record(
  {
    id: idArb,
    to: keyArb,
    gen: fc.nat(),
    body: bytesArb,
    from: fc.record({ nodeId: idArb, lifecycleGeneration: fc.nat() }),
    req: fc.constant(1 as const),
    place: idArb,
    hops: fc.nat({ max: 32 }),
    seq: fc.nat(),
    moved: fc.constant(1 as const),
  },
  { requiredKeys: ['id', 'to', 'gen', 'body', 'from'] },
);
const objectArb = fc.record(
  {
    key: keyArb,
    type: idArb,
    gen: fc.nat(),
    auth: fc.nat(),
    mode: fc.constantFrom('entry', 'member', 'SpotWide', 'PerActor', 'instance'),
    spot: fc.string({ maxLength: 10 }),
    state: bytesArb,
    timers: fc.array(fc.record({ name: idArb, remainingMs: timeArb, periodMs: timeArb.filter((x) => x > 0) }, { requiredKeys: ['name', 'remainingMs'] }), { maxLength: 3 }),
  },
  { requiredKeys: ['key', 'type', 'gen', 'auth', 'mode', 'timers'] },
);
const itemArb = fc.oneof(
  fc.record({ k: fc.constant('msg' as const), to: fc.string({ maxLength: 10 }), env: envArb }),
  fc.record({ k: fc.constant('tick' as const), to: fc.string({ maxLength: 10 }), name: idArb }),
);
const payloadArb: fc.Arbitrary<UnitPayload> = fc.record({
  v: fc.constant(PAYLOAD_VERSION),
  unit: idArb,
  kind: fc.constantFrom('actor', 'perActorShell', 'spotWide', 'instance'),
  objects: fc.array(objectArb, { minLength: 1, maxLength: 4 }),
  queue: fc.array(itemArb, { maxLength: 4 }),
});

/** Near misses of every rule: each field of the sample payload is set to each of these (exhaustive), and the
 * random mutations draw from them too. */
const NEAR_MISSES: readonly unknown[] = [
  -1, 0, -0, 1, 1.5, -0.5, NaN, Infinity, -Infinity, 2 ** 53, Number.MAX_SAFE_INTEGER, PAYLOAD_VERSION, 5n,
  '', 'x', 'a:', 's:', 'a:x', 's:\n', 'a:\r', 'a:\u2028b', 'a:\u2029', 'a:b\n', 'msg', 'tick', 'actor', 'spotWide', 'SpotWide', 'entry', 'member',
  null, undefined, true, false, [], {}, [1], { k: 'msg' }, { nodeId: 'n', lifecycleGeneration: 1 }, Buffer.from([1]), new Uint8Array([2]), new Date(0),
];

/** Values a field may be swapped for: the near misses, and anything at all. */
const oddValueArb: fc.Arbitrary<unknown> = fc.oneof(fc.constantFrom(...NEAR_MISSES), fc.anything({ maxDepth: 2 }));

type Path = (string | number)[];
/** Every field and array item of `v` (bytes are leaves). */
function pathsOf(v: unknown, at: Path = [], out: Path[] = []): Path[] {
  out.push(at);
  if (v instanceof Uint8Array) return out;
  if (Array.isArray(v)) v.forEach((x, i) => pathsOf(x, [...at, i], out));
  else if (typeof v === 'object' && v !== null) for (const k of Object.keys(v)) pathsOf((v as Record<string, unknown>)[k], [...at, k], out);
  return out;
}

type Mutation = { op: 'set' | 'delete' | 'add'; at: number; value: unknown; name: string };
const mutationArb: fc.Arbitrary<Mutation> = fc.record({ op: fc.constantFrom('set', 'delete', 'add'), at: fc.nat(), value: oddValueArb, name: fc.constantFrom('extra', 'v', 'state', 'spot', 'periodMs', 'k', 'env', 'name', 'timers') });

/** Applies a mutation to a structured copy of `p` (bypassing the types), or the root is replaced. */
function applyMutations(p: UnitPayload, mutations: readonly Mutation[]): unknown {
  let root: unknown = cloneWithBuffers(p);
  for (const m of mutations) {
    const paths = pathsOf(root);
    const path = paths[m.at % paths.length]!;
    // A fresh copy each time: the near misses are shared constants, and putting one object in twice (then a field
    // into it) made a cycle and changed the constant for later runs.
    const value = structuredClone(m.value);
    if (path.length === 0) {
      if (m.op === 'set') root = value;
      continue;
    }
    const parent = path.slice(0, -1).reduce<any>((o, k) => o[k], root);
    const key = path[path.length - 1]!;
    if (m.op === 'set') parent[key] = value;
    else if (m.op === 'delete') Array.isArray(parent) ? parent.splice(key as number, 1) : delete parent[key];
    else if (typeof parent === 'object' && parent !== null && !Array.isArray(parent)) parent[m.name] = value;
  }
  return root;
}

function cloneWithBuffers(v: unknown): unknown {
  if (v instanceof Uint8Array) return Buffer.from(v);
  if (Array.isArray(v)) return v.map(cloneWithBuffers);
  if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cloneWithBuffers(x)]));
  return v;
}

/** MessagePack of anything the mutations produced; undefined when msgpackr cannot encode it (then it is no case). */
function tryPack(v: unknown): Buffer | undefined {
  try {
    return packr.pack(v);
  } catch {
    return undefined;
  }
}

describe('fuzz (like transport/frames and parcels)', () => {
  test('every field of a payload set to every near miss, deleted, or joined by an extra field: the decoder and the former schema agree', () => {
    const base = cloneWithBuffers(payload);
    const paths = pathsOf(base);
    let accepted = 0;
    let refused = 0;
    const check = (bytes: Buffer | undefined) => {
      if (!bytes) return;
      agreesWithFormerSchema(bytes);
      if (attempt(bytes).ok) accepted++;
      else refused++;
    };
    for (let at = 0; at < paths.length; at++) {
      for (const value of NEAR_MISSES) check(tryPack(applyMutations(payload, [{ op: 'set', at, value, name: '' }])));
      check(tryPack(applyMutations(payload, [{ op: 'delete', at, value: undefined, name: '' }])));
      check(tryPack(applyMutations(payload, [{ op: 'add', at, value: 1, name: 'extra' }])));
    }
    // Both ways are exercised: optional fields and free strings take many near misses, the rest refuse them.
    expect(accepted).toBeGreaterThan(50);
    expect(refused).toBeGreaterThan(1000);
  });

  test('any valid payload round-trips exactly, and the former schema returns the same', () => {
    fc.assert(
      fc.property(payloadArb, (p) => {
        const bytes = encodePayload(p);
        expect(decodePayload(bytes)).toEqual(p);
        agreesWithFormerSchema(bytes);
      }),
      { numRuns: 500 },
    );
  });

  test('mutated payloads: accepted exactly when the former zod schema accepted them, with the same value; otherwise a PayloadError', () => {
    fc.assert(
      fc.property(payloadArb, fc.array(mutationArb, { minLength: 1, maxLength: 3 }), (p, mutations) => {
        const bytes = tryPack(applyMutations(p, mutations));
        if (bytes) agreesWithFormerSchema(bytes);
      }),
      { numRuns: 3000 },
    );
  });

  test('arbitrary bytes, and valid encodings with a byte changed or cut short: a PayloadError or a payload the former schema accepts', () => {
    const mutatedBytes = fc.tuple(payloadArb, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.nat(), fc.boolean()).map(([p, i, v, cut, truncate]) => {
      const copy = Buffer.from(encodePayload(p));
      copy[i % copy.length] = v;
      return truncate ? copy.subarray(0, cut % (copy.length + 1)) : copy;
    });
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 200 }).map((u) => Buffer.from(u)), mutatedBytes), (bytes) => {
        agreesWithFormerSchema(bytes);
        const got = attempt(bytes);
        if (got.ok) expect(formerSchema.safeParse(got.value).success).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  test('decoding after a refused payload still works (no decoder state left behind)', () => {
    expect(attempt(encodePayload(payload).subarray(0, 17)).ok).toBe(false);
    expect(decodePayload(encodePayload(payload))).toEqual(payload);
  });
});
