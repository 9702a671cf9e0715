import { ArgumentError } from './errors';
import { decodeValue, encodeValue, findUnencodable, MAX_VALUE_BYTES } from './codec';

const roundTrip = (v: unknown) => decodeValue(encodeValue(v, 'message'));

describe('codec (one codec for every application value)', () => {
  it.each<[string, unknown]>([
    ['Buffer', Buffer.from([1, 2, 3])],
    ['Uint8Array', new Uint8Array([4, 5])],
    ['Date', new Date(1_700_000_000_123)],
    ['Map with object and non-string keys', new Map<unknown, unknown>([[1, { a: 1 }], ['k', new Map([[2n, 'x']])]])],
    ['Set', new Set([1, 'a', 3n])],
    ['BigInt in and beyond 64 bits', { small: 1n, neg: -5n, big: 2n ** 100n, negBig: -(2n ** 70n) }],
    ['undefined fields and array holes', { a: undefined, nested: { b: undefined, list: [undefined, 1] } }],
    ['plain JSON', { s: 'ü', n: 1.5, i: -3, t: true, f: null, arr: [1, 'two', { three: 3 }] }],
    ['an object next to a Map of the same shape', { o: { x: 1 }, m: new Map([['x', 1]]) }],
  ])('round-trips %s with its exact types', (_name, value) => {
    const back = roundTrip(value);
    expect(back).toEqual(value);
    // toEqual treats Buffer and Uint8Array alike: check the classes too.
    if (value instanceof Uint8Array) expect(Object.getPrototypeOf(back)).toBe(Object.getPrototypeOf(value));
    if (value && typeof value === 'object' && 'a' in value) expect(Object.keys(back as object)).toContain('a');
  });

  it('keeps Buffer and Uint8Array apart', () => {
    const back = roundTrip({ b: Buffer.from('x'), u: new Uint8Array([1]) }) as { b: unknown; u: unknown };
    expect(Buffer.isBuffer(back.b)).toBe(true);
    expect(Buffer.isBuffer(back.u)).toBe(false);
    expect(back.u).toBeInstanceOf(Uint8Array);
  });

  it('keeps cycles and shared references', () => {
    const shared = { n: 1 };
    const v: Record<string, unknown> = { a: shared, b: shared };
    v.self = v;
    const back = roundTrip(v) as Record<string, unknown>;
    expect(back.self).toBe(back);
    expect(back.a).toBe(back.b);
  });

  it('copies: the decoded value shares nothing with the original', () => {
    const v = { list: [1], buf: Buffer.from([1]) };
    const bytes = encodeValue(v, 'message');
    v.list.push(2);
    v.buf[0] = 9;
    expect(decodeValue(bytes)).toEqual({ list: [1], buf: Buffer.from([1]) });
    const a = decodeValue(bytes) as typeof v;
    a.list.push(3);
    expect(decodeValue(bytes)).toEqual({ list: [1], buf: Buffer.from([1]) });
  });

  it.each<[string, unknown, string]>([
    ['a function', { v: 1, f: () => 1 }, 'message.f'],
    ['a nested function', { list: [0, 1, { f: function named() {} }] }, 'message.list[2].f'],
    ['a symbol', { s: Symbol('x') }, 'message.s'],
    ['a WeakMap', { w: new WeakMap() }, 'message.w'],
    ['a Promise', { p: Promise.resolve(1) }, 'message.p'],
    ['a function in a Map value', { m: new Map([['k', () => 1]]) }, 'message.m.get("k")'],
    ['a function in a Set', { s: new Set([() => 1]) }, 'message.s.<member 0>'],
    ['an odd key', { 'a b': () => 1 }, 'message["a b"]'],
    ['the value itself', () => 1, 'message'],
  ])('refuses %s with ArgumentError naming the path', (_name, value, path) => {
    let error: unknown;
    try {
      encodeValue(value, 'message');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ArgumentError);
    expect((error as ArgumentError).field).toBe(path);
    // The packer is still usable after a refusal.
    expect(roundTrip({ ok: 1 })).toEqual({ ok: 1 });
  });

  it('refuses an encoding over the limit, naming the field and the limit', () => {
    expect(() => encodeValue({ big: Buffer.alloc(MAX_VALUE_BYTES + 1) }, 'reply')).toThrow(ArgumentError);
    expect(() => encodeValue('x'.repeat(200), 'message', 100)).toThrow(/message: encoded value is \d+ bytes, over the 100-byte limit/);
    expect(encodeValue('x'.repeat(50), 'message', 100).length).toBeLessThanOrEqual(100);
  });

  it('findUnencodable passes encodable values and survives cycles', () => {
    const v: Record<string, unknown> = { d: new Date(), m: new Map([[1, 2]]) };
    v.self = v;
    expect(findUnencodable(v, 'message')).toBeUndefined();
  });
});
