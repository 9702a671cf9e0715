import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { decodeParcel, encodeParcel, isParcel, MAX_PARCEL_UNITS, PARCEL_VERSION, ParcelError } from './parcel';

/** A parcel as a source of the previous version wrote it: 32 bytes of sha256 of (id, payload) per unit. */
function encodeVersion1(units: readonly { unit: string; payload: Uint8Array }[]): Buffer {
  const parts: Buffer[] = [Buffer.from([0x50, 1, 0, 0, 0, 0])];
  parts[0]!.writeUInt32BE(units.length, 2);
  for (const u of units) {
    const id = Buffer.from(u.unit, 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(u.payload.length);
    parts.push(Buffer.from([id.length]), id, createHash('sha256').update(id).update(u.payload).digest(), length, Buffer.from(u.payload));
  }
  return Buffer.concat(parts);
}

const unitArb = fc.record({ unit: fc.string({ minLength: 1, maxLength: 60 }), payload: fc.uint8Array({ maxLength: 300 }) });
const unitsArb = fc.uniqueArray(unitArb, { minLength: 1, maxLength: 12, selector: (u) => u.unit });

describe('parcel codec', () => {
  test('round-trips any set of units byte-exact, in order', () => {
    fc.assert(
      fc.property(unitsArb, (units) => {
        const decoded = decodeParcel(encodeParcel(units));
        expect(decoded.map((d) => d.unit)).toEqual(units.map((u) => u.unit));
        decoded.forEach((d, i) => {
          expect(d.ok).toBe(true);
          if (d.ok) expect(Buffer.compare(d.payload, Buffer.from(units[i]!.payload))).toBe(0);
        });
      }),
      { numRuns: 200 },
    );
  });

  test('a unit whose bytes changed fails alone; its neighbours still decode', () => {
    const parcel = encodeParcel([
      { unit: 'u1', payload: Buffer.from('first') },
      { unit: 'u2', payload: Buffer.from('second') },
      { unit: 'u3', payload: Buffer.from('third') },
    ]);
    const at = parcel.indexOf(Buffer.from('second'));
    parcel[at] ^= 0xff;
    const decoded = decodeParcel(parcel);
    expect(decoded.map((d) => [d.unit, d.ok])).toEqual([
      ['u1', true],
      ['u2', false],
      ['u3', true],
    ]);
  });

  test('writes version 2 (a CRC-32 per unit) and still takes version 1 parcels (a sha256 per unit) from an older source', () => {
    expect(PARCEL_VERSION).toBe(2);
    const units = [
      { unit: 'u1', payload: Buffer.from('first') },
      { unit: 'u2', payload: Buffer.from('second') },
    ];
    expect(encodeParcel(units)[1]).toBe(2);
    // 6 header + per unit (1 + id + 4 checksum + 4 length + payload)
    expect(encodeParcel(units).length).toBe(6 + (1 + 2 + 4 + 4 + 5) + (1 + 2 + 4 + 4 + 6));
    const old = encodeVersion1(units);
    expect(isParcel(old)).toBe(true);
    expect(decodeParcel(old).map((d) => [d.unit, d.ok && d.payload.toString()])).toEqual([
      ['u1', 'first'],
      ['u2', 'second'],
    ]);
    // Its own checksum still makes a damaged unit fail alone.
    old[old.indexOf(Buffer.from('second'))] ^= 0xff;
    expect(decodeParcel(old).map((d) => [d.unit, d.ok])).toEqual([
      ['u1', true],
      ['u2', false],
    ]);
    expect(() => decodeParcel(old.subarray(0, old.length - 3))).toThrow(ParcelError);
  });

  test('refuses what is not a parcel of this version, with a ParcelError', () => {
    const good = encodeParcel([{ unit: 'u1', payload: Buffer.from('x') }]);
    const cases: Buffer[] = [
      Buffer.alloc(0),
      Buffer.from([0x50, 1, 0, 0]),
      Buffer.concat([Buffer.from([0x51]), good.subarray(1)]),
      Buffer.concat([Buffer.from([0x50, 3]), good.subarray(2)]), // a version this runtime does not know
      Buffer.concat([good, Buffer.from([0])]), // trailing byte
      good.subarray(0, good.length - 1), // truncated payload
      Buffer.from([0x50, 1, 0, 0, 0, 0]), // zero units
      (() => {
        const b = Buffer.from(good);
        b.writeUInt32BE(MAX_PARCEL_UNITS + 1, 2);
        return b;
      })(),
      encodeParcel([{ unit: 'u1', payload: Buffer.from('x') }, { unit: 'u2', payload: Buffer.from('y') }]).subarray(0, 20),
    ];
    for (const bytes of cases) expect(() => decodeParcel(bytes)).toThrow(ParcelError);
    // The same unit twice is refused whole.
    const twice = Buffer.concat([encodeParcel([{ unit: 'u1', payload: Buffer.from('x') }]).subarray(0, 6), encodeParcel([{ unit: 'u1', payload: Buffer.from('x') }]).subarray(6), encodeParcel([{ unit: 'u1', payload: Buffer.from('x') }]).subarray(6)]);
    twice.writeUInt32BE(2, 2);
    expect(() => decodeParcel(twice)).toThrow('appears twice');
    // An id that is not UTF-8 (a lone continuation byte, an overlong form, an encoded surrogate) is refused whole.
    for (const id of [[0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0x75, 0xff]]) {
      const bad = encodeParcel([{ unit: 'x'.repeat(id.length), payload: Buffer.from('x') }]);
      Buffer.from(id).copy(bad, 7);
      expect(() => decodeParcel(bad)).toThrow('id is not UTF-8');
    }
    expect(decodeParcel(encodeParcel([{ unit: 'ü-✓-𝄞', payload: Buffer.from('x') }]))[0]!.unit).toBe('ü-✓-𝄞');
    expect(isParcel(good)).toBe(true);
    expect(isParcel(Buffer.from('{"v":2}'))).toBe(false);
  });

  test('fuzz: any truncation or byte flip either decodes into per-unit results or throws ParcelError, never anything else', () => {
    fc.assert(
      fc.property(unitsArb, fc.nat(), fc.nat(), fc.integer({ min: 1, max: 255 }), (units, cut, pos, flip) => {
        const parcel = encodeParcel(units);
        const variants = [parcel.subarray(0, cut % (parcel.length + 1)), (() => {
          const b = Buffer.from(parcel);
          b[pos % b.length] ^= flip;
          return b;
        })()];
        for (const bytes of variants) {
          try {
            const decoded = decodeParcel(bytes);
            expect(decoded.length).toBeGreaterThan(0);
          } catch (error) {
            expect(error).toBeInstanceOf(ParcelError);
          }
        }
      }),
      { numRuns: 1000 },
    );
  });

  test('encodeParcel refuses an empty parcel and an id that does not fit', () => {
    expect(() => encodeParcel([])).toThrow(RangeError);
    expect(() => encodeParcel([{ unit: 'x'.repeat(256), payload: Buffer.alloc(0) }])).toThrow(RangeError);
  });
});
