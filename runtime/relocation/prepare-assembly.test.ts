import { SimulatedClock } from 'xstate';
import type { NodeRef, TypeCapability } from '../../stores/types';
import { RelocationReason } from '../../vocabulary';
import type { Clock } from '../clock';
import { PrepareAssembly } from './prepare-assembly';
import { parseRelocationMessage, type PrepareKeysMessage, type PrepareMessage } from './protocol';

const src: NodeRef = { nodeId: 'src', lifecycleGeneration: 1 };
const other: NodeRef = { nodeId: 'other', lifecycleGeneration: 1 };
const Room: TypeCapability = { type: 'Room', kind: 'user', policy: 'preserve', adapter: 'json', executionMode: 'SpotWide' };
const Player: TypeCapability = { type: 'Player', kind: 'actor', policy: 'preserve', adapter: 'json' };
const VALIDITY_MS = 5000;

function setup(maxKeys = 1000) {
  const sim = new SimulatedClock();
  const clock: Clock = { now: () => sim.now(), setTimeout: (fn, ms) => sim.setTimeout(fn, ms), clearTimeout: (h) => sim.clearTimeout(h as number) };
  const completed: { from: string; message: PrepareMessage }[] = [];
  const failed: { from: string; u: string; reason: RelocationReason; error: string }[] = [];
  const assembly = new PrepareAssembly(clock, VALIDITY_MS, () => maxKeys, {
    complete: (from, message) => completed.push({ from: from.nodeId, message }),
    fail: (from, u, reason, error) => failed.push({ from: from.nodeId, u, reason, error }),
  });
  return { sim, assembly, completed, failed };
}

/** The parts of unit `u` with `keys`, `per` keys a part, as the source sends them. */
function parts(u: string, keys: string[], per: number): PrepareKeysMessage[] {
  const out: PrepareKeysMessage[] = [];
  const count = Math.ceil(keys.length / per);
  for (let i = 0; i < count; i++) {
    const message: PrepareKeysMessage = { t: 'r.prepareKeys', u, part: i, keys: keys.slice(i * per, (i + 1) * per) };
    if (i === 0) message.head = { parts: count, n: keys.length, kind: 'spotWide', ty: [0, 1], types: [Room, Player] };
    expect(parseRelocationMessage(message)).toBe(message);
    out.push(message);
  }
  return out;
}

const members = (n: number, prefix = 'm') => ['s:room', ...Array.from({ length: n - 1 }, (_, i) => `a:${prefix}${i}`)];

describe('PrepareAssembly', () => {
  test('parts in order become one unit of a one-unit r.prepare, keys in order, nothing held after', () => {
    const { assembly, completed, failed } = setup();
    const keys = members(10);
    const all = parts('u1', keys, 3);
    for (const m of all.slice(0, -1)) assembly.add(src, m);
    expect(completed).toEqual([]);
    expect(assembly.size).toBe(1);
    expect(assembly.announcedKeys).toBe(10);
    assembly.add(src, all.at(-1)!);
    expect(failed).toEqual([]);
    expect(completed).toEqual([{ from: 'src', message: { t: 'r.prepare', units: [{ u: 'u1', kind: 'spotWide', keys, ty: [0, 1] }], types: [Room, Player] } }]);
    expect(parseRelocationMessage(completed[0]!.message)).toBeDefined();
    expect(assembly.size).toBe(0);
    expect(assembly.announcedKeys).toBe(0);
  });

  test('a single part is a whole unit at once', () => {
    const { assembly, completed } = setup();
    assembly.add(src, parts('u1', ['s:room', 'a:1'], 10)[0]!);
    expect(completed.map((c) => c.message.units[0]!.keys)).toEqual([['s:room', 'a:1']]);
  });

  test('the same unit id from two sources assembles apart', () => {
    const { assembly, completed } = setup();
    const a = parts('u1', members(4, 'a'), 2);
    const b = parts('u1', members(4, 'b'), 2);
    assembly.add(src, a[0]!);
    assembly.add(other, b[0]!);
    assembly.add(other, b[1]!);
    assembly.add(src, a[1]!);
    expect(completed.map((c) => [c.from, c.message.units[0]!.keys])).toEqual([
      ['other', members(4, 'b')],
      ['src', members(4, 'a')],
    ]);
  });

  test('a resent part 0 starts the unit afresh', () => {
    const { assembly, completed, failed } = setup();
    const all = parts('u1', members(6), 2);
    assembly.add(src, all[0]!);
    assembly.add(src, all[1]!);
    for (const m of all) assembly.add(src, m);
    expect(failed).toEqual([]);
    expect(completed.map((c) => c.message.units[0]!.keys)).toEqual([members(6)]);
    expect(assembly.announcedKeys).toBe(0);
  });

  test('a part out of order fails the unit to its source at once, and later parts are dropped', () => {
    const { assembly, completed, failed } = setup();
    const all = parts('u1', members(8), 2);
    assembly.add(src, all[0]!);
    assembly.add(src, all[2]!); // part 1 lost
    expect(failed).toEqual([{ from: 'src', u: 'u1', reason: RelocationReason.RelocationFailed, error: 'prepare part 2 of unit u1 arrived where part 1 was expected' }]);
    assembly.add(src, all[3]!);
    expect(failed).toHaveLength(1);
    expect(completed).toEqual([]);
    expect(assembly.size).toBe(0);
    expect(assembly.announcedKeys).toBe(0);
  });

  test('parts whose keys do not add up to the announced count fail the unit', () => {
    const more = setup();
    const all = parts('u1', members(4), 2);
    more.assembly.add(src, { ...all[0]!, head: { ...all[0]!.head!, n: 3 } });
    more.assembly.add(src, all[1]!);
    expect(more.failed.map((f) => f.error)).toEqual(['prepare of unit u1 carries more than the 3 keys it announced']);
    const fewer = setup();
    fewer.assembly.add(src, { ...all[0]!, head: { ...all[0]!.head!, n: 5 } });
    fewer.assembly.add(src, all[1]!);
    expect(fewer.failed.map((f) => f.error)).toEqual(['prepare of unit u1 ended with 4 of the 5 keys it announced']);
    expect(more.completed).toEqual([]);
    expect(fewer.completed).toEqual([]);
    expect(fewer.assembly.announcedKeys).toBe(0);
  });

  test('announced keys are bounded by capacity across open assemblies; a refused head holds nothing', () => {
    const { assembly, completed, failed } = setup(10);
    const a = parts('u1', members(6), 2);
    assembly.add(src, a[0]!);
    assembly.add(src, parts('u2', members(5, 'x'), 2)[0]!); // 6 + 5 > 10
    expect(failed).toEqual([{ from: 'src', u: 'u2', reason: RelocationReason.StateIncompatible, error: 'unit u2 has 5 objects; this target can take at most 4 more' }]);
    expect(assembly.announcedKeys).toBe(6);
    for (const m of a.slice(1)) assembly.add(src, m);
    expect(completed).toHaveLength(1);
    // Room again once the first unit was handed on.
    const b = parts('u2', members(10, 'x'), 4);
    for (const m of b) assembly.add(src, m);
    expect(completed).toHaveLength(2);
  });

  test('a lost last part: the assembly expires with the staging validity, fails to its source and frees its keys', () => {
    const { sim, assembly, completed, failed } = setup();
    const all = parts('u1', members(6), 2);
    assembly.add(src, all[0]!);
    assembly.add(src, all[1]!);
    sim.increment(VALIDITY_MS - 1);
    expect(failed).toEqual([]);
    sim.increment(1);
    expect(failed).toEqual([{ from: 'src', u: 'u1', reason: RelocationReason.RelocationFailed, error: 'prepare of unit u1 incomplete within restore validity (4 of 6 keys, 2 of 3 parts)' }]);
    expect(assembly.size).toBe(0);
    expect(assembly.announcedKeys).toBe(0);
    assembly.add(src, all[2]!); // too late: dropped
    expect(completed).toEqual([]);
    expect(failed).toHaveLength(1);
  });

  test('the expiry of an earlier attempt leaves a restarted assembly alone', () => {
    const { sim, assembly, completed, failed } = setup();
    const all = parts('u1', members(6), 2);
    assembly.add(src, all[0]!);
    sim.increment(VALIDITY_MS / 2);
    assembly.add(src, all[0]!); // resent: a new assembly with its own validity
    sim.increment(VALIDITY_MS / 2);
    expect(failed).toEqual([]);
    assembly.add(src, all[1]!);
    assembly.add(src, all[2]!);
    expect(completed).toHaveLength(1);
    sim.increment(VALIDITY_MS);
    expect(failed).toEqual([]);
  });

  test('a completed unit is not failed by its expiry later', () => {
    const { sim, assembly, completed, failed } = setup();
    for (const m of parts('u1', members(4), 2)) assembly.add(src, m);
    sim.increment(VALIDITY_MS * 2);
    expect(completed).toHaveLength(1);
    expect(failed).toEqual([]);
  });

  test('clear() (§14 close) drops everything without failures', () => {
    const { sim, assembly, failed } = setup();
    assembly.add(src, parts('u1', members(6), 2)[0]!);
    assembly.clear();
    sim.increment(VALIDITY_MS * 2);
    expect(failed).toEqual([]);
    expect(assembly.size).toBe(0);
    expect(assembly.announcedKeys).toBe(0);
  });
});
