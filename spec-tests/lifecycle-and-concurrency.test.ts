/**
 * Spec 05 §17 "Lifecycle and concurrency": one test per item (§2, §3, §6, §14). Public API only; memory stores
 * and the in-process transport; the 30 s shutdown default is proven on a SimulatedClock.
 */
import {
  AbortError,
  createRuntime,
  defineSpot,
  FrameworkRuntimeState,
  memoryStores,
  preserveState,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  SimulatedClock,
  TerminationOutcome,
  TerminationReason,
  type FrameworkRuntime,
} from '../runtime';
import { BASE_TYPES, flush, hostSet, recordStatuses, settle, sleep, until, type HostSet } from './support/hosts';

const PM = RelocationMode.PlannedMaintenance;
const RU = RelocationMode.RollingUpdate;

let set: HostSet;
beforeEach(() => {
  set = hostSet();
});
afterEach(async () => {
  await set.close();
});

/** Waits until `host` can reach `actor` owned by another host (the peer connection is Ready). */
async function connected(host: FrameworkRuntime, actor: string, owner: string): Promise<void> {
  await until(async () => (await host.request({ actor }, { op: 'where' }, { timeoutMs: 500 }).catch(() => '')) === owner, `${host.nodeId} reaches ${actor}`);
}

test('A blocked preflight keeps Serving; success becomes Relocated with infrastructure kept.', async () => {
  // Blocked preflight: a DisableRelocation object remains (§13) → Blocked/RelocationDisabled, still Serving.
  const pinnedHost = await set.host({ nodeId: 'pinned', applicationVersion: 1 });
  const spare = await set.host({ nodeId: 'spare', applicationVersion: 1 });
  await pinnedHost.createActor('Pinned', 'p1');
  const pinnedStates = recordStatuses(pinnedHost);
  const blocked = await pinnedHost.relocate({ mode: PM, deadlineMs: 2000 });
  expect(blocked).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Blocked, reason: RelocationReason.RelocationDisabled });
  expect(pinnedHost.status.state).toBe(FrameworkRuntimeState.Serving);
  expect(pinnedHost.status.isReady).toBe(true);
  expect(pinnedHost.status.lastRelocation).toEqual(blocked);
  await flush();
  expect(pinnedStates.states()).toEqual([FrameworkRuntimeState.Serving]); // never left Serving
  pinnedStates.stop();
  expect(await pinnedHost.request({ actor: 'p1' }, { op: 'where' })).toBe('pinned');
  expect((await pinnedHost.locate({ actor: 'p1' }))?.nodeId).toBe('pinned');
  await pinnedHost.createActor('Counter', 'after-blocked'); // admission was never closed
  await pinnedHost.shutdown();
  await spare.shutdown();

  // Success: Relocated, and the source keeps infrastructure — it still forwards to the moved actor (Message Follow).
  const source = await set.host({ nodeId: 'source', applicationVersion: 1 });
  const target = await set.host({ nodeId: 'target', applicationVersion: 1 });
  await source.createActor('Counter', 'c1');
  await source.request({ actor: 'c1' }, { op: 'add', by: 5 });
  const moved = await source.relocate({ mode: PM, deadlineMs: 5000 });
  expect(moved).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
  expect(source.status.state).toBe(FrameworkRuntimeState.Relocated);
  expect(source.status.isReady).toBe(false);
  expect(source.status.lastRelocation).toEqual(moved);
  // The request is sent by the Relocated source and runs on the target: state moved, routes and connections kept.
  expect(await source.request({ actor: 'c1' }, { op: 'add', by: 1 })).toBe(6);
  expect(await source.request({ actor: 'c1' }, { op: 'where' })).toBe('target');
  await until(async () => (await source.locate({ actor: 'c1' }))?.nodeId === 'target', 'owner record names the target');
  expect(await target.request({ actor: 'c1' }, { op: 'get' })).toBe(6);
  expect(source.status.state).toBe(FrameworkRuntimeState.Relocated);
});

test('Shutdown is called separately, with a default deadline of 30 seconds.', async () => {
  // Relocated does not stop the host; Shutdown is a separate call and ends Stopped/None.
  const source = await set.host({ nodeId: 'source', applicationVersion: 1 });
  await set.host({ nodeId: 'target', applicationVersion: 1 });
  await source.createActor('Counter', 'c1');
  expect((await source.relocate({ mode: PM, deadlineMs: 5000 })).outcome).toBe(RelocationOutcome.Relocated);
  await sleep(100);
  expect(source.status.state).toBe(FrameworkRuntimeState.Relocated);
  expect(source.status.lastTermination).toBeUndefined();
  expect(await source.request({ actor: 'c1' }, { op: 'get' })).toBe(0);
  const stopped = await source.shutdown();
  expect(stopped).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
  expect(source.status.state).toBe(FrameworkRuntimeState.Stopped);
  expect(source.status.lastTermination).toEqual(stopped);

  // The default deadline is 30 s: a closing callback that never ends is cut off at exactly 30 000 ms.
  const clock = new SimulatedClock();
  const Stuck = defineSpot<{ closing: number }>({
    type: 'Stuck',
    kind: 'user',
    relocation: preserveState({ capture: () => Buffer.from('{}'), restore: () => ({ closing: 0 }) }),
    create: () => ({ closing: 0 }),
    receive: (s) => s.closing,
    onClosing: (s) => {
      s.closing++;
      return new Promise(() => undefined);
    },
  });
  const stores = memoryStores();
  // Background loops (lease renewal every leaseMs/3, discovery) run on the simulated clock too.
  const simulated = await createRuntime({ nodeId: 'sim', applicationVersion: 1, stores, clock, types: [Stuck], timing: { discoveryIntervalMs: 1000, leaseMs: 3000 } });
  try {
    await simulated.createSpot('Stuck', 'stuck-1');
    const result = settle(simulated.shutdown());
    await flush();
    expect(simulated.status.state).toBe(FrameworkRuntimeState.Draining);
    for (let elapsed = 0; elapsed < 29_999; elapsed += 1000) {
      clock.increment(Math.min(1000, 29_999 - elapsed));
      await flush();
    }
    expect(clock.now()).toBe(29_999);
    expect(result.done).toBe(false);
    expect(simulated.status.state).toBe(FrameworkRuntimeState.Draining);
    clock.increment(1);
    await flush();
    expect(result.done).toBe(true);
    expect(result.value).toEqual({ outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.DeadlineExceeded });
    expect(simulated.status.state).toBe(FrameworkRuntimeState.Stopped); // ForceStopped is a result, not a state (§3)
    expect(simulated.status.lastTermination).toEqual(result.value);
  } finally {
    clock.increment(5000);
    await flush();
    await stores.close();
  }

  // A closing callback that throws: ForceStopped/TeardownFailed.
  const Throws = defineSpot<object>({
    type: 'Throws',
    kind: 'user',
    relocation: preserveState({ capture: () => Buffer.from('{}'), restore: () => ({}) }),
    create: () => ({}),
    receive: () => 1,
    onClosing: () => {
      throw new Error('closing failed');
    },
  });
  const failing = await set.host({ nodeId: 'failing', applicationVersion: 1, types: [...BASE_TYPES, Throws], log: () => undefined });
  await failing.createSpot('Throws', 't1');
  const failed = await failing.shutdown({ deadlineMs: 5000 });
  expect(failed).toEqual({ outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.TeardownFailed });
  expect(failing.status.state).toBe(FrameworkRuntimeState.Stopped);
});

test("Caller cancellation ends only the waiter, and doesn't change admission in an invalid runtime state.", async () => {
  // A host with a unit and no target: the operation waits for a target until its deadline (§5.1).
  const host = await set.host({ nodeId: 'lonely', applicationVersion: 1 });
  await host.createActor('Counter', 'c1');
  const controller = new AbortController();
  const started = Date.now();
  const cancelled = settle(host.relocate({ mode: PM, deadlineMs: 400 }, { signal: controller.signal }));
  const other = settle(host.relocate({ mode: PM }));
  await sleep(50);
  controller.abort();
  await cancelled.promise;
  expect(cancelled.error).toBeInstanceOf(AbortError);
  expect((cancelled.error as Error).name).toBe('AbortError');
  expect(Date.now() - started).toBeLessThan(300);
  // The shared operation goes on: the other waiter is still waiting, and gets the operation's own result.
  expect(other.done).toBe(false);
  expect(host.diagnostics().operation).toMatchObject({ mode: PM, targetApplicationVersion: 1 });
  await other.promise;
  expect(other.value).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Blocked, reason: RelocationReason.TargetUnavailable });
  expect(Date.now() - started).toBeGreaterThanOrEqual(390);
  expect(host.status.state).toBe(FrameworkRuntimeState.Serving);
  await host.createActor('Counter', 'c2');

  // An already-aborted signal rejects at once and starts nothing.
  const events: number[] = [];
  const off = host.on('zlink.runtime.host.relocation_changed', (s) => events.push(s.state));
  const before = host.status;
  const aborted = new AbortController();
  aborted.abort();
  await expect(host.relocate({ mode: PM, deadlineMs: 300 }, { signal: aborted.signal })).rejects.toMatchObject({ name: 'AbortError' });
  await flush();
  expect(host.diagnostics().operation).toBeUndefined();
  expect(host.status).toBe(before);
  expect(events).toEqual([]);
  off();

  // Relocate in Stopped: Blocked/RuntimeNotReady, nothing changes.
  await host.shutdown();
  const stopped = host.status;
  const notReady = await host.relocate({ mode: RU, targetApplicationVersion: 2, deadlineMs: 1000 });
  expect(notReady).toEqual({ mode: RU, targetApplicationVersion: 2, outcome: RelocationOutcome.Blocked, reason: RelocationReason.RuntimeNotReady });
  expect(host.status).toBe(stopped);
  expect(host.status.state).toBe(FrameworkRuntimeState.Stopped);
  expect(host.status.lastRelocation).toEqual(other.value);
  await expect(host.createActor('Counter', 'c3')).rejects.toMatchObject({ name: 'AdmissionError' });
});

test('Relocations with the same option share one operation, as do concurrent shutdowns.', async () => {
  const host = await set.host({ nodeId: 'lonely', applicationVersion: 3 });
  await host.createActor('Counter', 'c1');
  const started = Date.now();
  const first = host.relocate({ mode: PM, deadlineMs: 300 });
  await sleep(50);
  // Same mode and effective target version: shares the first deadline; the later, longer one changes nothing.
  const second = host.relocate({ mode: PM, deadlineMs: 10_000 });
  const [a, b] = await Promise.all([first, second]);
  const elapsed = Date.now() - started;
  const expected = { mode: PM, targetApplicationVersion: 3, outcome: RelocationOutcome.Blocked, reason: RelocationReason.TargetUnavailable };
  expect(a).toEqual(expected);
  expect(b).toEqual(expected);
  expect(elapsed).toBeGreaterThanOrEqual(290);
  expect(elapsed).toBeLessThan(2000);

  // Relocate again after Blocked: not stored, conditions re-checked — a new operation with its own deadline.
  const again = Date.now();
  expect(await host.relocate({ mode: PM, deadlineMs: 200 })).toEqual(expected);
  expect(Date.now() - again).toBeGreaterThanOrEqual(190);

  // Concurrent shutdowns share one operation and its terminal result.
  const Slow = defineSpot<object>({
    type: 'Slow',
    kind: 'user',
    relocation: preserveState({ capture: () => Buffer.from('{}'), restore: () => ({}) }),
    create: () => ({}),
    receive: () => 1,
    onClosing: () => {
      throw new Error('teardown failure');
    },
  });
  const other = await set.host({ nodeId: 'other', applicationVersion: 1, types: [...BASE_TYPES, Slow], log: () => undefined });
  await other.createSpot('Slow', 'slow-1');
  const shutdowns = [other.shutdown(), other.shutdown({ deadlineMs: 1000 }), other.shutdown({ deadlineMs: 20_000 })];
  const results = await Promise.all(shutdowns);
  const failed = { outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.TeardownFailed };
  for (const r of results) expect(r).toEqual(failed);
  // Shutdown again in Stopped returns the stored result (not a fresh Stopped/None).
  expect(await other.shutdown()).toEqual(failed);
  expect(await other.shutdown({ deadlineMs: 1 })).toEqual(failed);
  expect(other.status.lastTermination).toEqual(failed);
});

test('A different relocation option ends with OperationInProgress; shutdown during relocation ends with ShutdownRequested; repeated calls return the same terminal result.', async () => {
  // A different mode (or effective version) while one operation waits: Blocked/OperationInProgress at once.
  const waiting = await set.host({ nodeId: 'waiting', applicationVersion: 1 });
  await waiting.createActor('Counter', 'c1');
  const pending = settle(waiting.relocate({ mode: PM, deadlineMs: 5000 }));
  await sleep(30);
  const t0 = Date.now();
  expect(await waiting.relocate({ mode: RU, targetApplicationVersion: 2 })).toEqual({
    mode: RU,
    targetApplicationVersion: 2,
    outcome: RelocationOutcome.Blocked,
    reason: RelocationReason.OperationInProgress,
  });
  expect(Date.now() - t0).toBeLessThan(100);
  expect(pending.done).toBe(false);
  expect(waiting.status.state).toBe(FrameworkRuntimeState.Serving);

  // Shutdown while Relocate waits for a target: the waiter gets Blocked/ShutdownRequested.
  const shutdown = await waiting.shutdown({ deadlineMs: 2000 });
  await pending.promise;
  expect(pending.value).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Blocked, reason: RelocationReason.ShutdownRequested });
  expect(shutdown).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
  expect(waiting.status.state).toBe(FrameworkRuntimeState.Stopped);

  // Relocate again in Relocated returns the first Relocated/None with its mode and version, whatever is asked.
  const source = await set.host({ nodeId: 'source', applicationVersion: 1 });
  const target = await set.host({ nodeId: 'target', applicationVersion: 1 });
  await source.createActor('Counter', 'c2');
  await connected(target, 'c2', 'source');
  const first = await source.relocate({ mode: PM, deadlineMs: 5000 });
  const relocated = { mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None };
  expect(first).toEqual(relocated);
  expect(await source.relocate({ mode: PM })).toEqual(relocated);
  expect(await source.relocate({ mode: RU, targetApplicationVersion: 5, deadlineMs: 100 })).toEqual(relocated);
  expect(source.status.state).toBe(FrameworkRuntimeState.Relocated);
  expect(source.status.lastRelocation).toEqual(relocated);
  expect(await target.request({ actor: 'c2' }, { op: 'where' })).toBe('target');
});
