import type { NodeDescriptor, NodeRef, TypeCapability } from '../../stores/types';
import { FrameworkRuntimeState } from '../../vocabulary';
import { selectTarget, type SelectionInput } from './target-selection';

const COUNTER: TypeCapability = { type: 'counter', kind: 'actor', policy: 'preserve', adapter: 'json-v1' };
const ROOM: TypeCapability = { type: 'room', kind: 'user', policy: 'recreate', executionMode: 'SpotWide' };

const SOURCE = { nodeId: 'src', lifecycleGeneration: 1 };

function node(nodeId: string, over: Partial<NodeDescriptor> = {}): NodeDescriptor {
  return {
    nodeId,
    lifecycleGeneration: 1,
    applicationVersion: 3,
    state: FrameworkRuntimeState.Serving,
    endpoints: { main: `memory://${nodeId}` },
    types: [COUNTER, ROOM],
    capacity: 100,
    load: 0,
    weight: 1,
    ...over,
  };
}

function select(descriptors: NodeDescriptor[], over: Partial<SelectionInput> = {}) {
  const peerChecks: NodeRef[] = [];
  const isReady = over.isReadyOnEveryMesh ?? (() => true);
  const result = selectTarget({
    source: SOURCE,
    targetApplicationVersion: 3,
    requiredTypes: [COUNTER, ROOM],
    objectCount: 10,
    descriptors,
    ...over,
    isReadyOnEveryMesh: (peer) => {
      peerChecks.push(peer);
      return isReady(peer);
    },
  });
  return { ...result, id: result.target?.nodeId, peerChecks };
}

test('one eligible node is selected; survivors count every step', () => {
  const r = select([node('t1')]);
  expect(r.id).toBe('t1');
  expect(r.survivors).toEqual({ version: 1, serving: 1, compatibility: 1, capacity: 1, peer: 1 });
});

test('no descriptors, or only the source itself → no target', () => {
  expect(select([]).target).toBeUndefined();
  expect(select([]).survivors).toEqual({ version: 0, serving: 0, compatibility: 0, capacity: 0, peer: 0 });
  const onlySelf = select([node('src')]);
  expect(onlySelf.target).toBeUndefined();
  expect(onlySelf.survivors).toMatchObject({ version: 1, serving: 0 });
});

describe('order 1: version', () => {
  test('keeps exactly the requested version, excluding lower and higher', () => {
    const r = select([node('lower', { applicationVersion: 2 }), node('exact'), node('higher', { applicationVersion: 4 })]);
    expect(r.id).toBe('exact');
    expect(r.survivors.version).toBe(1);
  });

  test('RollingUpdate: the requested version, not the source’s', () => {
    const r = select([node('same', { applicationVersion: 3 }), node('next', { applicationVersion: 4 })], { targetApplicationVersion: 4 });
    expect(r.id).toBe('next');
  });

  test('is checked before capacity and weight: a wrong-version node’s room and weight change nothing', () => {
    const big = node('big-other-version', { applicationVersion: 4, capacity: 1_000_000, weight: 1000 });
    const r = select([big, node('small', { capacity: 10, weight: 0.1 })]);
    expect(r.id).toBe('small');
    expect(r.survivors).toEqual({ version: 1, serving: 1, compatibility: 1, capacity: 1, peer: 1 });
    // ... and its absence of room would not matter either.
    const none = select([node('full-other-version', { applicationVersion: 2, capacity: 0 })]);
    expect(none.survivors).toEqual({ version: 0, serving: 0, compatibility: 0, capacity: 0, peer: 0 });
  });
});

describe('order 2: not the source, Serving', () => {
  test.each([
    ['Preparing', FrameworkRuntimeState.Preparing],
    ['Relocating', FrameworkRuntimeState.Relocating],
    ['Relocated', FrameworkRuntimeState.Relocated],
    ['Draining', FrameworkRuntimeState.Draining],
    ['Stopped', FrameworkRuntimeState.Stopped],
    ['Error', FrameworkRuntimeState.Error],
  ])('a %s node is excluded', (_name, state) => {
    const r = select([node('t', { state })]);
    expect(r.target).toBeUndefined();
    expect(r.survivors).toMatchObject({ version: 1, serving: 0 });
  });

  test('the source is excluded by RID, whatever its generation', () => {
    const r = select([node('src', { lifecycleGeneration: 9 }), node('t')]);
    expect(r.id).toBe('t');
    expect(r.survivors).toMatchObject({ version: 2, serving: 1 });
  });

  test('every remote peer draining → no target', () => {
    const r = select([node('a', { state: FrameworkRuntimeState.Draining }), node('b', { state: FrameworkRuntimeState.Draining })]);
    expect(r.target).toBeUndefined();
  });
});

describe('order 3: compatibility', () => {
  test.each([
    ['missing a type', { types: [COUNTER] }],
    ['another adapter', { types: [{ ...COUNTER, adapter: 'json-v2' }, ROOM] }],
    ['another policy', { types: [{ ...COUNTER, policy: 'recreate' as const, adapter: undefined }, ROOM] }],
    ['another kind', { types: [{ ...COUNTER, kind: 'instance' as const }, ROOM] }],
    ['another execution mode', { types: [COUNTER, { ...ROOM, executionMode: 'PerActor' as const }] }],
  ])('a node %s is excluded', (_name, over) => {
    const r = select([node('t', over)]);
    expect(r.target).toBeUndefined();
    expect(r.survivors).toMatchObject({ version: 1, serving: 1, compatibility: 0, capacity: 0, peer: 0 });
  });

  test('extra types on the target are fine; no required types means any Serving node', () => {
    expect(select([node('t', { types: [COUNTER, ROOM, { type: 'extra', kind: 'actor', policy: 'disable' }] })]).id).toBe('t');
    expect(select([node('t', { types: [] })], { requiredTypes: [] }).id).toBe('t');
  });
});

describe('order 4: capacity and maintenance wave', () => {
  test('remaining capacity (capacity - load) must hold every moving object; the boundary is inclusive', () => {
    expect(select([node('t', { capacity: 100, load: 90 })], { objectCount: 10 }).id).toBe('t');
    const r = select([node('t', { capacity: 100, load: 91 })], { objectCount: 10 });
    expect(r.target).toBeUndefined();
    expect(r.survivors).toMatchObject({ compatibility: 1, capacity: 0 });
  });

  test('a source with a maintenance wave excludes nodes of the same wave', () => {
    const source = { ...SOURCE, maintenanceWave: 'w1' };
    const r = select([node('same', { maintenanceWave: 'w1', weight: 100 }), node('other', { maintenanceWave: 'w2' }), node('none')], { source });
    expect(r.survivors.capacity).toBe(2);
    expect(r.id).not.toBe('same');
    expect(select([node('same', { maintenanceWave: 'w1' })], { source }).target).toBeUndefined();
  });

  test('a source without a wave ignores the targets’ waves', () => {
    expect(select([node('t', { maintenanceWave: 'w1' })]).id).toBe('t');
  });
});

describe('order 5: peer readiness', () => {
  test('isReadyOnEveryMesh false excludes the node; it is asked with the descriptor’s RID and generation', () => {
    const r = select([node('ready', { lifecycleGeneration: 4 }), node('notReady', { lifecycleGeneration: 5, weight: 10 })], {
      isReadyOnEveryMesh: (peer) => peer.nodeId === 'ready',
    });
    expect(r.id).toBe('ready');
    expect(r.survivors).toEqual({ version: 2, serving: 2, compatibility: 2, capacity: 2, peer: 1 });
    expect(r.peerChecks).toEqual(
      expect.arrayContaining([
        { nodeId: 'ready', lifecycleGeneration: 4 },
        { nodeId: 'notReady', lifecycleGeneration: 5 },
      ]),
    );
  });

  test('a stale generation (descriptor and peer table disagree) is not ready', () => {
    const peerTable = new Set(['t#1']);
    const r = select([node('t', { lifecycleGeneration: 2 })], { isReadyOnEveryMesh: (p) => peerTable.has(`${p.nodeId}#${p.lifecycleGeneration}`) });
    expect(r.target).toBeUndefined();
    expect(r.survivors.peer).toBe(0);
  });

  test('runs last: only nodes that passed orders 1–4 are checked', () => {
    const r = select([
      node('wrongVersion', { applicationVersion: 9 }),
      node('draining', { state: FrameworkRuntimeState.Draining }),
      node('incompatible', { types: [] }),
      node('full', { load: 100 }),
      node('ok'),
    ]);
    expect(r.peerChecks.map((p) => p.nodeId)).toEqual(['ok']);
    expect(r.survivors).toEqual({ version: 4, serving: 3, compatibility: 2, capacity: 1, peer: 1 });
  });
});

describe('weight', () => {
  test('orders the survivors: highest weight wins', () => {
    expect(select([node('w1', { weight: 1 }), node('w5', { weight: 5 }), node('w3', { weight: 3 })]).id).toBe('w5');
  });

  test('only orders survivors: a heavier node excluded by any step is never chosen', () => {
    const r = select([
      node('heavyNotReady', { weight: 100 }),
      node('heavyFull', { weight: 90, load: 95 }),
      node('heavyWave', { weight: 80, maintenanceWave: 'w' }),
      node('light', { weight: 1 }),
    ], { source: { ...SOURCE, maintenanceWave: 'w' }, isReadyOnEveryMesh: (p) => p.nodeId !== 'heavyNotReady' });
    expect(r.id).toBe('light');
  });

  test('ties: most free capacity, then RID', () => {
    expect(select([node('a', { load: 50 }), node('b', { load: 10 })]).id).toBe('b');
    expect(select([node('b'), node('a')]).id).toBe('a');
  });

  test('the input list is not reordered', () => {
    const list = [node('w1', { weight: 1 }), node('w5', { weight: 5 })];
    select(list);
    expect(list.map((d) => d.nodeId)).toEqual(['w1', 'w5']);
  });
});
