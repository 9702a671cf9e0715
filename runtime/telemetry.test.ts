/**
 * The instruments users asked for (issue 12): messages routed / followed / bounced, request latency, store call
 * latency and errors, relocation units by state — recorded through the global MeterProvider, with bounded labels
 * only (no object or node ids).
 */
import { RelocationMode, StoreUnavailableError } from '.';
import { hostSet, Signaled, sleep, until } from '../spec-tests/support/hosts';
import { installTestMetrics, type TestMetrics } from '../spec-tests/support/metrics';

let metrics: TestMetrics;
beforeAll(() => {
  metrics = installTestMetrics();
});
afterAll(async () => {
  await metrics.shutdown();
});

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
/** Every attribute value of every point of `name`: none may be an id (node or object). */
async function labelValues(name: string): Promise<unknown[]> {
  return (await metrics.points(name)).flatMap((p) => Object.values(p.attributes));
}
const IDS = ['node-a', 'node-b', 'node-c', 'c-1', 'a:c-1', 's-1'];

test('routed, request latency, followed and bounced, store calls: counted with bounded labels', async () => {
  const set = hostSet();
  try {
    const a = await set.host({ nodeId: 'node-a', applicationVersion: 1, logger: quiet, timing: { discoveryIntervalMs: 20, messageFollowDurationMs: 300, leaseMs: 3000 } });
    const b = await set.host({ nodeId: 'node-b', applicationVersion: 1, logger: quiet });
    const c = await set.host({ nodeId: 'node-c', applicationVersion: 1, logger: quiet });
    const routedBefore = { oneWay: await metrics.counter('zlink.runtime.message.routed', { kind: 'one-way' }), request: await metrics.counter('zlink.runtime.message.routed', { kind: 'request' }) };
    await a.createActor('Counter', 'c-1');
    await b.createActor('Counter', 'h-1'); // its turn never ends (on b, so it holds no unit of a's relocation)
    c.send({ actor: 'c-1' }, { op: 'add' });
    expect(await c.request({ actor: 'c-1' }, { op: 'get' })).toBe(1); // c caches a as the owner
    await expect(c.request({ actor: 'h-1' }, { op: 'hang' }, { timeoutMs: 30 })).rejects.toMatchObject({ kind: 'timeout' });
    expect(await metrics.counter('zlink.runtime.message.routed', { kind: 'one-way' })).toBe(routedBefore.oneWay + 1);
    expect(await metrics.counter('zlink.runtime.message.routed', { kind: 'request' })).toBe(routedBefore.request + 2);
    const durations = await metrics.histogram('zlink.runtime.request.duration');
    expect(durations.find((p) => p.attributes['outcome'] === 'ok')!.value.count).toBeGreaterThanOrEqual(1);
    expect(durations.find((p) => p.attributes['outcome'] === 'timeout')!.value.count).toBe(1);
    expect(durations.find((p) => p.attributes['outcome'] === 'timeout')!.value.min).toBeGreaterThanOrEqual(25);

    // Relocation: c still routes to a, which relays while it follows (S1 → S4), then turns messages back.
    const before = { followed: await metrics.counter('zlink.runtime.message.followed'), bounced: await metrics.counter('zlink.runtime.message.bounced') };
    expect((await a.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 10_000 })).outcome).toBe(0);
    expect(await c.request({ actor: 'c-1' }, { op: 'where' })).toBe('node-b');
    expect(await metrics.counter('zlink.runtime.message.followed')).toBe(before.followed + 1);
    expect(await metrics.counter('zlink.runtime.message.bounced')).toBe(before.bounced);
    // After S4 a no longer relays: a message that still reaches it is bounced, and its sender re-resolves.
    await sleep(400);
    // c's cached route was updated by the follow; point it at a again, as a sender that last routed before the move.
    const cRouter = (c as unknown as { router: { routes: Map<string, unknown> } }).router;
    cRouter.routes.set('a:c-1', { owner: { nodeId: a.nodeId, lifecycleGeneration: a.lifecycleGeneration }, gen: 0 });
    expect(await c.request({ actor: 'c-1' }, { op: 'where' })).toBe('node-b');
    expect(await metrics.counter('zlink.runtime.message.bounced')).toBe(before.bounced + 1);

    // Store calls: latency by store and operation; a failing call is counted by error class.
    const calls = await metrics.histogram('zlink.store.call.duration');
    const op = (store: string, operation: string) => calls.find((p) => p.attributes['store'] === store && p.attributes['operation'] === operation && p.attributes['outcome'] === 'ok');
    expect(op('descriptors', 'acquire')!.value.count).toBeGreaterThanOrEqual(3); // one per host
    expect(op('location', 'claim')!.value.count).toBeGreaterThanOrEqual(1);
    expect(op('location', 'get')!.value.count).toBeGreaterThanOrEqual(1);
    const location = set.stores.location as unknown as { get: unknown };
    location.get = async () => {
      throw new StoreUnavailableError('injected');
    };
    try {
      await expect(c.request({ actor: 'elsewhere' }, { op: 'get' })).rejects.toMatchObject({ kind: 'unavailable' });
    } finally {
      delete location.get;
    }
    expect(await metrics.counter('zlink.store.call.errors', { store: 'location', operation: 'get', error: 'StoreUnavailableError' })).toBe(1);
    expect((await metrics.histogram('zlink.store.call.duration')).some((p) => p.attributes['outcome'] === 'error')).toBe(true);

    for (const name of ['zlink.runtime.message.routed', 'zlink.runtime.request.duration', 'zlink.store.call.duration', 'zlink.store.call.errors'])
      for (const value of await labelValues(name)) expect(IDS).not.toContain(value);
  } finally {
    await set.close();
  }
});

test('zlink.relocation.units: units in flight by side and state, while a relocation waits', async () => {
  const set = hostSet();
  try {
    const a = await set.host({ nodeId: 'node-a', applicationVersion: 1, logger: quiet });
    await set.host({ nodeId: 'node-b', applicationVersion: 1, logger: quiet });
    await a.createSpot(Signaled.type, 's-1'); // its unit waits for an application safe point that never comes
    const units = async () => (await metrics.points<number>('zlink.relocation.units')).filter((p) => p.attributes['side'] === 'source');
    const relocation = a.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 1500 });
    await until(async () => (await units()).some((p) => p.attributes['state'] === 'safePoint' && p.value === 1), 'a unit waiting for its safe point');
    for (const value of await labelValues('zlink.relocation.units')) expect(IDS).not.toContain(value);
    expect((await relocation).outcome).toBe(1); // Blocked at the deadline
    await until(async () => !(await units()).some((p) => p.attributes['state'] === 'safePoint' && p.value > 0), 'the gauge to drop the unit');
  } finally {
    await set.close();
  }
});
