import { decodeValue, encodeValue } from '../codec';
import { decodePayload, encodePayload, PAYLOAD_VERSION, type UnitPayload } from './payload';

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

test('encode → decode round-trips a payload, queue order included', () => {
  const bytes = encodePayload(payload);
  expect(Buffer.isBuffer(bytes)).toBe(true);
  const decoded = decodePayload(bytes);
  expect(decoded).toEqual(payload);
  expect(decoded.queue.map((q) => (q.k === 'msg' ? q.env.id : q.name))).toEqual(['op-1', 'tick', 'op-2']);
  expect(Buffer.from(decoded.objects[0]!.state!).toString()).toBe('{"topic":"héllo ✓"}');
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

test.each(['actor', 'perActorShell', 'instance'] as const)('a %s payload round-trips', (kind) => {
  const p: UnitPayload = { ...payload, kind, objects: [{ key: 'a:x', type: 't', gen: 0, auth: 0, mode: 'entry', timers: [] }], queue: [] };
  expect(decodePayload(encodePayload(p))).toEqual(p);
});

/** Encodes `p` after a change (bypassing the type), for the rejection cases. */
const mutated = (change: (p: Record<string, any>) => void) => {
  const copy = structuredClone(payload) as Record<string, any>;
  change(copy);
  return encodePayload(copy as UnitPayload);
};

test.each([
  ['a newer version', mutated((p) => (p.v = PAYLOAD_VERSION + 1))],
  ['an older version', mutated((p) => (p.v = 0))],
  ['no version', mutated((p) => delete p.v)],
  ['a version as a string', mutated((p) => (p.v = String(PAYLOAD_VERSION)))],
  ['an empty unit id', mutated((p) => (p.unit = ''))],
  ['an unknown kind', mutated((p) => (p.kind = 'spot'))],
  ['no objects', mutated((p) => (p.objects = []))],
  ['an object key without a kind prefix', mutated((p) => (p.objects[0].key = 'room-1'))],
  ['a negative generation', mutated((p) => (p.objects[0].gen = -1))],
  ['a fractional authority generation', mutated((p) => (p.objects[0].auth = 1.5))],
  ['an unknown hosted mode', mutated((p) => (p.objects[0].mode = 'spotwide'))],
  ['timers missing', mutated((p) => delete p.objects[1].timers)],
  ['a timer with negative remaining time', mutated((p) => (p.objects[0].timers[1].remainingMs = -1))],
  ['a timer with a zero period', mutated((p) => (p.objects[0].timers[0].periodMs = 0))],
  ['a queue item of an unknown kind', mutated((p) => (p.queue[1].k = 'ctl'))],
  ['a message without an envelope', mutated((p) => delete p.queue[0].env)],
  ['an envelope without a sender', mutated((p) => delete p.queue[0].env.from)],
  ['an envelope with an empty operation id', mutated((p) => (p.queue[0].env.id = ''))],
  ['a tick without a name', mutated((p) => (p.queue[1].name = ''))],
  ['a queue that is not an array', mutated((p) => (p.queue = {}))],
  ['a body that is not bytes', mutated((p) => (p.queue[0].env.body = { say: 'hi' }))],
  ['state as base64 text (version 1)', mutated((p) => (p.objects[0].state = 'eyJ9'))],
  ['not JSON', Buffer.from('{"v":1,')],
  ['JSON null', Buffer.from('null')],
  ['a JSON array', Buffer.from('[]')],
  ['empty bytes', Buffer.alloc(0)],
  ['random bytes', Buffer.from([0xff, 0x00, 0x13, 0x37])],
])('decode rejects %s', (_name, bytes) => {
  expect(() => decodePayload(bytes)).toThrow();
});
