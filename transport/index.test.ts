import { createTransport } from '.';

const base = { self: { nodeId: 'a', lifecycleGeneration: 1, applicationVersion: 1 }, handlers: { onMessage: () => undefined, onPayload: () => undefined } };

describe('createTransport', () => {
  it('picks ws for meshes with listen and memory for meshes without', async () => {
    const ws = createTransport({ ...base, meshes: [{ name: 'm', listen: { host: '127.0.0.1', port: 0 } }] });
    const mem = createTransport({ ...base, meshes: [{ name: 'm' }] });
    try {
      expect((await ws.start()).m).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/$/);
      expect(await mem.start()).toEqual({ m: 'memory://a/1/m' });
    } finally {
      await Promise.all([ws.close(), mem.close()]);
    }
  });

  it('rejects mixed meshes and bad options with a TypeError/RangeError that names the problem', () => {
    expect(() => createTransport({ ...base, meshes: [{ name: 'x', listen: { host: '127.0.0.1', port: 0 } }, { name: 'y' }] })).toThrow(/x=ws, y=memory/);
    expect(() => createTransport({ ...base, meshes: [] })).toThrow(TypeError);
    expect(() => createTransport({ ...base, meshes: [{ name: 'm' }, { name: 'm' }] })).toThrow(/twice/);
    expect(() => createTransport({ ...base, meshes: [{ name: 'm' }], chunkBytes: 4 * 1024 * 1024 })).toThrow(/chunkBytes/);
  });
});
