/**
 * Every public call given a wrong type or value fails with an error that names the field (STYLE.md "errors that
 * say what to change") and changes nothing: no host, status, event, record or delivered message results from it.
 */
import {
  ArgumentError,
  createRuntime,
  defineActor,
  defineSpot,
  FrameworkRuntimeState,
  memoryStores,
  preserveState,
  RelocationMode,
  type FrameworkRuntime,
  type RuntimeStatus,
} from '../runtime';
import { Counter, flush, hostSet, type HostSet } from './support/hosts';

/** Calls `call`, which must fail (throw or reject) with an ArgumentError for `field`; returns the error. */
async function expectFieldError(call: () => unknown, field: string): Promise<Error> {
  let error: unknown;
  try {
    await call();
  } catch (e) {
    error = e;
  }
  if (!(error instanceof Error)) throw new Error(`expected an error naming '${field}', but the call succeeded`);
  expect(error).toBeInstanceOf(TypeError);
  expect(error.name).toMatch(/^(Relocation)?ArgumentError$/);
  expect((error as ArgumentError).field).toBe(field);
  expect(error.message).toContain(field);
  return error;
}

const noop = () => undefined;
const json = preserveState<{ n: number }>({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) });

describe('createRuntime', () => {
  const stores = memoryStores();
  afterAll(() => stores.close());
  const good = { nodeId: 'n1', applicationVersion: 1, stores };
  const Dup = defineActor({ type: 'Counter', relocation: json, create: () => ({ n: 0 }), receive: noop });

  test.each<[string, unknown, string]>([
    ['options null', null, 'options'],
    ['options a string', 'n1', 'options'],
    ['missing nodeId', { applicationVersion: 1, stores }, 'nodeId'],
    ['empty nodeId', { ...good, nodeId: '' }, 'nodeId'],
    ['nodeId with spaces', { ...good, nodeId: 'node a' }, 'nodeId'],
    ['nodeId a number', { ...good, nodeId: 7 }, 'nodeId'],
    ['missing applicationVersion', { nodeId: 'n1', stores }, 'applicationVersion'],
    ['negative applicationVersion', { ...good, applicationVersion: -1 }, 'applicationVersion'],
    ['fractional applicationVersion', { ...good, applicationVersion: 1.5 }, 'applicationVersion'],
    ['applicationVersion a string', { ...good, applicationVersion: '1' }, 'applicationVersion'],
    ['NaN applicationVersion', { ...good, applicationVersion: NaN }, 'applicationVersion'],
    ['unsafe applicationVersion', { ...good, applicationVersion: 2 ** 53 }, 'applicationVersion'],
    ['missing stores', { nodeId: 'n1', applicationVersion: 1 }, 'stores'],
    ['stores not from a provider', { ...good, stores: {} }, 'stores'],
    ['meshes not an array', { ...good, meshes: 'main' }, 'meshes'],
    ['meshes empty', { ...good, meshes: [] }, 'meshes'],
    ['mesh without a name', { ...good, meshes: [{}] }, 'meshes.0.name'],
    ['mesh with an empty name', { ...good, meshes: [{ name: '' }] }, 'meshes.0.name'],
    ['duplicate mesh names', { ...good, meshes: [{ name: 'main' }, { name: 'main' }] }, 'meshes'],
    ['listen port out of range', { ...good, meshes: [{ name: 'main', listen: { host: '127.0.0.1', port: 70_000 } }] }, 'meshes.0.listen.port'],
    ['duplicate type names', { ...good, types: [Counter, Dup] }, 'types'],
    ['a type not from defineActor/defineSpot', { ...good, types: [{}] }, 'types.0'],
    ['types not an array', { ...good, types: Counter }, 'types'],
    ['leaseMs 0', { ...good, timing: { leaseMs: 0 } }, 'timing.leaseMs'],
    ['leaseMs below the minimum', { ...good, timing: { leaseMs: 10 } }, 'timing.leaseMs'],
    ['negative discoveryIntervalMs', { ...good, timing: { discoveryIntervalMs: -1 } }, 'timing.discoveryIntervalMs'],
    ['messageFollowDurationMs a string', { ...good, timing: { messageFollowDurationMs: '10' } }, 'timing.messageFollowDurationMs'],
    ['NaN relocationCutoverWaitTimeoutMs', { ...good, timing: { relocationCutoverWaitTimeoutMs: NaN } }, 'timing.relocationCutoverWaitTimeoutMs'],
    ['infinite restoreValidityMs', { ...good, timing: { restoreValidityMs: Infinity } }, 'timing.restoreValidityMs'],
    ['unknown timing key', { ...good, timing: { leaseMillis: 1000 } }, 'timing.leaseMillis'],
    ['unknown top-level option (a misspelt logger)', { ...good, loger: console }, 'loger'],
    ['unknown mesh option', { ...good, meshes: [{ name: 'main', advertize: '10.0.0.5:7100' }] }, 'meshes.0.advertize'],
    ['logger without the pino methods', { ...good, logger: { info: () => undefined } }, 'logger'],
    ['listen on 0.0.0.0 without advertise', { ...good, meshes: [{ name: 'main', listen: { host: '0.0.0.0', port: 0 } }] }, 'meshes.0.advertise'],
    ['capacity 0', { ...good, capacity: 0 }, 'capacity'],
    ['negative weight', { ...good, weight: -1 }, 'weight'],
    ['empty maintenanceWave', { ...good, maintenanceWave: '' }, 'maintenanceWave'],
    ['inFlightPayloadBudgetBytes 0', { ...good, inFlightPayloadBudgetBytes: 0 }, 'inFlightPayloadBudgetBytes'],
    ['clock without setTimeout', { ...good, clock: { now: () => 0 } }, 'clock'],
    ['log not a function', { ...good, log: 'console' }, 'log'],
  ])('%s', async (_name, options, field) => {
    await expectFieldError(() => createRuntime(options as never), field);
  });

  test('a rejected createRuntime leaves nothing behind', async () => {
    const fresh = memoryStores();
    const reference = memoryStores();
    try {
      const bad: [object, string][] = [
        [{ applicationVersion: -1 }, 'applicationVersion'],
        [{ timing: { leaseMs: 0 } }, 'timing.leaseMs'],
        [{ types: [Counter, Counter] }, 'types'],
      ];
      for (const [patch, field] of bad) await expectFieldError(() => createRuntime({ nodeId: 'n1', applicationVersion: 1, stores: fresh, ...patch } as never), field);
      // The same first lifecycle generation as on untouched stores: no run of 'n1' was registered.
      const first = await createRuntime({ nodeId: 'n1', applicationVersion: 1, stores: reference });
      const generation = first.lifecycleGeneration;
      await first.shutdown();
      const afterBad = await createRuntime({ nodeId: 'n1', applicationVersion: 1, stores: fresh, types: [Counter] });
      try {
        expect(afterBad.lifecycleGeneration).toBe(generation);
        expect(afterBad.status.state).toBe(FrameworkRuntimeState.Serving);
      } finally {
        await afterBad.shutdown();
      }
    } finally {
      await fresh.close();
      await reference.close();
    }
  });
});

describe('definitions', () => {
  const actor = { type: 'A', relocation: json, create: () => ({ n: 0 }), receive: noop };
  const spot = { type: 'S', kind: 'user' as const, relocation: json, create: () => ({ n: 0 }), receive: noop };

  test.each<[string, () => unknown, string]>([
    ['defineActor(null)', () => defineActor(null as never), 'defineActor'],
    ['defineActor without a type', () => defineActor({ ...actor, type: undefined } as never), 'defineActor.type'],
    ['defineActor with a bad type name', () => defineActor({ ...actor, type: 'a b' }), 'defineActor.type'],
    ['defineActor without receive', () => defineActor({ ...actor, receive: undefined } as never), 'defineActor.receive'],
    ['defineActor with create not a function', () => defineActor({ ...actor, create: 1 } as never), 'defineActor.create'],
    ['defineActor with a made-up policy', () => defineActor({ ...actor, relocation: { kind: 'move' } } as never), 'defineActor.relocation'],
    ['defineActor with onTimer not a function', () => defineActor({ ...actor, onTimer: 'tick' } as never), 'defineActor.onTimer'],
    ['defineSpot with an unknown kind', () => defineSpot({ ...spot, kind: 'entry' } as never), 'defineSpot.kind'],
    ['defineSpot with an unknown execution mode', () => defineSpot({ ...spot, executionMode: 'Shared' } as never), 'defineSpot.executionMode'],
    ['defineSpot Instance with an execution mode', () => defineSpot({ ...spot, kind: 'instance', executionMode: 'SpotWide' }), 'defineSpot.executionMode'],
    ['defineSpot PerActor with ApplicationSignaled', () => defineSpot({ ...spot, executionMode: 'PerActor', readiness: 'ApplicationSignaled' }), 'defineSpot.readiness'],
    ['defineSpot Instance with ApplicationSignaled', () => defineSpot({ ...spot, kind: 'instance', readiness: 'ApplicationSignaled' }), 'defineSpot.readiness'],
    ['defineSpot with onClosing not a function', () => defineSpot({ ...spot, onClosing: true } as never), 'defineSpot.onClosing'],
    ['preserveState()', () => preserveState(undefined as never), 'capture'],
    ['preserveState without restore', () => preserveState({ capture: () => Buffer.alloc(0) } as never), 'restore'],
    ['preserveState with an empty adapter name', () => preserveState({ capture: () => Buffer.alloc(0), restore: () => ({}), adapter: '' }), 'adapter'],
  ])('%s', async (_name, call, field) => {
    await expectFieldError(call, field);
  });
});

describe('host calls', () => {
  let set: HostSet;
  let host: FrameworkRuntime;
  let before: RuntimeStatus;
  let events: RuntimeStatus[];
  beforeAll(async () => {
    set = hostSet();
    host = await set.host({ nodeId: 'host', applicationVersion: 1 });
    await host.createActor('Counter', 'c1');
    await host.createSpot('Signaled', 'room');
    host.on('zlink.runtime.host.relocation_changed', (s) => events.push(s));
    host.on('zlink.runtime.host.termination_changed', (s) => events.push(s));
  });
  afterAll(async () => {
    await set.close();
  });
  beforeEach(() => {
    events = [];
    before = host.status;
  });
  afterEach(async () => {
    await flush();
    // Nothing changed: same status value, no event, the counter received nothing, the new ids do not exist.
    expect(host.status).toBe(before);
    expect(host.status.state).toBe(FrameworkRuntimeState.Serving);
    expect(events).toEqual([]);
    expect(await host.request({ actor: 'c1' }, { op: 'get' })).toBe(0);
    expect(await host.locate({ actor: 'new' })).toBeUndefined();
    expect(await host.locate({ spot: 'new' })).toBeUndefined();
  });

  const signal = { aborted: false } as unknown as AbortSignal;
  test.each<[string, () => unknown, string]>([
    ['createActor with a number type', () => host.createActor(123 as never, 'new'), 'type'],
    ['createActor with an unknown type', () => host.createActor('Nope', 'new'), 'type'],
    ['createActor with a Spot type', () => host.createActor('Signaled', 'new'), 'type'],
    ['createActor with an empty id', () => host.createActor('Counter', ''), 'id'],
    ['createActor with a too long id', () => host.createActor('Counter', 'x'.repeat(600)), 'id'],
    ['createActor with options a string', () => host.createActor('Counter', 'new', 'room' as never), 'options'],
    ['createActor with a number spot', () => host.createActor('Counter', 'new', { spot: 5 as never }), 'options.spot'],
    ['createActor in a missing spot', () => host.createActor('Counter', 'new', { spot: 'missing' }), 'options.spot'],
    ['createSpot with a number type', () => host.createSpot(5 as never, 'new'), 'type'],
    ['createSpot with an Actor type', () => host.createSpot('Counter', 'new'), 'type'],
    ['createSpot with an unknown type', () => host.createSpot('Nope', 'new'), 'type'],
    ['createSpot with an empty id', () => host.createSpot('Signaled', ''), 'id'],
    ['join with an empty actorId', () => host.join('', 'room'), 'actorId'],
    ['join with a number spotId', () => host.join('c1', 5 as never), 'spotId'],
    ['join of a missing actor', () => host.join('ghost', 'room'), 'actorId'],
    ['join of a missing spot', () => host.join('c1', 'nowhere'), 'spotId'],
    ['leave with a number actorId', () => host.leave(7 as never), 'actorId'],
    ['leave of a missing actor', () => host.leave('ghost'), 'actorId'],
    ['send to null', () => host.send(null as never, { op: 'add' }), 'to'],
    ['send to a string', () => host.send('c1' as never, { op: 'add' }), 'to'],
    ['send to {}', () => host.send({} as never, { op: 'add' }), 'to'],
    ['send to an empty actor id', () => host.send({ actor: '' }, { op: 'add' }), 'to.actor'],
    ['send to both actor and spot', () => host.send({ actor: 'c1', spot: 'room' } as never, { op: 'add' }), 'to'],
    ['send to a spot with a number type', () => host.send({ spot: 'room', type: 5 } as never, { op: 'add' }), 'to.type'],
    ['request to undefined', () => host.request(undefined as never, { op: 'add' }), 'to'],
    ['request to a number actor id', () => host.request({ actor: 1 } as never, { op: 'add' }), 'to.actor'],
    ['request with options a number', () => host.request({ actor: 'c1' }, { op: 'add' }, 5 as never), 'options'],
    ['request with timeoutMs 0', () => host.request({ actor: 'c1' }, { op: 'add' }, { timeoutMs: 0 }), 'options.timeoutMs'],
    ['request with a negative timeoutMs', () => host.request({ actor: 'c1' }, { op: 'add' }, { timeoutMs: -1 }), 'options.timeoutMs'],
    ['request with NaN timeoutMs', () => host.request({ actor: 'c1' }, { op: 'add' }, { timeoutMs: NaN }), 'options.timeoutMs'],
    ['request with a string timeoutMs', () => host.request({ actor: 'c1' }, { op: 'add' }, { timeoutMs: '100' as never }), 'options.timeoutMs'],
    ['request with a fake signal', () => host.request({ actor: 'c1' }, { op: 'add' }, { signal }), 'options.signal'],
    ['locate null', () => host.locate(null as never), 'ref'],
    ['locate {}', () => host.locate({} as never), 'ref'],
    ['locate a number actor id', () => host.locate({ actor: 3 } as never), 'ref.actor'],
    ['shutdown with options a number', () => host.shutdown(5 as never), 'options'],
    ['shutdown with deadlineMs 0', () => host.shutdown({ deadlineMs: 0 }), 'deadlineMs'],
    ['shutdown with a negative deadlineMs', () => host.shutdown({ deadlineMs: -1 }), 'deadlineMs'],
    ['shutdown with NaN deadlineMs', () => host.shutdown({ deadlineMs: NaN }), 'deadlineMs'],
    ['shutdown with a string deadlineMs', () => host.shutdown({ deadlineMs: '100' as never }), 'deadlineMs'],
    ['shutdown with a fake signal', () => host.shutdown({ signal }), 'signal'],
    ['relocate with opts a number', () => host.relocate({ mode: RelocationMode.PlannedMaintenance }, 5 as never), 'opts'],
    ['relocate with a fake signal', () => host.relocate({ mode: RelocationMode.PlannedMaintenance }, { signal }), 'opts.signal'],
    ['relocate with a bad deadline', () => host.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 0 }), 'deadlineMs'],
    ['observe with options a number', () => host.observe(5 as never), 'options'],
    ['observe with a fake signal', () => host.observe({ signal }), 'signal'],
    ['diagnostics with options a number', () => host.diagnostics(5 as never), 'options'],
    ['diagnostics with a negative limit', () => host.diagnostics({ limit: -1 }), 'limit'],
    ['diagnostics with a fractional limit', () => host.diagnostics({ limit: 1.5 }), 'limit'],
    ['diagnostics with a string limit', () => host.diagnostics({ limit: '3' as never }), 'limit'],
    ['on with an unknown event name', () => host.on('zlink.runtime.host.changed' as never, noop), 'event'],
    ['on with a listener not a function', () => host.on('zlink.runtime.host.relocation_changed', 'log' as never), 'listener'],
    ['registerManualPeer on a missing mesh', () => host.registerManualPeer('other', '127.0.0.1:1'), 'mesh'],
  ])('%s', async (_name, call, field) => {
    await expectFieldError(call, field);
  });

  test('a valid call after the bad ones succeeds: create, join, send, request, locate', async () => {
    await host.createActor('Counter', 'probe');
    await host.join('probe', 'room');
    host.send({ actor: 'probe' }, { op: 'add', by: 2 });
    expect(await host.request({ actor: 'probe' }, { op: 'get' }, { timeoutMs: 1000 })).toBe(2);
    expect((await host.locate({ actor: 'probe' }))?.nodeId).toBe('host');
    await host.leave('probe');
    before = host.status;
  });
});
