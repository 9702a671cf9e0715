/** The ClientServer wire values and the select-one choice, without a host. */
import { ArgumentError } from '../../errors';
import { checkChannelName, parseCall, parseReply, readServers, CALL, REPLY } from './protocol';
import { seededRandom, selectOne } from './select-one';

test('ChannelName rule: letters, digits and . _ - : /, at most 256, errors name the field', () => {
  for (const ok of ['orders', 'a', 'svc.v2/orders:eu-1', 'A_9']) expect(checkChannelName(ok, 'channel')).toBe(ok);
  for (const bad of ['', ' x', 'x y', '-x', '.x', 'x\n', '__proto__'.replace(/_/g, ' '), 'ü', 'x'.repeat(257), 7, null]) {
    expect(() => checkChannelName(bad, 'options.channel')).toThrow(ArgumentError);
    try {
      checkChannelName(bad, 'options.channel');
    } catch (error) {
      expect((error as ArgumentError).field).toBe('options.channel');
    }
  }
});

test('descriptor servers: well-formed entries are read, the rest ignored', () => {
  expect(readServers(undefined)).toBeUndefined();
  expect(readServers({ clientServer: 'x' })).toBeUndefined();
  const servers = readServers({
    clientServer: { servers: [{ channel: 'a', weight: 2 }, { channel: 'b', weight: 0 }, { channel: 'bad name', weight: 1 }, null, { channel: 'c', weight: 1.5 }] },
  });
  expect([...servers!]).toEqual([
    ['a', 2],
    ['c', 1.5],
  ]);
});

test('messages are checked by hand', () => {
  const b = new Uint8Array([1]);
  expect(parseCall({ t: CALL, id: '1', ch: 'a', b, d: 0 })).toBeDefined();
  expect(parseCall({ t: CALL, id: '1', ch: 'a', b, d: 1 })).toBeDefined();
  expect(parseCall({ t: CALL, id: '', ch: 'a', b, d: 0 })).toBeUndefined();
  expect(parseCall({ t: CALL, id: 'x'.repeat(129), ch: 'a', b, d: 0 })).toBeUndefined();
  expect(parseCall({ t: CALL, id: '1', ch: 'a', b: [1], d: 0 })).toBeUndefined();
  expect(parseReply({ t: REPLY, id: '1', ok: true, b })).toBeDefined();
  expect(parseReply({ t: REPLY, id: '1', ok: true })).toBeUndefined();
  expect(parseReply({ t: REPLY, id: '1', ok: false, k: 'shutdown', e: 'x' })).toBeDefined();
  expect(parseReply({ t: REPLY, id: '1', ok: false, k: 'shutdown' })).toBeUndefined();
  expect(parseReply({ t: REPLY, id: '1', ok: 'yes', b })).toBeUndefined();
});

test('selectOne: proportional to weight, every candidate reachable, none → undefined', () => {
  expect(selectOne([], Math.random)).toBeUndefined();
  expect(selectOne([{ target: 'only', weight: 5 }], () => 0.999)).toBe('only');
  const c = [
    { target: 'a', weight: 1 },
    { target: 'b', weight: 2 },
    { target: 'c', weight: 7 },
  ];
  expect(selectOne(c, () => 0)).toBe('a');
  expect(selectOne(c, () => 0.1)).toBe('b');
  expect(selectOne(c, () => 0.2999)).toBe('b');
  expect(selectOne(c, () => 0.3)).toBe('c');
  expect(selectOne(c, () => 0.9999999)).toBe('c');
  const random = seededRandom(123);
  const counts: Record<string, number> = { a: 0, b: 0, c: 0 };
  for (let i = 0; i < 10_000; i++) counts[selectOne(c, random)!]!++;
  expect(counts.a! / 10_000).toBeGreaterThan(0.08);
  expect(counts.a! / 10_000).toBeLessThan(0.12);
  expect(counts.c! / 10_000).toBeGreaterThan(0.66);
  expect(counts.c! / 10_000).toBeLessThan(0.74);
});
