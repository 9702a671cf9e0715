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
    expect(parseRelocationMessage({ t: 'r.ready', u: 'u1' })).toBeDefined();
    expect(parseRelocationMessage({ t: 'r.ready' })).toBeUndefined();
    expect(parseRelocationMessage({ t: 'r.relay', u: 'u1', relay: [env], first: true })).toBeDefined();
    expect(parseRelocationMessage({ t: 'r.cutover', u: 'u1', relay: 'x' })).toBeUndefined();
    expect(parseRelocationMessage({ t: 'r.fail', u: 'u1', reason: 6 })).toBeDefined();
    expect(parseRelocationMessage({ t: 'r.fail', u: 'u1', reason: 0 })).toBeUndefined();
  });
});
