/**
 * Codec choice by measurement (DESIGN.md "Values and delivery"): v8.serialize (platform) against msgpackr with its
 * record + structured-clone extensions, configured as runtime/codec.ts uses it. Round trip (encode + decode) of
 * typical values, ns per op, median of --runs; plus encoded sizes.   npm run bench:codec -- --runs 5
 */
import { deserialize, serialize } from 'node:v8';
import { Packr } from 'msgpackr';
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
 * Unit payload decode (runtime/relocation/payload.ts, issue [6/10]: no zod on the hot path), µs per payload,
 * median of --runs: one object with 1 KiB of state bytes, one timer, an empty queue.
 *   npm run bench:codec -- --only payload --runs 9
 * Measured (Node 20, 2 shared cores under load; median of 5 interleaved runs of --runs 9 --ops 100000):
 * zod schema over msgpackr 4.53 µs → hand-written validator 1.89 µs; msgpackr unpack alone ≈ 2.0 µs, so the
 * validator costs ~0.1–0.3 µs. A prototype hand-written binary layout decoded the same payload in ~0.9 µs: the
 * MessagePack format was kept (no version change, same accepted set as before), see runtime/relocation/payload.ts.
 */
const payload: UnitPayload = {
  v: PAYLOAD_VERSION,
  unit: 'u:actor-1',
  kind: 'actor',
  objects: [{ key: 'a:actor-1', type: 'counter', gen: 1, auth: 3, mode: 'entry', state: Buffer.alloc(1024, 7), timers: [{ name: 'tick', remainingMs: 250, periodMs: 500 }] }],
  queue: [],
};
const encoded = encodePayload(payload);
const payloadRows: { case: string; usPerDecode: number; bytes: number }[] = [];
// The MessagePack part alone (payload.ts's Packr options): what a hand-written binary layout could at most save.
const unpackOnly = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });
for (const [name, run] of [
  ['decodePayload, 1 object, 1 KiB state', () => decodePayload(encoded)],
  ['msgpackr unpack only (same bytes)', () => unpackOnly.unpack(encoded)],
] as const) {
  const samples: number[] = [];
  for (let r = 0; r < runs; r++) {
    for (let i = 0; i < 20_000; i++) run(); // warm-up
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < ops; i++) run();
    samples.push(Number(process.hrtime.bigint() - t0) / ops / 1000);
  }
  payloadRows.push({ case: name, usPerDecode: Number(median(samples).toFixed(3)), bytes: encoded.length });
}
console.table(payloadRows);
console.log(JSON.stringify(payloadRows));
