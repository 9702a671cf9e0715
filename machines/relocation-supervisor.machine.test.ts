import { createActor, fromCallback, fromPromise, SimulatedClock, toPromise, waitFor, type InspectionEvent } from 'xstate';
import {
  relocationSupervisorMachine,
  type AdmissionClosed,
  type PoolCommand,
  type PoolReport,
  type PreflightOutput,
  type SupervisorOutput,
  type UnitCounts,
} from './relocation-supervisor.machine';
import type { NodeRef } from '../vocabulary';
import { RelocationReason } from '../vocabulary';

const DEADLINE_MS = 10_000;
const TARGET: NodeRef = { nodeId: 'target', lifecycleGeneration: 7 };

type Batch = 1 | 2 | 3;

interface Fakes {
  preflight?: () => Promise<PreflightOutput>;
  awaitTarget?: () => Promise<NodeRef>;
  closeAdmission?: () => Promise<AdmissionClosed>;
  enterRelocating?: (input: { target: NodeRef | undefined }) => Promise<UnitCounts>;
  rollbackIntent?: () => Promise<void>;
  /** How the fake pool answers a START_BATCH: a report, or undefined to never answer. */
  answer?: (batch: Batch) => Omit<PoolReport, 'type' | 'batch'> | undefined;
  /** Units per batch the fake pool "moves" (a plain loop: the pool's work, not the supervisor's). */
  unitsPerBatch?: number;
}

const never = <T>() => new Promise<T>(() => {});

function run(fakes: Fakes = {}, inspect?: (event: InspectionEvent) => void) {
  const record = {
    commands: [] as PoolCommand[],
    awaitTargetCalls: 0,
    enterInputs: [] as { target: NodeRef | undefined }[],
    rollbacks: 0,
    poolStarted: 0,
    poolCleanups: 0,
    unitsStarted: 0,
  };
  const machine = relocationSupervisorMachine.provide({
    actors: {
      preflight: fromPromise<PreflightOutput, void>(() => (fakes.preflight ?? (async () => ({ kind: 'ready', hasUnits: true }) as const))()),
      awaitTarget: fromPromise<NodeRef, void>(() => {
        record.awaitTargetCalls++;
        return (fakes.awaitTarget ?? (async () => TARGET))();
      }),
      closeAdmission: fromPromise<AdmissionClosed, void>(() => (fakes.closeAdmission ?? (async () => ({ hasUnits: true })))()),
      enterRelocating: fromPromise<UnitCounts, { target: NodeRef | undefined }>(({ input }) => {
        record.enterInputs.push(input);
        return (fakes.enterRelocating ?? (async () => ({ batch1: 1, batch2: 1, batch3: 1 })))(input);
      }),
      rollbackIntent: fromPromise<void, void>(() => {
        record.rollbacks++;
        return (fakes.rollbackIntent ?? (async () => {}))();
      }),
      unitPool: fromCallback<PoolCommand>(({ receive, sendBack }) => {
        record.poolStarted++;
        let stopped = false;
        receive((command) => {
          record.commands.push(command);
          // The pool owns the units: starting N of them is its own loop, reported as one BATCH_DONE.
          for (let i = 0; i < (fakes.unitsPerBatch ?? 1) && !stopped; i++) record.unitsStarted++;
          const report = (fakes.answer ?? (() => ({})))(command.batch);
          if (report !== undefined)
            queueMicrotask(() => {
              if (!stopped) sendBack({ type: 'BATCH_DONE', batch: command.batch, ...report } satisfies PoolReport);
            });
        });
        return () => {
          stopped = true;
          record.poolCleanups++;
        };
      }),
    },
  });
  const clock = new SimulatedClock();
  const actor = createActor(machine, { input: { deadlineMs: DEADLINE_MS }, clock, ...(inspect ? { inspect } : {}) });
  const done: Promise<SupervisorOutput> = toPromise(actor);
  actor.start();
  return { actor, clock, record, done };
}

const blocked = (reason: RelocationReason, enteredRelocating: boolean): SupervisorOutput => ({ outcome: 'blocked', reason, enteredRelocating });

test('happy path: preflight → target → Relocating → batches 1, 2, 3 in order → relocated', async () => {
  const { record, done } = run();
  expect(await done).toEqual({ outcome: 'relocated' });
  expect(record.awaitTargetCalls).toBe(1);
  expect(record.enterInputs).toEqual([{ target: TARGET }]);
  expect(record.commands).toEqual([
    { type: 'START_BATCH', batch: 1, target: TARGET },
    { type: 'START_BATCH', batch: 2, target: TARGET },
    { type: 'START_BATCH', batch: 3, target: TARGET },
  ]);
  expect(record.poolStarted).toBe(1);
  expect(record.poolCleanups).toBe(1);
  expect(record.rollbacks).toBe(0);
});

test('a batch starts only after the previous one reported BATCH_DONE', async () => {
  const { actor, record, done } = run({ answer: (b) => (b === 1 ? undefined : {}) });
  await waitFor(actor, (s) => s.matches({ relocating: 'batch1' }));
  for (let i = 0; i < 5; i++) await Promise.resolve();
  expect(record.commands.map((c) => c.batch)).toEqual([1]);
  actor.send({ type: 'BATCH_DONE', batch: 1 }); // the pool's report for batch 1, by hand
  expect(await done).toEqual({ outcome: 'relocated' });
  expect(record.commands.map((c) => c.batch)).toEqual([1, 2, 3]);
});

test.each([
  RelocationReason.ManualTopologyUnsupported,
  RelocationReason.RelocationDisabled,
  RelocationReason.StateIncompatible,
  RelocationReason.OperationInProgress,
])('blocked preflight (reason %d) → blocked with that reason; nothing else runs', async (reason) => {
  const { record, done } = run({ preflight: async () => ({ kind: 'blocked', reason }) });
  expect(await done).toEqual(blocked(reason, false));
  expect(record.awaitTargetCalls).toBe(0);
  expect(record.enterInputs).toEqual([]);
  expect(record.poolStarted).toBe(0);
});

test('preflight rejects → blocked StoreUnavailable before entering Relocating', async () => {
  const { done } = run({ preflight: () => Promise.reject(new Error('store down')) });
  expect(await done).toEqual(blocked(RelocationReason.StoreUnavailable, false));
});

test('empty host (hasUnits false) skips awaitTarget (§5.1) and still enters Relocating → relocated', async () => {
  const { record, done } = run({
    preflight: async () => ({ kind: 'ready', hasUnits: false }),
    closeAdmission: async () => ({ hasUnits: false }),
    awaitTarget: never,
    enterRelocating: async () => ({ batch1: 0, batch2: 0, batch3: 0 }),
  });
  expect(await done).toEqual({ outcome: 'relocated' });
  expect(record.awaitTargetCalls).toBe(0);
  expect(record.enterInputs).toEqual([{ target: undefined }]);
});

test('deadline while awaitingTarget → blocked TargetUnavailable, Relocating never entered', async () => {
  const { actor, clock, record, done } = run({ awaitTarget: never });
  await waitFor(actor, (s) => s.matches('awaitingTarget'));
  clock.increment(DEADLINE_MS - 1);
  expect(actor.getSnapshot().matches('awaitingTarget')).toBe(true);
  clock.increment(1);
  expect(await done).toEqual(blocked(RelocationReason.TargetUnavailable, false));
  expect(record.enterInputs).toEqual([]);
});

test('awaitTarget rejects → blocked StoreUnavailable', async () => {
  const { done } = run({ awaitTarget: () => Promise.reject(new Error('descriptor list failed')) });
  expect(await done).toEqual(blocked(RelocationReason.StoreUnavailable, false));
});

test('SHUTDOWN_REQUESTED while awaiting a target → blocked ShutdownRequested', async () => {
  const { actor, record, done } = run({ awaitTarget: never });
  await waitFor(actor, (s) => s.matches('awaitingTarget'));
  actor.send({ type: 'SHUTDOWN_REQUESTED' });
  expect(await done).toEqual(blocked(RelocationReason.ShutdownRequested, false));
  expect(record.enterInputs).toEqual([]);
});

test('deadline or shutdown during preflight → blocked DeadlineExceeded / ShutdownRequested', async () => {
  const a = run({ preflight: never });
  a.clock.increment(DEADLINE_MS);
  expect(await a.done).toEqual(blocked(RelocationReason.DeadlineExceeded, false));
  const b = run({ preflight: never });
  b.actor.send({ type: 'SHUTDOWN_REQUESTED' });
  expect(await b.done).toEqual(blocked(RelocationReason.ShutdownRequested, false));
});

test('a failed batch stops later batches: batch 2 fails → blocked with its reason, batch 3 never starts', async () => {
  const { record, done } = run({ answer: (b) => (b === 2 ? { failure: RelocationReason.RelocationFailed, anyCrossed: true } : {}) });
  expect(await done).toEqual(blocked(RelocationReason.RelocationFailed, true));
  expect(record.commands.map((c) => c.batch)).toEqual([1, 2]);
  expect(record.poolCleanups).toBe(1);
});

test('batch 1 failing with StateIncompatible → blocked StateIncompatible, no batch 2', async () => {
  const { record, done } = run({ answer: (b) => (b === 1 ? { failure: RelocationReason.StateIncompatible } : {}) });
  expect(await done).toEqual(blocked(RelocationReason.StateIncompatible, true));
  expect(record.commands.map((c) => c.batch)).toEqual([1]);
});

test('deadline during relocating → blocked DeadlineExceeded; the pool cleanup runs and stops starting units', async () => {
  const { actor, clock, record, done } = run({ answer: (b) => (b === 2 ? undefined : {}) });
  await waitFor(actor, (s) => s.matches({ relocating: 'batch2' }));
  expect(record.poolCleanups).toBe(0);
  clock.increment(DEADLINE_MS);
  expect(await done).toEqual(blocked(RelocationReason.DeadlineExceeded, true));
  expect(record.poolCleanups).toBe(1);
  expect(record.commands.map((c) => c.batch)).toEqual([1, 2]);
  expect(actor.getSnapshot().status).toBe('done');
});

test('SHUTDOWN_REQUESTED during relocating → blocked ShutdownRequested and the pool is stopped', async () => {
  const { actor, record, done } = run({ answer: (b) => (b === 3 ? undefined : {}) });
  await waitFor(actor, (s) => s.matches({ relocating: 'batch3' }));
  actor.send({ type: 'SHUTDOWN_REQUESTED' });
  expect(await done).toEqual(blocked(RelocationReason.ShutdownRequested, true));
  expect(record.poolCleanups).toBe(1);
});

test('shutdown while entering Relocating: the intent settles, then no batch starts → ShutdownRequested', async () => {
  let settle: ((counts: UnitCounts) => void) | undefined;
  const { actor, clock, record, done } = run({ enterRelocating: () => new Promise((r) => (settle = r)) });
  await waitFor(actor, (s) => s.matches('enteringRelocating'));
  actor.send({ type: 'SHUTDOWN_REQUESTED' });
  clock.increment(DEADLINE_MS); // a later deadline does not replace the first reason
  expect(actor.getSnapshot().matches('enteringRelocating')).toBe(true);
  settle!({ batch1: 1, batch2: 1, batch3: 1 });
  expect(await done).toEqual(blocked(RelocationReason.ShutdownRequested, true));
  expect(record.commands).toEqual([]);
});

test('enterRelocating rejects → rollbackIntent runs → blocked StoreUnavailable', async () => {
  const { record, done } = run({ enterRelocating: () => Promise.reject(new Error('descriptor write unconfirmed')) });
  expect(await done).toEqual(blocked(RelocationReason.StoreUnavailable, true));
  expect(record.rollbacks).toBe(1);
  expect(record.poolStarted).toBe(0);
});

test('a rollback that fails still ends blocked StoreUnavailable', async () => {
  const { record, done } = run({
    enterRelocating: () => Promise.reject(new Error('x')),
    rollbackIntent: () => Promise.reject(new Error('rollback unconfirmed')),
  });
  expect(await done).toEqual(blocked(RelocationReason.StoreUnavailable, true));
  expect(record.rollbacks).toBe(1);
});

test('a pool that errors ends the operation blocked RelocationFailed (the supervisor itself does not error)', async () => {
  const machine = relocationSupervisorMachine.provide({
    actors: {
      preflight: fromPromise<PreflightOutput, void>(async () => ({ kind: 'ready', hasUnits: true })),
      awaitTarget: fromPromise<NodeRef, void>(async () => TARGET),
      closeAdmission: fromPromise<AdmissionClosed, void>(async () => ({ hasUnits: true })),
      enterRelocating: fromPromise<UnitCounts, { target: NodeRef | undefined }>(async () => ({ batch1: 1, batch2: 0, batch3: 0 })),
      unitPool: fromCallback<PoolCommand>(() => {
        throw new Error('pool broke');
      }),
    },
  });
  const actor = createActor(machine, { input: { deadlineMs: DEADLINE_MS }, clock: new SimulatedClock() });
  const done = toPromise(actor);
  actor.start();
  expect(await done).toEqual(blocked(RelocationReason.RelocationFailed, true));
});

/** Counts the events the supervisor itself processed, and all events in its actor system. */
async function countEvents(unitsPerBatch: number) {
  let supervisorEvents = 0;
  let systemEvents = 0;
  const types: string[] = [];
  const { done, record } = run({ unitsPerBatch }, (event) => {
    if (event.type !== '@xstate.event') return;
    systemEvents++;
    if (event.actorRef.sessionId === event.rootId) {
      supervisorEvents++;
      types.push(event.event.type);
    }
  });
  expect(await done).toEqual({ outcome: 'relocated' });
  expect(record.unitsStarted).toBe(3 * unitsPerBatch);
  return { supervisorEvents, systemEvents, types };
}

test('supervisor work per event does not grow with the unit count: same events for 10 and 10,000 units', async () => {
  const small = await countEvents(10);
  const large = await countEvents(10_000);
  expect(large.supervisorEvents).toBe(small.supervisorEvents);
  expect(large.systemEvents).toBe(small.systemEvents);
  expect(large.types).toEqual(small.types);
  expect(small.types.filter((t) => t === 'BATCH_DONE')).toHaveLength(3);
  // Bounded by the protocol, not the inventory: init, three step completions and the three reports.
  expect(small.types).toEqual([
    'xstate.init',
    expect.stringMatching(/^xstate\.done\.actor\..*preflight$/),
    expect.stringMatching(/^xstate\.done\.actor\..*awaitingTarget$/),
    expect.stringMatching(/^xstate\.done\.actor\..*closingAdmission$/),
    expect.stringMatching(/^xstate\.done\.actor\..*enteringRelocating$/),
    'BATCH_DONE',
    'BATCH_DONE',
    'BATCH_DONE',
  ]);
});

test('closingAdmission: accepted work that does not settle by the deadline ends blocked DeadlineExceeded before any inventory (§4)', async () => {
  const { actor, clock, record, done } = run({ closeAdmission: () => never() });
  await waitFor(actor, (s) => s.matches('closingAdmission'));
  clock.increment(DEADLINE_MS);
  expect(await done).toEqual(blocked(RelocationReason.DeadlineExceeded, true));
  expect(record.enterInputs).toEqual([]);
  expect(record.poolStarted).toBe(0);
});

test('closingAdmission: SHUTDOWN_REQUESTED while admissions settle ends blocked ShutdownRequested', async () => {
  const { actor, record, done } = run({ closeAdmission: () => never() });
  await waitFor(actor, (s) => s.matches('closingAdmission'));
  actor.send({ type: 'SHUTDOWN_REQUESTED' });
  expect(await done).toEqual(blocked(RelocationReason.ShutdownRequested, true));
  expect(record.enterInputs).toEqual([]);
});

test('empty preflight, but accepted work brought objects: the target is searched after admission closed, then units move', async () => {
  const { record, done } = run({ preflight: async () => ({ kind: 'ready', hasUnits: false }) });
  expect(await done).toEqual({ outcome: 'relocated' });
  expect(record.awaitTargetCalls).toBe(1);
  expect(record.enterInputs).toEqual([{ target: TARGET }]);
});

