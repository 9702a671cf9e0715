import { parseRuntimeMessage } from './protocol';
import { parseRelocationMessage } from './relocation/protocol';

const env = { id: 'e1', to: 'a:x', gen: 3, body: new Uint8Array([1]), from: { nodeId: 'n', lifecycleGeneration: 1 }, seq: 4 };

describe('runtime message validation (hand-checked hot path)', () => {
  test('accepts well-formed messages and replies', () => {
    expect(parseRuntimeMessage({ t: 'msg', env })).toBeDefined();
    expect(parseRuntimeMessage({ t: 'msg', env: { ...env, req: 1, hops: 2, moved: 1, place: 'Shard' } })).toBeDefined();
    expect(parseRuntimeMessage({ t: 'reply', id: 'e1', ok: true, value: new Uint8Array([0]) })).toBeDefined();
    expect(parseRuntimeMessage({ t: 'reply', id: 'e1', ok: false, error: 'no', kind: 'stale-generation' })).toBeDefined();
  });

  test.each([
    ['no body bytes', { ...env, body: { v: 1 } }],
    ['bad key', { ...env, to: 'x:1' }],
    ['empty key', { ...env, to: 'a:' }],
    ['negative generation', { ...env, gen: -1 }],
    ['fractional seq', { ...env, seq: 1.5 }],
    ['req other than 1', { ...env, req: true }],
    ['sender without generation', { ...env, from: { nodeId: 'n' } }],
    ['empty id', { ...env, id: '' }],
  ])('refuses an envelope with %s', (_, bad) => {
    expect(parseRuntimeMessage({ t: 'msg', env: bad })).toBeUndefined();
    expect(parseRelocationMessage({ t: 'r.cutover', u: 'u1', relay: [env, bad] })).toBeUndefined();
  });

  test('refuses malformed replies', () => {
    expect(parseRuntimeMessage({ t: 'reply', id: 'e1', ok: 'yes' })).toBeUndefined();
    expect(parseRuntimeMessage({ t: 'reply', id: 'e1', ok: true, value: [1] })).toBeUndefined();
    expect(parseRuntimeMessage({ t: 'reply', id: 'e1', ok: false, kind: 'other' })).toBeUndefined();
    expect(parseRuntimeMessage(null)).toBeUndefined();
  });

  test('relocation replies and relay frames', () => {
    expect(parseRelocationMessage({ t: 'r.ready', us: ['u1', 'u2'] })).toBeDefined();
    expect(parseRelocationMessage({ t: 'r.prepared', us: ['u1'] })).toBeDefined();
    expect(parseRelocationMessage({ t: 'r.ready', u: 'u1' })).toBeUndefined(); // one wire shape: the batched one
    expect(parseRelocationMessage({ t: 'r.ready' })).toBeUndefined();
    expect(parseRelocationMessage({ t: 'r.ready', us: [] })).toBeUndefined();
    expect(parseRelocationMessage({ t: 'r.prepared', us: ['u1', ''] })).toBeUndefined();
    expect(parseRelocationMessage({ t: 'r.abort', u: 'u1' })).toBeDefined();
    expect(parseRelocationMessage({ t: 'r.abort' })).toBeUndefined();
    expect(parseRelocationMessage({ t: 'r.other', u: 'u1' })).toBeUndefined();
    expect(parseRelocationMessage({ t: 'r.relay', u: 'u1', relay: [env], first: true })).toBeDefined();
    expect(parseRelocationMessage({ t: 'r.cutover', u: 'u1', relay: 'x' })).toBeUndefined();
    expect(parseRelocationMessage({ t: 'r.fail', u: 'u1', reason: 6 })).toBeDefined();
    expect(parseRelocationMessage({ t: 'r.fail', u: 'u1', reason: 0 })).toBeUndefined();
  });

  describe('batched r.prepare', () => {
    const Counter = { type: 'Counter', kind: 'actor', policy: 'preserve', adapter: 'json' };
    const Lobby = { type: 'Lobby', kind: 'user', policy: 'recreate', executionMode: 'PerActor' };
    const good = {
      t: 'r.prepare',
      units: [
        { u: 'u1', kind: 'actor', keys: ['a:1'], ty: [0] },
        { u: 'u2', kind: 'perActorShell', keys: ['s:l'], ty: [1] },
        { u: 'u3', kind: 'spotWide', keys: ['s:m', 'a:2'], ty: [1, 0] },
      ],
      types: [Counter, Lobby],
    };
    test('accepts many units with shared capabilities', () => {
      expect(parseRelocationMessage(good)).toBe(good);
      expect(parseRelocationMessage({ ...good, units: [{ u: 'u', kind: 'instance', keys: ['s:i'], ty: [0] }], types: [{ type: 'I', kind: 'instance', policy: 'disable' }] })).toBeDefined();
    });
    const unit = good.units[0]!;
    test.each([
      ['no units', { ...good, units: [] }],
      ['units not an array', { ...good, units: unit }],
      ['no types', { ...good, types: [] }],
      ['empty unit id', { ...good, units: [{ ...unit, u: '' }] }],
      ['unknown unit kind', { ...good, units: [{ ...unit, kind: 'user' }] }],
      ['no keys', { ...good, units: [{ ...unit, keys: [] }] }],
      ['a key without kind prefix', { ...good, units: [{ ...unit, keys: ['x:1'] }] }],
      ['an empty key id', { ...good, units: [{ ...unit, keys: ['a:'] }] }],
      ['no type index', { ...good, units: [{ ...unit, ty: [] }] }],
      ['a type index out of range', { ...good, units: [{ ...unit, ty: [2] }] }],
      ['a fractional type index', { ...good, units: [{ ...unit, ty: [0.5] }] }],
      ['a capability without type', { ...good, types: [{ ...Counter, type: '' }, Lobby] }],
      ['a capability of unknown kind', { ...good, types: [{ ...Counter, kind: 'spot' }, Lobby] }],
      ['a capability of unknown policy', { ...good, types: [{ ...Counter, policy: 'keep' }, Lobby] }],
      ['a non-string adapter', { ...good, types: [{ ...Counter, adapter: 1 }, Lobby] }],
      ['an unknown execution mode', { ...good, types: [Counter, { ...Lobby, executionMode: 'Shared' }] }],
      ['a capability that is not an object', { ...good, types: [Counter, null] }],
      ['the old single-unit shape', { t: 'r.prepare', u: 'u1', kind: 'actor', keys: ['a:1'], types: [Counter] }],
    ])('refuses %s', (_, bad) => {
      expect(parseRelocationMessage(bad)).toBeUndefined();
    });
  });

  describe('r.prepareKeys (one large unit in parts)', () => {
    const Room = { type: 'Room', kind: 'user', policy: 'preserve', adapter: 'json', executionMode: 'SpotWide' };
    const head = { parts: 3, n: 5, kind: 'spotWide', ty: [0], types: [Room] };
    const first = { t: 'r.prepareKeys', u: 'u1', part: 0, keys: ['s:room', 'a:1'], head };
    const next = { t: 'r.prepareKeys', u: 'u1', part: 2, keys: ['a:4'] };
    test('accepts part 0 with its head and later parts without one', () => {
      expect(parseRelocationMessage(first)).toBe(first);
      expect(parseRelocationMessage(next)).toBe(next);
    });
    test.each([
      ['no unit id', { ...first, u: '' }],
      ['a negative part', { ...next, part: -1 }],
      ['a fractional part', { ...next, part: 1.5 }],
      ['a part as a string', { ...next, part: '1' }],
      ['no keys', { ...next, keys: [] }],
      ['a bad key', { ...next, keys: ['a:4', 'x:5'] }],
      ['part 0 without a head', { ...first, head: undefined }],
      ['a later part with a head', { ...next, head }],
      ['a head with no parts', { ...first, head: { ...head, parts: 0 } }],
      ['a head with no keys', { ...first, head: { ...head, n: 0 } }],
      ['a head with a fractional key count', { ...first, head: { ...head, n: 2.5 } }],
      ['a head of unknown unit kind', { ...first, head: { ...head, kind: 'user' } }],
      ['a head without types', { ...first, head: { ...head, types: [] } }],
      ['a head with a bad capability', { ...first, head: { ...head, types: [{ ...Room, policy: 'keep' }] } }],
      ['a head whose type index is out of range', { ...first, head: { ...head, ty: [1] } }],
      ['a head without type indexes', { ...first, head: { ...head, ty: [] } }],
    ])('refuses %s', (_, bad) => {
      expect(parseRelocationMessage(bad)).toBeUndefined();
    });
  });
});
