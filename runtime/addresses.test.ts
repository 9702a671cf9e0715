/**
 * Listen vs advertise (meshes[].advertise): a host listening on every interface publishes the address peers dial,
 * and hosts reach each other through it; without one, an unspecified listen address is refused before anything
 * starts.
 */
import { ArgumentError, createRuntime, defineActor, memoryStores, recreateOnRelocation, type FrameworkRuntime } from '.';

const Echo = defineActor<object>({ type: 'Echo', relocation: recreateOnRelocation(), create: () => ({}), receive: (_s, m, ctx) => ({ m, at: ctx.nodeId }) });
const TIMING = { discoveryIntervalMs: 20, leaseMs: 3000 };
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

test('hosts listening on 0.0.0.0 publish their advertise address and reach each other through it', async () => {
  const stores = memoryStores();
  const hosts: FrameworkRuntime[] = [];
  try {
    for (const nodeId of ['node-a', 'node-b'])
      hosts.push(
        await createRuntime({
          nodeId,
          applicationVersion: 1,
          stores,
          types: [Echo],
          timing: TIMING,
          logger: quiet,
          // host only: the bound port is added (port 0 = any)
          meshes: [{ name: 'main', listen: { host: '0.0.0.0', port: 0 }, advertise: '127.0.0.1' }],
        }),
      );
    const descriptors = await stores.descriptors.list();
    const endpoints = descriptors.map((d) => d.endpoints['main']);
    expect(endpoints).toHaveLength(2);
    for (const endpoint of endpoints) expect(endpoint).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/$/);
    await hosts[0]!.createActor('Echo', 'e-1');
    expect(await hosts[1]!.request({ actor: 'e-1' }, 'hi', { timeoutMs: 5000 })).toEqual({ m: 'hi', at: 'node-a' });
  } finally {
    for (const h of hosts) await h.shutdown({ deadlineMs: 5000 });
    await stores.close();
  }
});

test('an explicit advertise URL is published as given', async () => {
  const stores = memoryStores();
  const host = await createRuntime({
    nodeId: 'node-a',
    applicationVersion: 1,
    stores,
    timing: TIMING,
    logger: quiet,
    meshes: [{ name: 'main', listen: { host: '127.0.0.1', port: 0 }, advertise: 'ws://zlink-0.zlink.default.svc:7100' }],
  });
  try {
    expect((await stores.descriptors.list())[0]!.endpoints).toEqual({ main: 'ws://zlink-0.zlink.default.svc:7100/' });
  } finally {
    await host.shutdown({ deadlineMs: 5000 });
    await stores.close();
  }
});

test.each(['0.0.0.0', '::'])('listen on %s without advertise: refused naming meshes.0.advertise, nothing started or registered', async (host) => {
  const stores = memoryStores();
  const reference = memoryStores();
  try {
    const error = await createRuntime({ nodeId: 'node-a', applicationVersion: 1, stores, meshes: [{ name: 'main', listen: { host, port: 0 } }] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ArgumentError);
    expect((error as ArgumentError).field).toBe('meshes.0.advertise');
    expect((error as Error).message).toMatch(/peers cannot dial it/);
    // No descriptor, and the first lifecycle generation is still unused (no run of node-a was registered).
    expect(await stores.descriptors.list()).toEqual([]);
    expect(await stores.descriptors.nextLifecycleGeneration('node-a')).toBe(await reference.descriptors.nextLifecycleGeneration('node-a'));
  } finally {
    await stores.close();
    await reference.close();
  }
});
