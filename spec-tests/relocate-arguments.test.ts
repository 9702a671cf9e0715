/**
 * Spec 05 §2.1, §2.2, §5.1: Relocate's arguments and the results that carry mode and effective target version.
 * Invalid options reject with RelocationArgumentError before any state or admission change.
 */
import {
  FrameworkRuntimeState,
  RelocationArgumentError,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  type FrameworkRuntime,
  type RelocationOptions,
  type RuntimeStatus,
} from '../runtime';
import { flush, hostSet, recordStatuses, type HostSet } from './support/hosts';

const PM = RelocationMode.PlannedMaintenance;
const RU = RelocationMode.RollingUpdate;
const SOURCE_VERSION = 3;

let set: HostSet;
beforeEach(() => {
  set = hostSet();
});
afterEach(async () => {
  await set.close();
});

const invalid: [string, unknown, string][] = [
  ['PlannedMaintenance with a target version', { mode: PM, targetApplicationVersion: 4 }, 'targetApplicationVersion'],
  ['PlannedMaintenance with its own version as target', { mode: PM, targetApplicationVersion: SOURCE_VERSION }, 'targetApplicationVersion'],
  ['RollingUpdate without a target version', { mode: RU }, 'targetApplicationVersion'],
  ['RollingUpdate with the source version', { mode: RU, targetApplicationVersion: SOURCE_VERSION }, 'targetApplicationVersion'],
  ['RollingUpdate with a lower version', { mode: RU, targetApplicationVersion: SOURCE_VERSION - 1 }, 'targetApplicationVersion'],
  ['RollingUpdate with a fractional version', { mode: RU, targetApplicationVersion: 4.5 }, 'targetApplicationVersion'],
  ['RollingUpdate with a string version', { mode: RU, targetApplicationVersion: '4' }, 'targetApplicationVersion'],
  ['deadlineMs 0', { mode: PM, deadlineMs: 0 }, 'deadlineMs'],
  ['negative deadlineMs', { mode: PM, deadlineMs: -1 }, 'deadlineMs'],
  ['NaN deadlineMs', { mode: PM, deadlineMs: NaN }, 'deadlineMs'],
  ['infinite deadlineMs', { mode: RU, targetApplicationVersion: 4, deadlineMs: Infinity }, 'deadlineMs'],
  ['string deadlineMs', { mode: PM, deadlineMs: '1000' }, 'deadlineMs'],
  ['unknown mode 2', { mode: 2 }, 'mode'],
  ['mode given by name', { mode: 'PlannedMaintenance' }, 'mode'],
  ['missing mode', { deadlineMs: 1000 }, 'mode'],
  ['null options', null, 'options'],
  ['undefined options', undefined, 'options'],
  ['string options', 'PlannedMaintenance', 'options'],
  ['number options', 0, 'options'],
];

describe('invalid options reject with RelocationArgumentError before any state or admission change', () => {
  let host: FrameworkRuntime;
  let statusBefore: RuntimeStatus;
  let events: RuntimeStatus[];
  beforeEach(async () => {
    host = await set.host({ nodeId: 'source', applicationVersion: SOURCE_VERSION });
    await set.host({ nodeId: 'target', applicationVersion: SOURCE_VERSION });
    await host.createActor('Counter', 'c1');
    events = [];
    host.on('zlink.runtime.host.relocation_changed', (s) => events.push(s));
    statusBefore = host.status;
  });

  test.each(invalid)('%s', async (_name, options, field) => {
    let error: unknown;
    try {
      await host.relocate(options as RelocationOptions);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RelocationArgumentError);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as RelocationArgumentError).name).toBe('RelocationArgumentError');
    expect((error as RelocationArgumentError).field).toBe(field);
    expect((error as Error).message).toContain(field);
    await flush();
    // Nothing changed: the same status value, no event, no operation, admission open, the actor not moved.
    expect(host.status).toBe(statusBefore);
    expect(host.status.state).toBe(FrameworkRuntimeState.Serving);
    expect(host.status.lastRelocation).toBeUndefined();
    expect(events).toEqual([]);
    expect(host.diagnostics().operation).toBeUndefined();
    await host.createActor('Counter', 'c2');
    expect(await host.request({ actor: 'c1' }, { op: 'where' })).toBe('source');
  });
});

test('the empty host ends Relocated/None without a target, passing through Relocating', async () => {
  const host = await set.host({ nodeId: 'empty', applicationVersion: 7 });
  const observed = recordStatuses(host);
  const result = await host.relocate({ mode: PM, deadlineMs: 1000 });
  expect(result).toEqual({ mode: PM, targetApplicationVersion: 7, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
  await flush();
  expect(observed.states()).toEqual([FrameworkRuntimeState.Serving, FrameworkRuntimeState.Relocating, FrameworkRuntimeState.Relocated]);
  observed.stop();
  expect(host.status.state).toBe(FrameworkRuntimeState.Relocated);
  expect(host.status.lastRelocation).toEqual(result);
  // Admission closed as in any other relocation (§5.1).
  await expect(host.createActor('Counter', 'late')).rejects.toMatchObject({ name: 'AdmissionError' });

  // RollingUpdate on an empty host: Relocated/None too, carrying the requested version.
  const other = await set.host({ nodeId: 'empty-2', applicationVersion: 7 });
  expect(await other.relocate({ mode: RU, targetApplicationVersion: 9 })).toEqual({
    mode: RU,
    targetApplicationVersion: 9,
    outcome: RelocationOutcome.Relocated,
    reason: RelocationReason.None,
  });
});

test('units but no eligible target wait to the deadline and end Blocked/TargetUnavailable, Serving and admission kept', async () => {
  const host = await set.host({ nodeId: 'source', applicationVersion: 1 });
  // Only a same-version peer exists: not eligible for a RollingUpdate to version 2.
  await set.host({ nodeId: 'same-version', applicationVersion: 1 });
  await host.createActor('Counter', 'c1');
  const observed = recordStatuses(host);
  const started = Date.now();
  const result = await host.relocate({ mode: RU, targetApplicationVersion: 2, deadlineMs: 300 });
  const elapsed = Date.now() - started;
  expect(result).toEqual({ mode: RU, targetApplicationVersion: 2, outcome: RelocationOutcome.Blocked, reason: RelocationReason.TargetUnavailable });
  expect(elapsed).toBeGreaterThanOrEqual(290);
  expect(elapsed).toBeLessThan(2000);
  await flush();
  expect(observed.states()).toEqual([FrameworkRuntimeState.Serving]);
  observed.stop();
  expect(host.status.state).toBe(FrameworkRuntimeState.Serving);
  expect(host.status.isReady).toBe(true);
  expect(host.status.lastRelocation).toEqual(result);
  await host.createActor('Counter', 'c2');
  expect(await host.request({ actor: 'c1' }, { op: 'add', by: 2 })).toBe(2);
  expect((await host.locate({ actor: 'c1' }))?.nodeId).toBe('source');

  // PlannedMaintenance on a lone host: the result carries the source's own version as the effective target.
  const lone = hostSet();
  try {
    const alone = await lone.host({ nodeId: 'alone', applicationVersion: 5 });
    await alone.createActor('Counter', 'c1');
    expect(await alone.relocate({ mode: PM, deadlineMs: 150 })).toEqual({
      mode: PM,
      targetApplicationVersion: 5,
      outcome: RelocationOutcome.Blocked,
      reason: RelocationReason.TargetUnavailable,
    });
  } finally {
    await lone.close();
  }
});

test('argument errors come first, also while an operation waits or after the host stopped', async () => {
  const host = await set.host({ nodeId: 'source', applicationVersion: 1 });
  await host.createActor('Counter', 'c1');
  const waiting = host.relocate({ mode: PM, deadlineMs: 200 });
  await expect(host.relocate({ mode: RU, targetApplicationVersion: 1 })).rejects.toMatchObject({ name: 'RelocationArgumentError', field: 'targetApplicationVersion' });
  expect(await waiting).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Blocked, reason: RelocationReason.TargetUnavailable });
  await host.shutdown();
  await expect(host.relocate({ mode: PM, deadlineMs: -5 })).rejects.toBeInstanceOf(RelocationArgumentError);
  expect(host.status.state).toBe(FrameworkRuntimeState.Stopped);
});
