/**
 * Spec 05 §17 "Interruption budget and pacing": one test per item (§7, §8, §13). Source stop time is read from the
 * zlink.relocation.interruption histogram (an OTel SDK reader installed for this file) and compared with the
 * source's own unit events (S0, S1). The retransmission item needs a lost cutover: spec-tests/faults/retransmission.test.ts.
 * Every scenario runs on both stacks (memory + in-process, Redis + ws).
 */
import {
  defineActor,
  defineSpot,
  FrameworkRuntimeState,
  preserveState,
  RELOCATION_CHANGED,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  UNIT_CHANGED,
  type FrameworkRuntime,
  type ObjectRef,
  type RuntimeStatus,
  type UnitEvent,
} from '../runtime';
import { createTransport } from '../transport';
import type { TransportFactory } from '../transport/types';
import { installTestMetrics, type TestMetrics } from './support/metrics';
import { eventually, makeStack, STACKS, type Stack } from './support/stack';
import { ALL_TYPES } from './support/workload';

const PM = RelocationMode.PlannedMaintenance;
const RELOCATED = { mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None };
const DEADLINE_EXCEEDED = { mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Blocked, reason: RelocationReason.DeadlineExceeded };

const json = <S>() => preserveState<S>({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) as S });

/** Capture of a `slow` instance busy-waits `slowForMs`, or until `slowUntil` (a source stop longer than the 1 s target). */
let slowUntil = 0;
let slowForMs = 0;
interface SlowState {
  slow: boolean;
  n: number;
}
const Slow = defineActor<SlowState>({
  type: 'Slow',
  relocation: preserveState({
    capture: (s) => {
      const end = Math.max(slowUntil, Date.now() + slowForMs);
      if (s.slow) while (Date.now() < end);
      return Buffer.from(JSON.stringify(s));
    },
    restore: (b) => JSON.parse(b.toString()) as SlowState,
  }),
  create: (id) => ({ slow: id.startsWith('slow'), n: 0 }),
  receive: (state, message: { op: 'add' | 'where' }, ctx) => (message.op === 'add' ? ++state.n : ctx.nodeId),
});

/** A SpotWide User Spot with ApplicationSignaled readiness that never calls relocationReady().defer(). */
const Signaled = defineSpot<{ n: number }>({
  type: 'Signaled',
  kind: 'user',
  executionMode: 'SpotWide',
  readiness: 'ApplicationSignaled',
  relocation: json<{ n: number }>(),
  create: () => ({ n: 0 }),
  receive: (state, _message, ctx) => ({ n: ++state.n, node: ctx.nodeId }),
});

/** An Actor whose 'hang' turn runs until the test opens the gate. */
let openGate: () => void = () => undefined;
let gateRunning = false;
const Gate = defineActor<{ n: number }>({
  type: 'Gate',
  relocation: json<{ n: number }>(),
  create: () => ({ n: 0 }),
  receive: (state, message: { op: 'hang' | 'where' }, ctx) => {
    if (message.op === 'where') return ctx.nodeId;
    gateRunning = true;
    return new Promise((resolve) => (openGate = () => resolve(++state.n)));
  },
});

/** A few KiB of state; records which node processed each message. */
interface PaddedState {
  pad: string;
  log: { n: number; node: string }[];
}
const Padded = defineActor<PaddedState>({
  type: 'Padded',
  relocation: json<PaddedState>(),
  create: () => ({ pad: 'x'.repeat(8192), log: [] }),
  receive: (state, message: { op: 'seq'; n: number } | { op: 'ledger' } | { op: 'where' }, ctx) => {
    if (message.op === 'seq') return state.log.push({ n: message.n, node: ctx.nodeId });
    if (message.op === 'where') return ctx.nodeId;
    return state.log;
  },
});

const TYPES = [...ALL_TYPES, Slow, Signaled, Gate, Padded];

let metrics: TestMetrics;
beforeAll(() => {
  metrics = installTestMetrics();
});
afterAll(async () => {
  await metrics.shutdown();
});

function record(host: FrameworkRuntime, side: 'source' | 'target', into: (UnitEvent | string)[] = []): UnitEvent[] {
  const events: UnitEvent[] = [];
  host.on(UNIT_CHANGED, (e) => {
    if (e.side !== side) return;
    events.push(e);
    into.push(e);
  });
  return events;
}

/** count and sum of the interruption histogram per unitKind. */
async function interruption(): Promise<Record<string, { count: number; sum: number }>> {
  const out: Record<string, { count: number; sum: number }> = {};
  for (const p of await metrics.histogram('zlink.relocation.interruption')) {
    expect(Object.keys(p.attributes)).toEqual(['unitKind']); // §16: no ids in labels
    out[String(p.attributes.unitKind)] = { count: p.value.count, sum: p.value.sum ?? 0 };
  }
  return out;
}

const where = (host: FrameworkRuntime, ref: ObjectRef) => host.request(ref, { op: 'where' }, { timeoutMs: 5000 });

describe.each(STACKS)('Interruption budget and pacing on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await stack.close();
  });

  test('For each Actor, Instance Spot, SpotWide User Spot, and PerActor Spot direct message, measure a source-local 1 second from when the source blocks new work through the one-way cutover submit\'s success or failure terminal.', async () => {
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: TYPES });
    await stack.host({ nodeId: 'target', applicationVersion: 1, types: TYPES });
    for (let i = 0; i < 3; i++) await source.createActor('Counter', `c-${i}`);
    for (let i = 0; i < 2; i++) await source.request({ spot: `shard-${i}` }, { op: 'where' });
    await source.createSpot('Room', 'room');
    for (let i = 0; i < 2; i++) await source.createActor('Player', `room-${i}`, { spot: 'room' });
    await source.createSpot('Lobby', 'lobby');
    for (let i = 0; i < 2; i++) {
      await source.createActor('Player', `lobby-${i}`);
      await source.join(`lobby-${i}`, 'lobby');
    }
    const events = record(source, 'source');
    const before = await interruption();

    expect(await source.relocate({ mode: PM, deadlineMs: 10_000 })).toEqual(RELOCATED);

    // One S0 (seal) and one S1 (cutover submit terminal) per unit, both on the source's clock.
    const s0 = new Map(events.filter((e) => e.point === 'S0').map((e) => [e.unit, e]));
    const s1 = events.filter((e) => e.point === 'S1');
    expect(s1).toHaveLength(s0.size);
    const expected: Record<string, { count: number; sum: number }> = {};
    for (const end of s1) {
      const start = s0.get(end.unit)!;
      expect(end.state).toBe('cutOver');
      expect(start.state).toBe('sealed');
      const slot = (expected[end.kind] ??= { count: 0, sum: 0 });
      slot.count++;
      slot.sum += end.at - start.at;
    }
    // 5 Actors (3 Entry Spot, 2 PerActor members), 2 Instance Spots, 1 SpotWide aggregate, 1 PerActor Spot shell.
    expect(Object.fromEntries(Object.entries(expected).map(([k, v]) => [k, v.count]))).toEqual({ actor: 5, instance: 2, spotWide: 1, perActorShell: 1 });
    const after = await interruption();
    const recorded = Object.fromEntries(
      Object.entries(after).map(([kind, v]) => [kind, { count: v.count - (before[kind]?.count ?? 0), sum: v.sum - (before[kind]?.sum ?? 0) }]),
    );
    expect(recorded).toEqual(expected);
  }, 30_000);

  test("Don't create a target processing-start ACK, and don't treat exceeding this as a failure, rollback, or retry condition.", async () => {
    const warnings: string[] = [];
    const received: string[] = [];
    // Observation at the transport boundary: every relocation message type the source receives.
    const observed: TransportFactory = (options) =>
      createTransport({
        ...options,
        handlers: {
          ...options.handlers,
          onMessage: (from, message) => {
            if (message.t.startsWith('r.')) received.push(message.t);
            options.handlers.onMessage(from, message);
          },
        },
      });
    const source = await stack.host({
      nodeId: 'source',
      applicationVersion: 1,
      types: TYPES,
      transport: observed,
      log: (level, message) => void (level === 'warn' && warnings.push(message)),
    });
    const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: TYPES });
    await source.createActor('Slow', 'slow-1');
    await source.request({ actor: 'slow-1' }, { op: 'add' });
    const sourceEvents = record(source, 'source');
    const targetEvents = record(target, 'target');

    slowUntil = 0;
    slowForMs = 1100; // the capture after the seal takes longer than the 1 s target
    const started = source.relocate({ mode: PM, deadlineMs: 10_000 });
    expect(await started).toEqual(RELOCATED);
    slowForMs = 0;
    // The result came from the source's own cutover submit terminal: the target had not even committed yet.
    expect(targetEvents.filter((e) => e.state === 'committed')).toEqual([]);

    const sealed = sourceEvents.filter((e) => e.state === 'sealed');
    const cutOver = sourceEvents.filter((e) => e.state === 'cutOver');
    expect(sealed).toHaveLength(1);
    expect(cutOver).toHaveLength(1);
    expect(cutOver[0]!.at - sealed[0]!.at).toBeGreaterThanOrEqual(1100);
    expect(cutOver[0]!.submitOk).toBe(true);
    expect(sourceEvents.filter((e) => e.state === 'restored' || e.state === 'notStarted')).toEqual([]);
    expect(warnings.filter((w) => w.includes('stopped the source'))).toHaveLength(1); // §8: a warning, nothing more

    await eventually(() => targetEvents.some((e) => e.state === 'opened'), 5000, 'target opened');
    expect(targetEvents.map((e) => e.state)).toEqual(['relayReady', 'committed', 'opened']);
    expect(targetEvents.find((e) => e.state === 'committed')!.fellBack).toBe(false);
    // A round trip over the same connection after S3: any message the target sent when it opened came before this reply.
    expect(await where(source, { actor: 'slow-1' })).toBe('target');
    expect(await target.request({ actor: 'slow-1' }, { op: 'add' })).toBe(2); // state moved once, no retry
    // From the target: the temporary-queue reply and the relay-ready reply, once each — no cutover reply, no
    // processing-start ACK, no retransmission request.
    expect(received).toEqual(['r.prepared', 'r.ready']);
    expect(source.diagnostics()).toMatchObject({ retransmissionsSent: 0 });
    expect(source.status.state).toBe(FrameworkRuntimeState.Relocated);
  }, 30_000);

  test("After the host deadline, don't start a new unit, and process an already-started unit to a safe terminal state.", async () => {
    const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: TYPES });
    const deadlineMark = 'deadline';

    // A: every Actor moves in batch 2; the ApplicationSignaled aggregate never reaches its safe point, so at the
    // deadline it has not started (no seal) and stays on the source; the Instance Spot beside it moved.
    {
      const source = await stack.host({ nodeId: 'source-a', applicationVersion: 1, types: TYPES });
      for (let i = 0; i < 4; i++) await source.createActor('Counter', `a-${i}`);
      await source.createSpot('Signaled', 'sig');
      await source.createActor('Player', 'sig-member', { spot: 'sig' });
      await source.request({ spot: 'shard-a' }, { op: 'where' });
      const order: (UnitEvent | string)[] = [];
      const events = record(source, 'source', order);
      source.on(RELOCATION_CHANGED, (s: RuntimeStatus) => void (s.lastRelocation?.outcome === RelocationOutcome.Blocked && order.push(deadlineMark)));

      expect(await source.relocate({ mode: PM, deadlineMs: 800 })).toEqual(DEADLINE_EXCEEDED);
      expect(source.status.state).toBe(FrameworkRuntimeState.Serving);
      expect(source.status.isReady).toBe(true);
      const mark = order.indexOf(deadlineMark);
      expect(mark).toBeGreaterThan(0);
      expect(order.slice(mark).filter((e) => typeof e !== 'string' && e.state === 'sealed')).toEqual([]);
      const sigUnit = events.filter((e) => e.objects.includes('s:sig'));
      expect(sigUnit.map((e) => e.state)).toEqual(['notStarted']);
      expect([...sigUnit[0]!.objects].sort()).toEqual(['a:sig-member', 's:sig']);
      // Started units ended in their cutover: the Actors and the Instance Spot stay on the target.
      for (const ref of [{ actor: 'a-0' }, { actor: 'a-3' }, { spot: 'shard-a' }] as ObjectRef[]) expect(await where(source, ref)).toBe('target');
      await eventually(async () => (await source.locate({ actor: 'a-3' }))?.nodeId === 'target', 5000, 'a-3 owned by the target');
      // The aggregate serves on the source, and the host admits new work again.
      expect(await source.request({ spot: 'sig' }, { op: 'x' })).toEqual({ n: 1, node: 'source-a' });
      expect(await where(source, { actor: 'sig-member' })).toBe('source-a');
      expect((await source.locate({ spot: 'sig' }))?.nodeId).toBe('source-a');
      await source.createActor('Counter', 'after-deadline');
      expect(await where(source, { actor: 'after-deadline' })).toBe('source-a');
    }

    // B: a batch-2 unit sealed before the deadline is still capturing when it passes: it goes on to its cutover
    // and its Actor ends on the target, every unit not sealed by then ends without starting, and batch 3 never starts.
    {
      const source = await stack.host({ nodeId: 'source-b', applicationVersion: 1, types: TYPES });
      await source.createActor('Slow', 'slow-b');
      for (let i = 0; i < 4; i++) await source.createActor('Slow', `b-${i}`);
      await source.request({ spot: 'shard-b' }, { op: 'where' });
      const order: (UnitEvent | string)[] = [];
      const events = record(source, 'source', order);
      source.on(RELOCATION_CHANGED, (s: RuntimeStatus) => void (s.lastRelocation?.outcome === RelocationOutcome.Blocked && order.push(deadlineMark)));

      const result = source.relocate({ mode: PM, deadlineMs: 400 });
      slowUntil = Date.now() + 700;
      expect(await result).toEqual(DEADLINE_EXCEEDED);
      const slowUnit = () => events.filter((e) => e.objects.includes('a:slow-b')).map((e) => e.state);
      await eventually(() => slowUnit().length === 2, 5000, 'the sealed unit ends');
      expect(slowUnit()).toEqual(['sealed', 'cutOver']);
      const mark = order.indexOf(deadlineMark);
      expect(order.slice(mark).filter((e) => typeof e !== 'string' && e.state === 'sealed')).toEqual([]);
      expect(order.slice(0, mark).filter((e) => typeof e !== 'string' && e.state === 'sealed' && e.objects.includes('a:slow-b'))).toHaveLength(1);
      await eventually(async () => (await source.locate({ actor: 'slow-b' }))?.nodeId === 'target', 5000, 'slow-b owned by the target');
      expect(await where(source, { actor: 'slow-b' })).toBe('target');
      // Each other Actor ended exactly one way — moved or never started — and runs where its unit left it.
      for (let i = 0; i < 4; i++) {
        const states = events.filter((e) => e.objects.includes(`a:b-${i}`)).map((e) => e.state);
        expect([['sealed', 'cutOver'], ['notStarted']]).toContainEqual(states);
        expect(await where(source, { actor: `b-${i}` })).toBe(states[0] === 'sealed' ? 'target' : 'source-b');
      }
      expect(events.filter((e) => e.batch === 3)).toEqual([]);
      expect(await where(source, { spot: 'shard-b' })).toBe('source-b');
      expect(source.status.state).toBe(FrameworkRuntimeState.Serving);
    }
    void target;
  }, 30_000);

  test("When the in-flight payload budget is full, a new unit waits before the source admission seal, and the waiting Actor/Spot keeps processing messages meanwhile. The coordinator doesn't set a separate cap on concurrent unit count.", async () => {
    const ACTORS = 12;
    const BUDGET = 1024; // one unit's first estimate fills it
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: TYPES, inFlightPayloadBudgetBytes: BUDGET });
    const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: TYPES, inFlightPayloadBudgetBytes: BUDGET });
    // The gate's unit takes the budget first (inventory order) and holds it while its current turn runs.
    await source.createActor('Gate', 'gate');
    for (let i = 0; i < ACTORS; i++) await source.createActor('Padded', `p-${i}`);
    const events = record(source, 'source');
    gateRunning = false;
    const gateTurn = source.request({ actor: 'gate' }, { op: 'hang' }, { timeoutMs: 20_000 });
    await eventually(() => gateRunning, 2000, 'gate turn running');
    const relocation = source.relocate({ mode: PM, deadlineMs: 20_000 });

    const waiting = () => source.diagnostics({ limit: 100 }).blockers.filter((b) => b.reason === 'waiting for payload budget').map((b) => b.object);
    await eventually(() => waiting().length === ACTORS && source.diagnostics().units.sourceByState.safePoint === 1, 5000, 'every Padded unit waiting for budget');
    const d = source.diagnostics();
    // Every unit of the batch is live at once: no cap on concurrent units, only the budget paces them.
    expect(d.units.sourceInFlight).toBe(ACTORS + 1);
    expect(d.units.sourceByState).toEqual({ budget: ACTORS, safePoint: 1 });
    expect(d.state).toBe('Relocating');
    // Waiting comes before the seal: no unit was sealed, and the waiting Actors keep processing on the source.
    expect(events.filter((e) => e.state === 'sealed')).toEqual([]);
    for (let n = 0; n < 3; n++) {
      const replies = await Promise.all(Array.from({ length: ACTORS }, (_, i) => source.request({ actor: `p-${i}` }, { op: 'seq', n })));
      expect(replies).toEqual(Array.from({ length: ACTORS }, () => n + 1));
    }
    expect(await where(source, { actor: 'p-0' })).toBe('source');
    expect(waiting()).toHaveLength(ACTORS);

    openGate();
    expect(await gateTurn).toBe(1);
    expect(await relocation).toEqual(RELOCATED);
    expect(events.filter((e) => e.state === 'cutOver')).toHaveLength(ACTORS + 1);
    for (let i = 0; i < ACTORS; i++) {
      const log = (await target.request({ actor: `p-${i}` }, { op: 'ledger' })) as PaddedState['log'];
      expect(log).toEqual([0, 1, 2].map((n) => ({ n, node: 'source' })));
      expect(await where(target, { actor: `p-${i}` })).toBe('target');
    }
  }, 30_000);
});
