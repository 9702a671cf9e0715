/**
 * Codec choice by measurement (DESIGN.md "Values and delivery"): v8.serialize (platform) against msgpackr with its
 * record + structured-clone extensions, configured as runtime/codec.ts uses it. Round trip (encode + decode) of
 * typical values, ns per op, median of --runs; plus encoded sizes.   npm run bench:codec -- --runs 5
 */
import { deserialize, serialize } from 'node:v8';
import { parseArgs } from 'node:util';
import { decodeValue, encodeValue } from '../../runtime/codec';
import { decodePayload, encodePayload, PAYLOAD_VERSION, type UnitPayload } from '../../runtime/relocation/payload';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' }, ops: { type: 'string', default: '100000' }, only: { type: 'string' } } });
const runs = Number(values.runs);
const ops = Number(values.ops);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const cases: Record<string, () => unknown> = {
  'small message {op,by,note}': () => ({ op: 'add', by: 1, note: 'hello' }),
  '100-byte text message': () => ({ t: 'm', i: 1, p: 'x'.repeat(80) }),
  'exotic (Buffer, Date, Map, Set, BigInt, undefined)': () => ({ b: Buffer.alloc(16, 1), d: new Date(5), m: new Map([[1, 'a']]), s: new Set([1, 2]), n: 2n ** 70n, u: undefined }),
  'list of 100 records': () => ({ list: Array.from({ length: 100 }, (_, i) => ({ id: i, name: `n${i}`, score: i * 1.5, tags: ['a', 'b'] })) }),
  '64 KiB Buffer': () => ({ blob: Buffer.alloc(64 * 1024, 7) }),
};

const codecs: Record<string, { enc: (v: unknown) => Uint8Array; dec: (b: Uint8Array) => unknown }> = {
  'v8.serialize': { enc: (v) => serialize(v), dec: (b) => deserialize(b) },
  'msgpackr (runtime/codec)': { enc: (v) => encodeValue(v, 'message'), dec: (b) => decodeValue(b) },
};

const rows: { case: string; codec: string; nsPerRoundTrip: number; bytes: number }[] = [];
for (const [caseName, make] of values.only === 'payload' ? [] : Object.entries(cases)) {
  const value = make();
  const n = caseName.includes('KiB') || caseName.includes('list') ? Math.max(1000, ops / 20) : ops;
  for (const [codecName, c] of Object.entries(codecs)) {
    const samples: number[] = [];
    for (let r = 0; r < runs; r++) {
      for (let i = 0; i < Math.min(n, 5000); i++) c.dec(c.enc(value)); // warm-up
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) c.dec(c.enc(value));
      samples.push(Number(process.hrtime.bigint() - t0) / n);
    }
    rows.push({ case: caseName, codec: codecName, nsPerRoundTrip: Math.round(median(samples)), bytes: c.enc(value).length });
  }
}
if (rows.length > 0) {
  console.table(rows);
  console.log(JSON.stringify(rows));
}

/**
 * Unit payload encode and decode (runtime/relocation/payload.ts, issue [6/10]: state bytes stay bytes, no zod on the
 * hot path), µs per payload, median of --runs. Two cases: the common one (one object with 1 KiB of state bytes, one
 * timer, an empty queue) and a richer one (a SpotWide unit: three objects, spots, timers, extension state, queued
 * messages and a pending tick).   npm run bench:codec -- --only payload --runs 9
 * Measured (Node 20, 2 shared cores under load; median of 5 interleaved runs of --runs 9 --ops 100000), payload
 * version 2 (MessagePack + hand validator) → version 3 (binary layout): 1 KiB case encode 2.37 → 1.05 µs, decode
 * 2.87 → 0.83 µs; SpotWide case encode 10.8 → 6.7 µs, decode 11.5 → 6.7 µs, of which the two queued envelopes
 * (still MessagePack) are about 4.3 µs to encode and 4.5 µs to decode (the same unit with an empty queue: 2.4, 2.2).
 */
const message = (id: string, to: string) => ({ id, to, gen: 2, body: encodeValue({ say: 'hi', n: 1 }, 'message'), from: { nodeId: 'node-a', lifecycleGeneration: 3 }, req: 1 as const, seq: 17 });
const payloads: Record<string, UnitPayload> = {
  '1 object, 1 KiB state, 1 timer': {
    v: PAYLOAD_VERSION,
    unit: 'u:actor-1',
    kind: 'actor',
    objects: [{ key: 'a:actor-1', type: 'counter', gen: 1, auth: 3, mode: 'entry', state: Buffer.alloc(1024, 7), timers: [{ name: 'tick', remainingMs: 250, periodMs: 500 }] }],
    queue: [],
  },
  'SpotWide: 3 objects, timers, ext, 2 msgs + 1 tick': {
    v: PAYLOAD_VERSION,
    unit: 'u:room-1',
    kind: 'spotWide',
    objects: [
      { key: 's:room-1', type: 'room', gen: 4, auth: 9, mode: 'SpotWide', state: Buffer.alloc(512, 1), timers: [{ name: 'tick', remainingMs: 250, periodMs: 500 }, { name: 'once', remainingMs: 12.5 }], ext: { sessions: Buffer.alloc(40, 2) } },
      { key: 'a:alice', type: 'member', gen: 1, auth: 9, mode: 'member', spot: 'room-1', state: Buffer.alloc(128, 3), timers: [] },
      { key: 'a:bob', type: 'member', gen: 2, auth: 9, mode: 'member', spot: 'room-1', state: Buffer.alloc(128, 4), timers: [{ name: 'idle', remainingMs: 30_000 }] },
    ],
    queue: [
      { k: 'msg', to: 's:room-1', env: message('2b7c4f0e-1d7a-4c3e-9a55-0f1c2d3e4f50', 's:room-1') },
      { k: 'tick', to: 's:room-1', name: 'tick' },
      { k: 'msg', to: 'a:bob', env: message('9e8d7c6b-5a49-4837-a625-14f3e2d1c0b9', 'a:bob') },
    ],
  },
};
const payloadRows: { case: string; usPerEncode: number; usPerDecode: number; bytes: number }[] = [];
const usPerOp = (run: () => unknown): number => {
  const samples: number[] = [];
  for (let r = 0; r < runs; r++) {
    for (let i = 0; i < 20_000; i++) run(); // warm-up
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < ops; i++) run();
    samples.push(Number(process.hrtime.bigint() - t0) / ops / 1000);
  }
  return Number(median(samples).toFixed(3));
};
for (const [name, payload] of Object.entries(payloads)) {
  const encoded = encodePayload(payload);
  payloadRows.push({ case: name, usPerEncode: usPerOp(() => encodePayload(payload)), usPerDecode: usPerOp(() => decodePayload(encoded)), bytes: encoded.length });
}
console.table(payloadRows);
console.log(JSON.stringify(payloadRows));
