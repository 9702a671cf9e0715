/**
 * Spec 05 §17 "Metrics and SafeToShutdown" (§8, §13, §14, §16): one test per item, on both stacks, plus the
 * wire-value check of relocation results in status, events and metrics. Metrics are read through an
 * OpenTelemetry SDK MetricReader installed as the global provider for this file.
 */
import type { Histogram } from '@opentelemetry/sdk-metrics';
import {
  defineActor,
  disableRelocation,
  FrameworkRuntimeState,
  isValidRelocationResult,
  nameOf,
  RELOCATION_CHANGED,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  TerminationOutcome,
  TerminationReason,
  UNIT_CHANGED,
  type Clock,
  type FrameworkRuntime,
  type RuntimeStatus,
  type Timing,
  type UnitEvent,
} from '../runtime';
import { installTestMetrics, type MetricPoint, type TestMetrics } from './support/metrics';
import { eventually, FAST_TIMING, makeStack, STACKS, type Stack } from './support/stack';
import { ALL_TYPES, checkSequence, type Ledger } from './support/workload';

const PM = RelocationMode.PlannedMaintenance;
const SKEW = 1e9;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Real timers, but a wall clock `offset` ms away from this process's. */
const skewedClock = (offset: number): Clock => ({
  now: () => Date.now() + offset,
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
});

const Pinned = defineActor<{ n: number }>({ type: 'Pinned', relocation: disableRelocation(), create: () => ({ n: 0 }), receive: (s) => ++s.n });
const TYPES = [...ALL_TYPES, Pinned];

const relocated = { mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None };

let metrics: TestMetrics;
beforeAll(() => {
  metrics = installTestMetrics();
});
afterAll(async () => {
  await metrics.shutdown();
});

function unitEvents(host: FrameworkRuntime): UnitEvent[] {
  const events: UnitEvent[] = [];
  host.on(UNIT_CHANGED, (e) => events.push(e));
  return events;
}

/** Every status the host publishes from now on, in order. */
function observed(host: FrameworkRuntime): { values: RuntimeStatus[]; stop(): void } {
  const values: RuntimeStatus[] = [];
  const controller = new AbortController();
  void (async () => {
    for await (const s of host.observe({ signal: controller.signal })) values.push(s);
  })();
  return { values, stop: () => controller.abort() };
}

/** One Entry Actor, a PerActor Spot with a member, a SpotWide Spot with members and an Instance Spot: 6 units. */
async function workload(source: FrameworkRuntime): Promise<number> {
  await source.createActor('Counter', 'c1');
  await source.createSpot('Lobby', 'lobby-1');
  await source.createActor('Player', 'lp-1', { spot: 'lobby-1' });
  await source.createSpot('Room', 'room-1');
  for (const id of ['rp-1', 'rp-2']) await source.createActor('Player', id, { spot: 'room-1' });
  expect(await source.request({ spot: 'shard-1' }, { op: 'where' })).toBe(source.nodeId);
  await source.createActor('Counter', 'c2');
  return 6; // c1, c2, lp-1, lobby-1 shell, room-1 aggregate, shard-1
}

const HISTOGRAMS = ['zlink.relocation.interruption', 'zlink.relocation.target_resume', 'zlink.relocation.route_convergence'] as const;
const UNIT_KINDS = ['actor', 'perActorShell', 'spotWide', 'instance'];

async function histogramTotals(): Promise<Record<string, { count: number; sum: number; points: MetricPoint<Histogram>[] }>> {
  const out: Record<string, { count: number; sum: number; points: MetricPoint<Histogram>[] }> = {};
  for (const name of HISTOGRAMS) {
    const points = await metrics.histogram(name);
    out[name] = { count: points.reduce((n, p) => n + p.value.count, 0), sum: points.reduce((n, p) => n + (p.value.sum ?? 0), 0), points };
  }
  return out;
}

describe.each(STACKS)('§17 Metrics and SafeToShutdown on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await stack.close();
  });

  const pair = async (timing: Partial<Timing>, targetClock: Clock) => {
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: TYPES, timing: { ...FAST_TIMING, ...timing } });
    const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: TYPES, timing: { ...FAST_TIMING, ...timing }, clock: targetClock });
    return { source, target };
  };

  test('Source stop time (S0→S1), target resume time (S2→S3), and route convergence time (S1→S4) are measured on the clock of the node where each point happens, and no metric directly subtracts timestamps of different nodes.', async () => {
    // The target's wall clock is 10^9 ms (~11.6 days) ahead of the source's.
    const { source, target } = await pair({ messageFollowDurationMs: 300 }, skewedClock(SKEW));
    const units = await workload(source);
    const sourceEvents = unitEvents(source);
    const targetEvents = unitEvents(target);
    const before = await histogramTotals();
    const startedAt = Date.now();

    expect(await source.relocate({ mode: PM, deadlineMs: 10_000 })).toEqual(relocated);
    await eventually(() => sourceEvents.filter((e) => e.state === 'followEnded').length === units, 5000, 'S4 of every unit');
    await eventually(() => targetEvents.filter((e) => e.state === 'opened').length === units, 5000, 'S3 of every unit');

    // Each point carries the clock of the node that recorded it.
    const at = (events: UnitEvent[], point: string) => events.filter((e) => e.point === point);
    for (const p of ['S0', 'S1', 'S4']) {
      expect(at(sourceEvents, p)).toHaveLength(units);
      for (const e of at(sourceEvents, p)) expect(e.at).toBeLessThan(startedAt + SKEW / 2);
    }
    for (const p of ['S2', 'S3']) {
      expect(at(targetEvents, p)).toHaveLength(units);
      for (const e of at(targetEvents, p)) expect(e.at).toBeGreaterThan(startedAt + SKEW / 2);
    }
    const span = (events: UnitEvent[], from: string, to: string) =>
      at(events, to).reduce((total, e) => total + (e.at - at(events, from).find((f) => f.unit === e.unit)!.at), 0);

    // Every interval metric is exactly the sum of same-node differences: nothing subtracts across nodes.
    const after = await histogramTotals();
    const delta = (name: (typeof HISTOGRAMS)[number]) => ({ count: after[name]!.count - before[name]!.count, sum: after[name]!.sum - before[name]!.sum });
    expect(delta('zlink.relocation.interruption')).toEqual({ count: units, sum: span(sourceEvents, 'S0', 'S1') });
    expect(delta('zlink.relocation.target_resume')).toEqual({ count: units, sum: span(targetEvents, 'S2', 'S3') });
    expect(delta('zlink.relocation.route_convergence')).toEqual({ count: units, sum: span(sourceEvents, 'S1', 'S4') });
    for (const name of HISTOGRAMS) {
      for (const point of after[name]!.points) {
        // Values stay small and non-negative: a cross-node subtraction would be about ±10^9.
        expect(point.value.min).toBeGreaterThanOrEqual(0);
        expect(point.value.max).toBeLessThan(SKEW / 2);
        // §16: no ids in labels, only the bounded unit kind.
        expect(Object.keys(point.attributes)).toEqual(['unitKind']);
        expect(UNIT_KINDS).toContain(point.attributes.unitKind);
      }
    }
    for (const point of await metrics.points('zlink.relocation.cutover_timeout')) expect(Object.keys(point.attributes)).toEqual(['unitKind']);
    const routeConvergence = after['zlink.relocation.route_convergence']!.points;
    expect(routeConvergence.map((p) => p.attributes.unitKind).sort()).toEqual([...UNIT_KINDS].sort());
  }, 30_000);

  test("SafeToShutdown isn't published before every unit reaches S4 and every unit's retransmission window ends, and neither judgment uses another node's clock.", async () => {
    // Two runs: Message Follow ends last (target clock ahead), then the retransmission window ends last (behind).
    const runs: { timing: Partial<Timing>; offset: number }[] = [
      { timing: { messageFollowDurationMs: 300, relocationCutoverWaitTimeoutMs: 100 }, offset: SKEW },
      { timing: { messageFollowDurationMs: 100, relocationCutoverWaitTimeoutMs: 400 }, offset: -SKEW },
    ];
    for (const [i, run] of runs.entries()) {
      const source = await stack.host({ nodeId: `source-${i}`, applicationVersion: 1, types: TYPES, timing: { ...FAST_TIMING, ...run.timing } });
      const target = await stack.host({ nodeId: `target-${i}`, applicationVersion: 1, types: TYPES, timing: { ...FAST_TIMING, ...run.timing }, clock: skewedClock(run.offset) });
      await source.createActor('Counter', `a-${i}`);
      await source.createSpot('Room', `room-${i}`);
      await source.createActor('Player', `member-${i}`, { spot: `room-${i}` });
      const units = 2;
      const events = unitEvents(source);
      // At every S4, the status is still not safe; at the flip, every route and copy is gone.
      const safeAtFollowEnded: boolean[] = [];
      source.on(UNIT_CHANGED, (e) => e.state === 'followEnded' && safeAtFollowEnded.push(source.status.safeToShutdown));
      let atFlip: { diagnostics: ReturnType<FrameworkRuntime['diagnostics']>; followEnded: number; now: number } | undefined;
      source.on(RELOCATION_CHANGED, (s) => {
        if (s.safeToShutdown && !atFlip) atFlip = { diagnostics: source.diagnostics(), followEnded: events.filter((e) => e.state === 'followEnded').length, now: Date.now() };
      });
      const statuses = observed(source);

      const result = await source.relocate({ mode: PM, deadlineMs: 10_000 });
      expect(result).toEqual(relocated);
      // Right after Relocated: routes and copies are still held, so not yet safe.
      expect(source.status).toMatchObject({ state: FrameworkRuntimeState.Relocated, lastRelocation: relocated, safeToShutdown: false });
      expect(source.diagnostics()).toMatchObject({ safeToShutdown: false, followRoutes: units, retransmissionCopies: units, retransmissionCopiesCleaned: 0 });

      await eventually(() => source.status.safeToShutdown, 5000, 'SafeToShutdown');
      expect(safeAtFollowEnded).toEqual([false, false]);
      expect(atFlip!.followEnded).toBe(units); // after the last S4
      expect(atFlip!.diagnostics).toMatchObject({ followRoutes: 0, retransmissionCopies: 0, retransmissionCopiesCleaned: units });
      // Judged on the source clock alone: the later of the two windows after the last S1, whatever the target's clock says.
      const lastS1 = Math.max(...events.filter((e) => e.point === 'S1').map((e) => e.at));
      expect(atFlip!.now - lastS1).toBeGreaterThanOrEqual(Math.max(run.timing.messageFollowDurationMs!, run.timing.relocationCutoverWaitTimeoutMs!));
      await sleep(20);
      statuses.stop();
      // Observed once: false while Relocating and Relocated, then true, never back.
      const flags = statuses.values.map((s) => s.safeToShutdown);
      expect(flags.filter((f, k) => k === 0 || flags[k - 1] !== f)).toEqual([false, true]);
      expect(statuses.values.find((s) => s.safeToShutdown)?.state).toBe(FrameworkRuntimeState.Relocated);
      expect(await source.shutdown()).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
      await target.shutdown();
    }
  }, 30_000);

  test("Shutdown before publication is also allowed, and its result matches §14's route and copy cleanup.", async () => {
    const { source, target } = await pair({ messageFollowDurationMs: 800, relocationCutoverWaitTimeoutMs: 400 }, skewedClock(0));
    const peer = await stack.host({ nodeId: 'peer', applicationVersion: 2, types: TYPES });
    await source.createActor('Counter', 'c1');
    await source.createActor('Counter', 'c2');
    await source.createSpot('Room', 'room-1');
    await source.createActor('Player', 'rp-1', { spot: 'room-1' });
    const units = 3;
    // The peer caches the source as the owner of c1 and c2.
    await eventually(async () => (await peer.request({ actor: 'c1' }, { op: 'where' }, { timeoutMs: 500 }).catch(() => '')) === 'source', 5000, 'peer reaches c1');
    expect(await peer.request({ actor: 'c2' }, { op: 'where' })).toBe('source');
    peer.send({ actor: 'c1' }, { op: 'seq', from: 'peer', n: 0 });
    const statuses = observed(source);

    expect(await source.relocate({ mode: PM, deadlineMs: 10_000 })).toEqual(relocated);
    expect(source.diagnostics()).toMatchObject({ safeToShutdown: false, followRoutes: units, retransmissionCopies: units, retransmissionCopiesCleaned: 0 });
    // Through the old route, by Message Follow (the peer's cache still names the source).
    expect(await peer.request({ actor: 'c1' }, { op: 'seq', from: 'peer', n: 1 })).toBe(1);

    // Shutdown right after Relocated, before SafeToShutdown was published.
    expect(await source.shutdown()).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
    expect(source.status).toMatchObject({
      state: FrameworkRuntimeState.Stopped,
      lastRelocation: relocated,
      lastTermination: { outcome: TerminationOutcome.Stopped, reason: TerminationReason.None },
      safeToShutdown: false,
    });
    // The remaining Message Follow routes and retransmission copies went with the source transport, each copy cleaned once.
    expect(source.diagnostics()).toMatchObject({ followRoutes: 0, retransmissionCopies: 0, retransmissionCopiesCleaned: units });
    // SafeToShutdown was never published: the windows were cut, not ended.
    expect(statuses.values.some((s) => s.safeToShutdown)).toBe(false);

    // A sender that still caches the old route: its request ends (no hang) — answered by the new owner after
    // re-resolving, or with Unavailable — never by its own timeout.
    const outcomes = await Promise.all(
      ['c1', 'c2'].map((actor) =>
        peer.request({ actor }, { op: 'where' }, { timeoutMs: 8000 }).then(
          (value) => ({ value }),
          (error: { name?: string; kind?: string }) => ({ error: { name: error.name, kind: error.kind } }),
        ),
      ),
    );
    for (const outcome of outcomes) {
      if ('value' in outcome) expect(outcome.value).toBe('target');
      else expect(outcome.error).toEqual({ name: 'RequestError', kind: 'unavailable' });
    }
    // The copies stay cleaned exactly once after their windows would have ended.
    await sleep(900);
    expect(source.diagnostics()).toMatchObject({ followRoutes: 0, retransmissionCopies: 0, retransmissionCopiesCleaned: units, retransmissionsSent: 0 });
    statuses.stop();
    // The moved objects kept everything they accepted.
    const c1 = (await target.request({ actor: 'c1' }, { op: 'ledger' })) as Ledger;
    expect(checkSequence(c1.seen.peer, 2)).toBeUndefined();
    expect((await target.locate({ actor: 'c1' }))?.nodeId).toBe('target');
  }, 30_000);

  test('State, outcome, reason, event, and metric match the wire values for relocation results.', async () => {
    const { source } = await pair({}, skewedClock(0));
    const pinned = await stack.host({ nodeId: 'pinned', applicationVersion: 1, types: TYPES });
    await source.createActor('Counter', 'c1');
    await pinned.createActor('Pinned', 'p1');
    const label = (outcome: number, reason: number) => ({ mode: 'PlannedMaintenance', outcome: nameOf(RelocationOutcome, outcome), reason: nameOf(RelocationReason, reason) });
    const relocations = (outcome: number, reason: number) => metrics.counter('zlink.runtime.host.relocations', label(outcome, reason));
    const relocatedBefore = await relocations(RelocationOutcome.Relocated, RelocationReason.None);
    const blockedBefore = await relocations(RelocationOutcome.Blocked, RelocationReason.RelocationDisabled);
    const toRelocated = await metrics.counter('zlink.runtime.host.state_transitions', { state: 'Relocated' });
    const eventsOf = (host: FrameworkRuntime) => {
      const list: RuntimeStatus[] = [];
      host.on(RELOCATION_CHANGED, (s) => list.push(s));
      return list;
    };
    const sourceChanges = eventsOf(source);
    const pinnedChanges = eventsOf(pinned);

    const ok = await source.relocate({ mode: PM, deadlineMs: 10_000 });
    expect(ok).toEqual({ mode: 0, targetApplicationVersion: 1, outcome: 0, reason: 0 });
    const blocked = await pinned.relocate({ mode: PM, deadlineMs: 10_000 });
    expect(blocked).toEqual({ mode: 0, targetApplicationVersion: 1, outcome: 1, reason: 3 });
    for (const r of [ok, blocked]) expect(isValidRelocationResult(r.outcome, r.reason)).toBe(true);

    // Status and relocation_changed carry the same wire values.
    expect(source.status.state).toBe(FrameworkRuntimeState.Relocated);
    expect(source.status.state).toBe(3);
    expect(source.status.lastRelocation).toEqual(ok);
    expect(sourceChanges.map((s) => s.state)).toEqual([FrameworkRuntimeState.Relocating, FrameworkRuntimeState.Relocated]);
    expect(sourceChanges.find((s) => s.lastRelocation)).toMatchObject({ state: 3, lastRelocation: ok });
    expect(pinned.status).toMatchObject({ state: FrameworkRuntimeState.Serving, isReady: true, lastRelocation: blocked });
    expect(pinnedChanges).toHaveLength(1);
    expect(pinnedChanges[0]).toMatchObject({ state: 1, lastRelocation: { mode: 0, targetApplicationVersion: 1, outcome: 1, reason: 3 } });

    // The host counters label the same values by their wire names, and nothing else.
    expect(await relocations(RelocationOutcome.Relocated, RelocationReason.None)).toBe(relocatedBefore + 1);
    expect(await relocations(RelocationOutcome.Blocked, RelocationReason.RelocationDisabled)).toBe(blockedBefore + 1);
    expect(await metrics.counter('zlink.runtime.host.state_transitions', { state: 'Relocated' })).toBe(toRelocated + 1);
    for (const point of await metrics.points<number>('zlink.runtime.host.relocations')) {
      expect(Object.keys(point.attributes).sort()).toEqual(['mode', 'outcome', 'reason']);
      const outcome = RelocationOutcome[point.attributes.outcome as keyof typeof RelocationOutcome];
      const reason = RelocationReason[point.attributes.reason as keyof typeof RelocationReason];
      expect(RelocationMode[point.attributes.mode as keyof typeof RelocationMode]).toBeDefined();
      expect(isValidRelocationResult(outcome, reason)).toBe(true);
    }
    for (const point of await metrics.points<number>('zlink.runtime.host.state_transitions')) {
      expect(Object.keys(point.attributes)).toEqual(['state']);
      expect(FrameworkRuntimeState[point.attributes.state as keyof typeof FrameworkRuntimeState]).toBeDefined();
    }
  }, 30_000);
});
