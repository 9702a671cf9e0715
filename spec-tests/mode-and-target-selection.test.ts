/**
 * Spec 05 §17 "Mode and target selection": one test per item (§2.1, §4, §5, §5.1). Public API, unit events and
 * diagnostics only; every scenario runs on both stacks (memory + in-process, Redis + ws).
 */
import {
  FrameworkRuntimeState,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  UNIT_CHANGED,
  type FrameworkRuntime,
  type MeshConfig,
  type ObjectRef,
  type UnitEvent,
} from '../runtime';
import { eventually, makeStack, STACKS, type Stack, type StackName } from './support/stack';
import { ALL_TYPES } from './support/workload';
import { expectBlockedByManualTopology } from './manual-topology/expect-blocked';

const PM = RelocationMode.PlannedMaintenance;
const RU = RelocationMode.RollingUpdate;

function meshes(stack: StackName, names: string[]): MeshConfig[] {
  return names.map((name) => (stack === 'redis+ws' ? { name, listen: { host: '127.0.0.1', port: 0 } } : { name }));
}

/** A few objects of every unit kind on `host`; returns their refs. */
async function populate(host: FrameworkRuntime, prefix: string): Promise<ObjectRef[]> {
  const refs: ObjectRef[] = [];
  for (let i = 0; i < 3; i++) {
    await host.createActor('Counter', `${prefix}-c${i}`);
    refs.push({ actor: `${prefix}-c${i}` });
  }
  await host.createSpot('Room', `${prefix}-room`);
  await host.createActor('Player', `${prefix}-p0`, { spot: `${prefix}-room` });
  refs.push({ spot: `${prefix}-room` }, { actor: `${prefix}-p0` });
  expect(await host.request({ spot: `${prefix}-shard` }, { op: 'where' })).toBe(host.nodeId);
  refs.push({ spot: `${prefix}-shard` });
  return refs;
}

/** Waits until `from` can run a request on an object owned by `to` (their peer connection is Ready). */
async function connected(from: FrameworkRuntime, to: FrameworkRuntime): Promise<void> {
  const probe = `probe-${to.nodeId}`;
  if (!(await to.locate({ actor: probe }))) await to.createActor('Counter', probe);
  await eventually(async () => (await from.request({ actor: probe }, { op: 'where' }, { timeoutMs: 500 }).catch(() => '')) === to.nodeId, 5000, `${from.nodeId} reaches ${to.nodeId}`);
}

async function owners(host: FrameworkRuntime, refs: ObjectRef[]): Promise<string[]> {
  return Promise.all(refs.map(async (ref) => (await host.locate(ref))?.nodeId ?? 'none'));
}

/**
 * Waits until every ref's owner record names `nodeId` and returns the owners. Relocated is the source's result
 * (every cutover submit reached a terminal); the target's CAS follows it (§5.1, §13).
 */
async function ownedBy(host: FrameworkRuntime, refs: ObjectRef[], nodeId: string): Promise<string[]> {
  await eventually(async () => (await owners(host, refs)).every((o) => o === nodeId), 5000, `owner records name ${nodeId}`).catch(() => undefined);
  return owners(host, refs);
}

/** Records the target-side unit events a host receives. */
function inbound(host: FrameworkRuntime): UnitEvent[] {
  const events: UnitEvent[] = [];
  host.on(UNIT_CHANGED, (e) => void (e.side === 'target' && events.push(e)));
  return events;
}

describe.each(STACKS)('Mode and target selection on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await stack.close();
  });

  test('Planned maintenance selects only the same version, and rolling update selects only the requested higher version.', async () => {
    const host = (nodeId: string, applicationVersion: number) => stack.host({ nodeId, applicationVersion, types: ALL_TYPES });
    const v1 = await host('v1-other', 1);
    const v2 = await host('v2', 2);
    const v3 = await host('v3', 3);
    const seen = { v1: inbound(v1), v2: inbound(v2), v3: inbound(v3) };
    const units = () => ({ v1: seen.v1.length, v2: seen.v2.length, v3: seen.v3.length });

    // PlannedMaintenance: effective target version = the source's; v2 and v3 are ignored.
    const pm = await host('pm-source', 1);
    const pmRefs = await populate(pm, 'pm');
    for (const peer of [v1, v2, v3]) await connected(pm, peer);
    expect(await pm.relocate({ mode: PM, deadlineMs: 10_000 })).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
    expect(await ownedBy(pm, pmRefs, 'v1-other')).toEqual(pmRefs.map(() => 'v1-other'));
    expect(await pm.request({ actor: 'pm-c0' }, { op: 'where' })).toBe('v1-other');
    expect(units()).toMatchObject({ v2: 0, v3: 0 });
    expect(units().v1).toBeGreaterThan(0);
    const afterPm = units();

    // RollingUpdate to 3: only v3 — never the (closer) v2, never the same-version peer.
    const ru3 = await host('ru3-source', 1);
    const ru3Refs = await populate(ru3, 'ru3');
    for (const peer of [v1, v2, v3]) await connected(ru3, peer);
    expect(await ru3.relocate({ mode: RU, targetApplicationVersion: 3, deadlineMs: 10_000 })).toEqual({ mode: RU, targetApplicationVersion: 3, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
    expect(await ownedBy(ru3, ru3Refs, 'v3')).toEqual(ru3Refs.map(() => 'v3'));
    expect(await ru3.request({ spot: 'ru3-room' }, { op: 'where' })).toBe('v3');
    expect(units()).toMatchObject({ v1: afterPm.v1, v2: 0 });
    const afterRu3 = units();

    // RollingUpdate to 2: exactly 2 — the higher v3 is excluded as well.
    const ru2 = await host('ru2-source', 1);
    const ru2Refs = await populate(ru2, 'ru2');
    for (const peer of [v1, v2, v3]) await connected(ru2, peer);
    expect(await ru2.relocate({ mode: RU, targetApplicationVersion: 2, deadlineMs: 10_000 })).toEqual({ mode: RU, targetApplicationVersion: 2, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
    expect(await ownedBy(ru2, ru2Refs, 'v2')).toEqual(ru2Refs.map(() => 'v2'));
    expect(units()).toMatchObject({ v1: afterPm.v1, v3: afterRu3.v3 });
    // Every unit that reached a target was opened there.
    for (const list of Object.values(seen)) {
      const opened = new Set(list.filter((e) => e.state === 'opened').map((e) => e.unit));
      const prepared = new Set(list.map((e) => e.unit));
      expect(opened).toEqual(prepared);
    }
  }, 60_000);

  test('Version applies before capacity and weight, and excludes the same wave.', async () => {
    const host = (nodeId: string, o: { v?: number; wave?: string; weight?: number; capacity?: number }) =>
      stack.host({
        nodeId,
        applicationVersion: o.v ?? 1,
        types: ALL_TYPES,
        ...(o.wave !== undefined ? { maintenanceWave: o.wave } : {}),
        ...(o.weight !== undefined ? { weight: o.weight } : {}),
        ...(o.capacity !== undefined ? { capacity: o.capacity } : {}),
      });
    const source = await host('source', { wave: 'w1' });
    const refs = await populate(source, 'obj'); // 6 objects move
    // Higher weight and far more room, but a different version: never a candidate.
    const otherVersion = await host('big-v2', { v: 2, weight: 1000, capacity: 1_000_000 });
    // Same version, heavier, but the source's maintenance wave: excluded.
    const sameWave = await host('same-wave', { wave: 'w1', weight: 1000 });
    // Same version, heaviest, but without room for the 6 objects (its own probe uses one slot).
    const small = await host('small', { wave: 'w2', weight: 1000, capacity: 4 });
    // Two eligible equals: the higher weight wins.
    const light = await host('light', { wave: 'w2', weight: 1 });
    const heavy = await host('heavy', { wave: 'w3', weight: 5 });
    const peers = [otherVersion, sameWave, small, light, heavy];
    for (const peer of peers) await connected(source, peer);
    const seen = new Map(peers.map((p) => [p.nodeId, inbound(p)]));

    const result = await source.relocate({ mode: PM, deadlineMs: 10_000 });
    expect(result).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
    expect(await ownedBy(source, refs, 'heavy')).toEqual(refs.map(() => 'heavy'));
    expect(await source.request({ actor: 'obj-c1' }, { op: 'where' })).toBe('heavy');
    for (const [nodeId, events] of seen) expect([nodeId, events.length > 0]).toEqual([nodeId, nodeId === 'heavy']);
    // §5 order, as counted by the last search: 5 descriptors of version 1 (big-v2 dropped first), 4 besides the
    // source, 4 compatible, 2 left after capacity and wave (small and same-wave dropped), both Ready.
    expect(source.diagnostics().lastSelection).toEqual({ version: 5, serving: 4, compatibility: 4, capacity: 2, peer: 2 });
  }, 60_000);

  test("The Framework proceeds only once that Core peer is Ready on every Mesh. If there's no target, it waits and blocks on manual topology.", async () => {
    const twoMeshes = meshes(stackName, ['main', 'aux']);
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: ALL_TYPES, meshes: twoMeshes });
    const refs = await populate(source, 'obj');

    // A same-version node on only one of the source's meshes is never Ready on every mesh: no target.
    const partial = await stack.host({ nodeId: 'partial', applicationVersion: 1, types: ALL_TYPES, meshes: meshes(stackName, ['main']) });
    const partialUnits = inbound(partial);
    await connected(source, partial); // Ready on 'main'
    const noTarget = await source.relocate({ mode: PM, deadlineMs: 600 });
    expect(noTarget).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Blocked, reason: RelocationReason.TargetUnavailable });
    expect(source.diagnostics().lastSelection).toMatchObject({ version: 2, serving: 1, compatibility: 1, capacity: 1, peer: 0 });
    expect(source.status.state).toBe(FrameworkRuntimeState.Serving);
    expect(partialUnits).toEqual([]);
    expect(await owners(source, refs)).toEqual(refs.map(() => 'source'));

    // While it waits, source state and admission are kept; a target that appears meanwhile is taken.
    const pending = source.relocate({ mode: PM, deadlineMs: 15_000 });
    await new Promise((r) => setTimeout(r, 100));
    expect(source.status.state).toBe(FrameworkRuntimeState.Serving);
    expect(source.diagnostics().operation?.phase).toBe('awaitingTarget');
    expect(await source.request({ actor: 'obj-c0' }, { op: 'where' })).toBe('source');
    await source.createActor('Counter', 'created-while-waiting');
    refs.push({ actor: 'created-while-waiting' });
    const late = await stack.host({ nodeId: 'late', applicationVersion: 1, types: ALL_TYPES, meshes: meshes(stackName, ['main', 'aux']) });
    expect(await pending).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
    expect(await ownedBy(source, refs, 'late')).toEqual(refs.map(() => 'late'));
    expect(await late.request({ actor: 'obj-c0' }, { op: 'where' })).toBe('late');
    expect(partialUnits).toEqual([]);

    // A registered manual peer blocks even with a Ready target; registration counts, not connection.
    const manual = await stack.host({ nodeId: 'manual', applicationVersion: 1, types: ALL_TYPES, meshes: twoMeshes.map((m) => ({ ...m })) });
    const manualRefs = await populate(manual, 'm');
    await connected(manual, late);
    manual.registerManualPeer('aux', stackName === 'redis+ws' ? 'ws://127.0.0.1:9/never' : 'memory://nobody/1/aux');
    // The §4 manual-topology assertion (shared with spec-tests/manual-topology/*).
    await expectBlockedByManualTopology(manual, manualRefs, { actor: 'Counter' });
    expect(await manual.request({ actor: 'm-c0' }, { op: 'where' })).toBe('manual');
  }, 60_000);
});
