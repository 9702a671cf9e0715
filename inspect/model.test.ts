/**
 * The inspector's aggregate, fed by real hosts on the memory stack: hosts sharing one observer are told apart by
 * nodeId, unit machines are counted by state whatever their number, samples stay bounded, each machine's structure
 * is produced once, and the supervisor's current state and batch sizes are visible. No browser here
 * (inspector.browser.test.ts drives the page).
 */
import { createActor, setup } from 'xstate';
import { RelocationMode, RelocationOutcome, UNIT_CHANGED } from '../runtime';
import { ALL_TYPES } from '../spec-tests/support/workload';
import { FAST_TIMING, makeStack, type Stack } from '../spec-tests/support/stack';
import { diagramOf } from './diagram';
import { fnv1a, InspectionModel, stateKey, UNTAGGED } from './model';
import type { MachineDiagram } from './types';

const UNITS = 60;

describe('InspectionModel with two hosts (memory+in-process)', () => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack('memory+in-process');
  });
  afterEach(async () => {
    await stack.close();
  });

  test('one observer, two hosts: nodes by nodeId, units counted by state, samples bounded, one diagram per machine', async () => {
    const diagrams: MachineDiagram[] = [];
    const model = new InspectionModel({ sampleSize: 5, onDiagram: (d) => diagrams.push(d) });
    const timing = { ...FAST_TIMING, messageFollowDurationMs: 100 };
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: ALL_TYPES, timing, inspect: model.inspect });
    const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: ALL_TYPES, timing, inspect: model.inspect });
    for (const host of [source, target]) host.on(UNIT_CHANGED, (e) => model.unit(host.nodeId, e));
    for (let i = 0; i < UNITS; i++) await source.createActor('Counter', `c${i}`);

    const result = await source.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 10_000 });
    expect(result.outcome).toBe(RelocationOutcome.Relocated);
    await new Promise((r) => setTimeout(r, 400)); // S4: the follow window ends
    await source.shutdown({ deadlineMs: 5000 });

    const view = model.view();
    expect(view.nodes.map((n) => n.nodeId)).toEqual(['source', 'target']);
    const [src, dst] = view.nodes;
    const machine = (node: typeof src, id: string) => node!.machines.find((m) => m.machine === id);

    expect(machine(src, 'hostLifecycle')!.latest.history).toEqual(['Preparing', 'Serving', 'Relocating', 'Relocated', 'Draining', 'Stopped']);
    expect(machine(dst, 'hostLifecycle')!.latest.state).toBe('Serving');

    const supervisor = machine(src, 'relocationSupervisor')!;
    expect(supervisor.latest.state).toBe('relocated');
    expect(supervisor.latest.history).toEqual(expect.arrayContaining(['preflight', 'relocating.batch1', 'relocating.batch2', 'relocating.batch3', 'relocated']));
    expect(supervisor.latest.context).toMatchObject({ counts: { batch1: 0, batch2: UNITS, batch3: 0 }, target: { nodeId: 'target' } });

    // Unit machines: whatever their ids, every actor is counted, on the node that ran it, by its last state.
    const unitMachines = (node: typeof src) => node!.machines.filter((m) => !['hostLifecycle', 'relocationSupervisor', 'shutdown'].includes(m.machine));
    const sourceUnits = unitMachines(src);
    expect(sourceUnits.length).toBeGreaterThan(0);
    expect(sourceUnits.reduce((n, m) => n + m.total, 0)).toBe(UNITS);
    for (const m of sourceUnits) {
      expect(Object.values(m.byState).reduce((a, b) => a + b, 0)).toBe(m.total);
      expect(m.samples.length).toBeLessThanOrEqual(5);
      expect(m.live).toBe(0);
    }
    expect(unitMachines(dst).reduce((n, m) => n + m.total, 0)).toBeGreaterThan(0);
    expect(machine(src, 'shutdown')!.latest.history).toEqual(['running.sealing', 'running.publishingDraining', 'running.drainingWork', 'running.closingSpots', 'running.cleaningUp', 'done']);

    // Unit events: counts per side, and a bounded sample with S0–S4 (S2, S3 from the target host).
    expect(src!.units!.byState.source!.sealed).toBe(UNITS);
    expect(dst!.units!.byState.target!.opened).toBe(UNITS);
    expect(view.units.length).toBe(5);
    for (const u of view.units) {
      expect(u).toMatchObject({ source: 'source', target: 'target', kind: 'actor' });
      expect(Object.keys(u.points).sort()).toEqual(['S0', 'S1', 'S2', 'S3', 'S4']);
    }

    // One structure per machine id, whatever the number of actors.
    const ids = diagrams.map((d) => d.machine);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining(['hostLifecycle', 'relocationSupervisor', 'shutdown']));
    // The view is JSON (what the page receives).
    expect(JSON.parse(JSON.stringify(view))).toEqual(view);
  });
});

describe('InspectionModel units', () => {
  const machine = setup({}).createMachine({
    id: 'toy',
    initial: 'a',
    states: { a: { on: { GO: 'b' } }, b: { initial: 'x', states: { x: { on: { GO: 'y' } }, y: { type: 'final' } }, onDone: 'c' }, c: { type: 'final' } },
  });

  test('state paths, untagged events, and a bottom-k sample of actors by id hash', () => {
    expect(stateKey('a')).toBe('a');
    expect(stateKey({ b: 'x' })).toBe('b.x');
    expect(stateKey({ p: { l: 'a', r: 'b' } })).toBe('p.l.a,p.r.b');
    const model = new InspectionModel({ sampleSize: 2 });
    const actors = Array.from({ length: 5 }, () => createActor(machine, { inspect: model.inspect }).start());
    for (const a of actors) {
      a.send({ type: 'GO' });
      a.send({ type: 'GO' });
    }
    actors[4]!.send({ type: 'GO' }); // ignored: already done
    const m = model.view().nodes[0]!;
    expect(m.nodeId).toBe(UNTAGGED);
    expect(m.machines[0]).toMatchObject({ machine: 'toy', total: 5, live: 0, byState: { c: 5 } });
    const smallest = actors.map((a) => a.id).sort((x, y) => fnv1a(x) - fnv1a(y)).slice(0, 2);
    expect(m.machines[0]!.samples.map((s) => s.id)).toEqual(smallest);
    for (const s of m.machines[0]!.samples) expect(s.history).toEqual(['a', 'b.x', 'c']);
    expect(m.machines[0]!.latest).toMatchObject({ id: actors[4]!.id, history: ['a', 'b.x', 'c'] });
  });

  test('unit samples: two processes seeing the same units in different orders sample the same ones', () => {
    const a = new InspectionModel({ sampleSize: 4 });
    const b = new InspectionModel({ sampleSize: 4 });
    const units = Array.from({ length: 200 }, (_, i) => `unit-${i}`);
    for (const unit of units) a.unit('source', { side: 'source', unit, kind: 'actor', state: 'sealed', point: 'S0', at: 1 });
    for (const unit of [...units].reverse()) b.unit('target', { side: 'target', unit, kind: 'actor', state: 'committed', point: 'S2', at: 2 });
    const sampled = (m: InspectionModel) => m.view().units.map((u) => u.unit);
    expect(sampled(a)).toHaveLength(4);
    expect(sampled(b)).toEqual(sampled(a));
  });

  test('diagram: states, initial, finals and transitions with shortened event names', () => {
    const d = diagramOf(machine);
    expect(d.root.children.map((c) => [c.key, c.type])).toEqual([
      ['a', 'atomic'],
      ['b', 'compound'],
      ['c', 'final'],
    ]);
    expect(d.root.initial).toBe('toy.a');
    expect(d.edges).toEqual(
      expect.arrayContaining([
        { source: 'toy.a', target: 'toy.b', label: 'GO' },
        { source: 'toy.b.x', target: 'toy.b.y', label: 'GO' },
        { source: 'toy.b', target: 'toy.c', label: 'done' },
      ]),
    );
  });
});
