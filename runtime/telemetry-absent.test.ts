/**
 * @opentelemetry/api is an optional peer dependency: without it installed, the runtime loads, runs and relocates,
 * and every instrument is a no-op (nothing throws).
 */
test('without @opentelemetry/api the runtime works and records nothing', async () => {
  jest.resetModules();
  jest.doMock('@opentelemetry/api', () => {
    throw Object.assign(new Error("Cannot find module '@opentelemetry/api'"), { code: 'MODULE_NOT_FOUND' });
  });
  expect(() => require('@opentelemetry/api')).toThrow(/Cannot find module/);
  const zlink = require('.') as typeof import('.');
  const { telemetry } = require('./telemetry') as typeof import('./telemetry');
  expect(() => {
    telemetry.routed(true);
    telemetry.storeCall('location', 'get', 1, 'StoreUnavailableError');
    telemetry.requestSettled(1, 'ok');
    telemetry.addUnitStates(() => undefined)();
  }).not.toThrow();

  const Counter = zlink.defineActor<{ n: number }>({
    type: 'Counter',
    relocation: zlink.preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) }),
    create: () => ({ n: 0 }),
    receive: (state) => ++state.n,
  });
  const stores = zlink.memoryStores();
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  const timing = { discoveryIntervalMs: 20, messageFollowDurationMs: 100, leaseMs: 3000 };
  const a = await zlink.createRuntime({ nodeId: 'a', applicationVersion: 1, stores, types: [Counter], timing, logger: quiet });
  const b = await zlink.createRuntime({ nodeId: 'b', applicationVersion: 1, stores, types: [Counter], timing, logger: quiet });
  await a.createActor('Counter', 'c-1');
  expect(await b.request({ actor: 'c-1' }, {})).toBe(1);
  expect((await a.relocate({ mode: zlink.RelocationMode.PlannedMaintenance })).outcome).toBe(zlink.RelocationOutcome.Relocated);
  expect(await b.request({ actor: 'c-1' }, {})).toBe(2);
  await a.shutdown();
  await b.shutdown();
  await stores.close();
});
