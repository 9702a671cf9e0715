import { createActor, fromPromise, SimulatedClock, toPromise, waitFor } from 'xstate';
import { shutdownMachine } from './shutdown.machine';
import { isValidTerminationResult, TerminationOutcome, TerminationReason } from '../vocabulary';

const STEPS = ['sealAdmission', 'publishDraining', 'drainAcceptedWork', 'closeSpots', 'cleanupResources'] as const;
type StepName = (typeof STEPS)[number] | 'forceTeardown';
type Behaviour = 'ok' | 'reject' | 'hang';

const DEADLINE_MS = 5_000;

/** Runs the machine with fake steps; each step records its start, and whether its AbortSignal fired. */
function run(behaviour: Partial<Record<StepName, Behaviour>> = {}) {
  const calls: StepName[] = [];
  const aborted: StepName[] = [];
  const fake = (name: StepName) =>
    fromPromise<void, void>(({ signal }) => {
      calls.push(name);
      signal.addEventListener('abort', () => aborted.push(name));
      const b = behaviour[name] ?? 'ok';
      if (b === 'reject') return Promise.reject(new Error(`${name} failed`));
      if (b === 'hang') return new Promise<void>(() => {});
      return Promise.resolve();
    });
  const clock = new SimulatedClock();
  const machine = shutdownMachine.provide({
    actors: {
      sealAdmission: fake('sealAdmission'),
      publishDraining: fake('publishDraining'),
      drainAcceptedWork: fake('drainAcceptedWork'),
      closeSpots: fake('closeSpots'),
      cleanupResources: fake('cleanupResources'),
      forceTeardown: fake('forceTeardown'),
    },
  });
  const actor = createActor(machine, { input: { deadlineMs: DEADLINE_MS }, clock });
  const done = toPromise(actor);
  actor.start();
  return { actor, clock, calls, aborted, done };
}

test('wire values of the §3 termination result', () => {
  expect(TerminationOutcome).toEqual({ Stopped: 0, ForceStopped: 1 });
  expect(TerminationReason).toEqual({ None: 0, DeadlineExceeded: 1, TeardownFailed: 2 });
});

test('all steps succeed: steps 1–5 run in order, no force teardown → Stopped/None', async () => {
  const { calls, done, aborted } = run();
  const result = await done;
  expect(calls).toEqual([...STEPS]);
  expect(aborted).toEqual([]);
  expect(result).toEqual({ outcome: 0, reason: 0 });
  expect(isValidTerminationResult(result.outcome, result.reason)).toBe(true);
});

test('each step starts only after the previous one ended', async () => {
  // Hang step 3 and look: step 4 has not started.
  const { actor, calls } = run({ drainAcceptedWork: 'hang' });
  await waitFor(actor, (s) => s.matches({ running: 'drainingWork' }));
  await Promise.resolve();
  expect(calls).toEqual(['sealAdmission', 'publishDraining', 'drainAcceptedWork']);
  actor.stop();
});

test('closeSpots rejects: cleanupResources still runs → ForceStopped/TeardownFailed', async () => {
  const { calls, done } = run({ closeSpots: 'reject' });
  const result = await done;
  expect(calls).toEqual([...STEPS]);
  expect(result).toEqual({ outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.TeardownFailed });
  expect(result).toEqual({ outcome: 1, reason: 2 });
});

test.each(['sealAdmission', 'drainAcceptedWork', 'cleanupResources'] as const)(
  '%s rejects: the remaining steps still run → ForceStopped/TeardownFailed',
  async (failing) => {
    const { calls, done } = run({ [failing]: 'reject' });
    expect(await done).toEqual({ outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.TeardownFailed });
    expect(calls).toEqual([...STEPS]);
  },
);

test('publishDraining failing does not change the outcome (§14 step 2 awaits only its terminal)', async () => {
  const { calls, done } = run({ publishDraining: 'reject' });
  expect(await done).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
  expect(calls).toEqual([...STEPS]);
});

test.each(['drainAcceptedWork', 'closeSpots', 'cleanupResources'] as const)(
  '%s never resolves: at the deadline its AbortSignal fires, forceTeardown runs → ForceStopped/DeadlineExceeded',
  async (hanging) => {
    const { actor, clock, calls, aborted, done } = run({ [hanging]: 'hang' });
    await waitFor(actor, () => calls.includes(hanging));
    clock.increment(DEADLINE_MS - 1);
    await Promise.resolve();
    expect(aborted).toEqual([]);
    expect(calls).not.toContain('forceTeardown');
    clock.increment(1);
    const result = await done;
    expect(aborted).toEqual([hanging]);
    expect(calls).toEqual([...STEPS.slice(0, STEPS.indexOf(hanging) + 1), 'forceTeardown']);
    expect(result).toEqual({ outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.DeadlineExceeded });
    expect(result).toEqual({ outcome: 1, reason: 1 });
  },
);

test('a force teardown that itself fails still ends the machine (DeadlineExceeded)', async () => {
  const { actor, clock, calls, done } = run({ closeSpots: 'hang', forceTeardown: 'reject' });
  await waitFor(actor, () => calls.includes('closeSpots'));
  clock.increment(DEADLINE_MS);
  expect(await done).toEqual({ outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.DeadlineExceeded });
});

test('a teardown failure seen before the deadline stays the reason when the deadline later fires', async () => {
  const { actor, clock, calls, done } = run({ sealAdmission: 'reject', closeSpots: 'hang' });
  await waitFor(actor, () => calls.includes('closeSpots'));
  clock.increment(DEADLINE_MS);
  expect(await done).toEqual({ outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.TeardownFailed });
  expect(calls.at(-1)).toBe('forceTeardown');
});

test('finishing before the deadline cancels the deadline timer', async () => {
  const { clock, calls, done } = run();
  await done;
  clock.increment(DEADLINE_MS * 2);
  expect(calls).not.toContain('forceTeardown');
});
