/**
 * The source unit actors of a Relocate, seen through the inspection stream (DESIGN.md "Relocation at scale"):
 * children of the invoked pool actor, never in the supervisor's snapshot; at most 4 transitions each on the hot
 * path; one FOLLOW_EXPIRED each from the shared Message Follow timer (S4), or ROUTE_CUT when Shutdown comes first (§14).
 */
import type { AnyActor, InspectionEvent } from 'xstate';
import { RelocationMode, RelocationOutcome, UNIT_CHANGED, type FrameworkRuntime, type UnitEvent } from '../..';
import { eventually, FAST_TIMING, makeStack, type Stack } from '../../../spec-tests/support/stack';
import { ALL_TYPES } from '../../../spec-tests/support/workload';

const UNITS = 40;

interface Seen {
  units: Map<AnyActor, { transitions: number; states: string[] }>;
  supervisorChildren: number[];
}

const machineId = (ref: unknown) => ((ref as AnyActor).logic as { id?: string }).id;

function inspector(): { seen: Seen; inspect: (e: InspectionEvent) => void } {
  const seen: Seen = { units: new Map(), supervisorChildren: [] };
  return {
    seen,
    inspect: (e) => {
      if (e.type === '@xstate.actor' && machineId(e.actorRef) === 'unitSource') seen.units.set(e.actorRef as AnyActor, { transitions: 0, states: [] });
      if (e.type !== '@xstate.snapshot') return;
      const snapshot = e.snapshot as { value?: unknown; children?: Record<string, unknown> };
      if (machineId(e.actorRef) === 'relocationSupervisor') seen.supervisorChildren.push(Object.keys(snapshot.children ?? {}).length);
      const unit = seen.units.get(e.actorRef as AnyActor);
      if (!unit) return;
      unit.states.push(String(snapshot.value));
      if (e.event.type !== 'xstate.init') unit.transitions++;
    },
  };
}

describe('source unit actors (memory+in-process)', () => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack('memory+in-process');
  });
  afterEach(async () => {
    await stack.close();
  });

  const pair = async (messageFollowDurationMs: number) => {
    const { seen, inspect } = inspector();
    const timing = { ...FAST_TIMING, messageFollowDurationMs };
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: ALL_TYPES, timing, inspect });
    await stack.host({ nodeId: 'target', applicationVersion: 1, types: ALL_TYPES, timing });
    for (let i = 0; i < UNITS; i++) await source.createActor('Counter', `c${i}`);
    const events: UnitEvent[] = [];
    source.on(UNIT_CHANGED, (e) => events.push(e));
    return { source, seen, events };
  };

  const relocate = async (source: FrameworkRuntime) =>
    expect((await source.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 10_000 })).outcome).toBe(RelocationOutcome.Relocated);

  test('units are children of the pool actor, the supervisor holds one child, and each unit takes ≤ 4 transitions to S4', async () => {
    const { source, seen, events } = await pair(200);
    await relocate(source);
    expect(seen.units.size).toBe(UNITS);
    for (const ref of seen.units.keys()) {
      const pool = ref._parent as AnyActor;
      expect(pool.id).toBe('pool');
      expect(machineId(pool._parent)).toBe('relocationSupervisor');
    }
    // The supervisor's snapshot never carries the units (O(1) children, DESIGN.md measured traps).
    expect(Math.max(...seen.supervisorChildren)).toBeLessThanOrEqual(1);
    // Relocated at S1 (§13): the units are still following.
    expect(source.diagnostics().units.sourceInFlight).toBe(0);
    await eventually(() => events.filter((e) => e.state === 'followEnded').length === UNITS, 5000, 'S4 of every unit');
    for (const unit of seen.units.values()) {
      expect(unit.states).toEqual(['waiting', 'sealed', 'following', 'followEnded']);
      expect(unit.transitions).toBeLessThanOrEqual(4);
    }
    for (const ref of seen.units.keys()) expect(ref.getSnapshot().status).toBe('done');
    expect(source.diagnostics().followRoutes).toBe(0);
  });

  test('Shutdown before S4 cuts the follow routes: following units end in routeCut (§14)', async () => {
    const { source, seen } = await pair(60_000);
    await relocate(source);
    for (const ref of seen.units.keys()) expect(ref.getSnapshot().value).toBe('following');
    await source.shutdown({ deadlineMs: 5000 });
    for (const ref of seen.units.keys()) {
      expect(ref.getSnapshot().value).toBe('routeCut');
      expect(ref.getSnapshot().status).toBe('done');
    }
  });
});
