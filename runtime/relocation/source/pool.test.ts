/**
 * The source unit actors of a Relocate, seen through the inspection stream (DESIGN.md "Relocation at scale"):
 * children of the invoked pool actor, never in the supervisor's snapshot; at most 4 transitions each on the hot
 * path; one FOLLOW_EXPIRED each from the shared Message Follow timer (S4), or ROUTE_CUT when Shutdown comes first (§14).
 */
import type { AnyActor, InspectionEvent } from 'xstate';
import { defineActor, preserveState, RelocationMode, RelocationOutcome, RelocationReason, UNIT_CHANGED, type FrameworkRuntime, type UnitEvent } from '../..';
import { eventually, FAST_TIMING, makeStack, type Stack } from '../../../spec-tests/support/stack';
import { ALL_TYPES } from '../../../spec-tests/support/workload';
import { initialSealWindow, sealWindowBound } from './seal-gate';

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

  test('a relocation starts at 128 units sealed once its bound reaches 128 (32,768 units), else at 16 (seal-gate.ts initialSealWindow)', () => {
    expect([initialSealWindow(1_000_000), initialSealWindow(100_000), initialSealWindow(32_768), initialSealWindow(32_767), initialSealWindow(10_000), initialSealWindow(1)]).toEqual([128, 128, 128, 16, 16, 16]);
  });

  test('a relocation seals at most 1/256 of its units at once, at most 256, and never fewer than 32 (seal-gate.ts sealWindowBound)', async () => {
    expect([sealWindowBound(1_000_000), sealWindowBound(100_000), sealWindowBound(32_768), sealWindowBound(16_384), sealWindowBound(10_000), sealWindowBound(2_000), sealWindowBound(1)]).toEqual([256, 256, 128, 64, 39, 32, 32]);
    const n = 2000;
    const timing = { ...FAST_TIMING, messageFollowDurationMs: 200 };
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: ALL_TYPES, timing });
    await stack.host({ nodeId: 'target', applicationVersion: 1, types: ALL_TYPES, timing });
    for (let i = 0; i < n; i++) await source.createActor('Counter', `c${i}`);
    let sealed = 0;
    let most = 0;
    source.on(UNIT_CHANGED, (e) => {
      if (e.side !== 'source') return;
      if (e.state === 'sealed') most = Math.max(most, ++sealed);
      else if (e.state === 'cutOver' || e.state === 'restored') sealed--;
    });
    await relocate(source);
    // Units that cut over fast grow the window to its bound within a few rounds; this move's bound is 32 (1/256 of
    // 2,000 units is less). (A loaded machine may keep it smaller; it never goes above.)
    expect(most).toBeLessThanOrEqual(32);
  });

  /** A source and a target with a budget one unit fills, and an Actor whose turn holds until `release()`. */
  const heldBudget = async () => {
    let release: () => void = () => undefined;
    let running = false;
    const Hold = defineActor<{ n: number }>({
      type: 'Hold',
      relocation: preserveState({ capture: (st) => Buffer.from(JSON.stringify(st)), restore: (b) => JSON.parse(b.toString()) as { n: number } }),
      create: () => ({ n: 0 }),
      receive: (state) => {
        running = true;
        return new Promise<number>((resolve) => (release = () => resolve(++state.n)));
      },
    });
    const { seen, inspect } = inspector();
    const types = [...ALL_TYPES, Hold];
    const budget = { inFlightPayloadBudgetBytes: 1024 }; // the first unit's estimate fills it
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types, timing: FAST_TIMING, inspect, ...budget });
    await stack.host({ nodeId: 'target', applicationVersion: 1, types, timing: FAST_TIMING, ...budget });
    // Inventory order: the Hold unit comes first, takes the whole budget and waits for its turn to end.
    await source.createActor('Hold', 'hold');
    for (let i = 0; i < UNITS; i++) await source.createActor('Counter', `c${i}`);
    const events: UnitEvent[] = [];
    source.on(UNIT_CHANGED, (e) => void (e.side === 'source' && events.push(e)));
    const turn = source.request({ actor: 'hold' }, { op: 'hold' }, { timeoutMs: 20_000 });
    await eventually(() => running, 2000, 'the held turn runs');
    return { source, seen, events, turn, release: () => release() };
  };

  test('a unit waiting for payload budget is in flight without an actor; its machine is created when the budget is granted (§7)', async () => {
    const { source, seen, turn, release } = await heldBudget();
    const moved = source.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 20_000 });
    await eventually(() => source.diagnostics().units.sourceByState.safePoint === 1, 5000, 'the first unit at its safe point');
    const { units } = source.diagnostics({ limit: 0 });
    // Every unit is in flight and waits (§7: no cap on concurrent units); only the one holding budget has a machine.
    expect(units.sourceInFlight).toBe(UNITS + 1);
    expect(units.sourceByState).toEqual({ budget: UNITS, safePoint: 1 });
    expect(seen.units.size).toBe(1);
    release();
    expect(await turn).toBe(1);
    expect((await moved).outcome).toBe(RelocationOutcome.Relocated);
    expect(seen.units.size).toBe(UNITS + 1);
    for (const unit of seen.units.values()) expect(unit.states.slice(0, 3)).toEqual(['waiting', 'sealed', 'following']);
  });

  test('at the deadline, units still waiting for budget end notStarted without ever having had a machine (§8)', async () => {
    const { source, seen, events, turn, release } = await heldBudget();
    // Long enough that the batch starts even on a loaded machine (target wait, preflight); the held unit never seals.
    const result = await source.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 2500 });
    expect(result).toMatchObject({ outcome: RelocationOutcome.Blocked, reason: RelocationReason.DeadlineExceeded });
    await eventually(() => source.diagnostics().units.sourceInFlight === 0, 5000, 'every unit ended');
    // Each unit ended exactly once, not started; only the one that held the budget ever had a machine.
    expect(events.map((e) => e.state)).toEqual(Array.from({ length: UNITS + 1 }, () => 'notStarted'));
    expect(new Set(events.map((e) => e.unit)).size).toBe(UNITS + 1);
    expect(seen.units.size).toBe(1);
    expect([...seen.units.values()][0]!.states).toEqual(['waiting', 'notStarted']);
    release();
    expect(await turn).toBe(1);
    expect(await source.request({ actor: 'c0' }, { op: 'where' })).toBe('source'); // still served here
  });

  test('Shutdown during a relocation larger than the lookahead ends the units still queued without a driver, each once (§14)', async () => {
    const n = 1500; // well past the 256 units whose machines are started ahead of the seal window
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: ALL_TYPES, timing: FAST_TIMING });
    await stack.host({ nodeId: 'target', applicationVersion: 1, types: ALL_TYPES, timing: FAST_TIMING });
    for (let i = 0; i < n; i++) await source.createActor('Counter', `c${i}`);
    const ends = new Map<string, string[]>();
    let queuedSeen = 0;
    source.on(UNIT_CHANGED, (e) => {
      if (e.side !== 'source' || !['cutOver', 'restored', 'notStarted', 'closed'].includes(e.state)) return;
      ends.set(e.unit, [...(ends.get(e.unit) ?? []), e.state]);
      // Shutdown as soon as the first unit crossed, while most of the batch still waits for its turn.
      if (ends.size === 1) {
        queuedSeen = source.diagnostics({ limit: 0 }).units.sourceByState.queued ?? 0;
        void source.shutdown({ deadlineMs: 10_000 });
      }
    });
    const result = await source.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 20_000 });
    expect(result.outcome).not.toBe(RelocationOutcome.Relocated);
    await eventually(() => source.diagnostics().units.sourceInFlight === 0, 10_000, 'every unit ended');
    expect(queuedSeen).toBeGreaterThan(0); // units without a driver were counted in flight, then ended
    expect(ends.size).toBe(n);
    for (const states of ends.values()) expect(states).toHaveLength(1);
    expect([...ends.values()].filter(([state]) => state === 'notStarted').length).toBeGreaterThan(0);
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
