/**
 * Model-based test of machines/shutdown.machine.ts (§14) on the real runtime. Paths are generated from the machine
 * with xstate/graph (simple paths to `done`, and shortest paths through every edge), and a covering set of them is
 * run: each shuts down a host on a SimulatedClock on the memory stack, its shutdown machine observed through the
 * host's `inspect` option. Every step of the runtime waits at a boundary the test holds (a gate), so each state is
 * seen from outside while the machine is in it, and each step ends the way its event says.
 *
 * Events → stimuli:
 *   done(sealing)             shutdown() (the seal is synchronous)
 *   error(sealing)            a transport whose seal() throws (a transport defect)
 *   done/error(publishingDraining)  the Draining descriptor publish, held by the Stores view, answers / fails
 *   done(drainingWork)        the Actor turn the test held (accepted work, §14 step 3) ends
 *   error(drainingWork)       a defect: the host's Clock throws when the router, still routing a message whose owner
 *                             lookup the Stores hold, asks it for a timer while Shutdown waits for routing to settle.
 *                             No store, transport or application failure reaches this step (it only waits); a Clock
 *                             is the one component it calls.
 *   done/error(closingSpots)  the Spot's onClosing(HostShutdown), waiting on a gate, returns / throws
 *   done/error(cleaningUp)    the owner record removals, held by the Stores view, answer / fail
 *   after(shutdownDeadline)   the shutdown deadline passes on the host's clock while a step is held
 *   done(forcing)             the bounded force teardown ends
 *   error(forcing)            the Stores do not answer the descriptor release during the force teardown
 */
import { SimulatedClock, TERMINATION_CHANGED, AdmissionError, FrameworkRuntimeState, RelocationMode, RelocationOutcome, RelocationReason } from '../../runtime';
import type { FrameworkRuntime, RuntimeStatus, TerminationResult } from '../../runtime';
import { shutdownMachine } from '../../machines';
import { eventName, generatePaths, type ModelPath } from './support/model';
import { modelSuite, Recorder, type Driver } from './support/runner';
import { storeDown, until, World } from './support/world';

const DEADLINE_MS = 30_000;

/** A SimulatedClock that throws once from setTimeout when armed (the defect behind error(drainingWork)). */
class DefectiveClock extends SimulatedClock {
  armed = false;
  override setTimeout(fn: (...args: unknown[]) => void, timeout: number): number {
    if (this.armed) {
      this.armed = false;
      throw new Error('injected: clock defect');
    }
    return super.setTimeout(fn, timeout);
  }
}

class ShutdownWorld extends World {
  readonly clock = new DefectiveClock();
  subject!: FrameworkRuntime;
  shutdown!: Promise<TerminationResult>;
  held!: Promise<unknown>;
  readonly terminations: RuntimeStatus[] = [];
  readonly recorder = new Recorder<{ status: RuntimeStatus }>(shutdownMachine, () => (this.subject ? { status: this.subject.status } : undefined));
}

const names = (path: ModelPath) => path.events.map(eventName);

const driver: Driver<ShutdownWorld> = {
  async setup(path) {
    const w = new ShutdownWorld();
    const events = names(path);
    w.subject = await w.host({
      nodeId: 'subject',
      clock: w.clock,
      inspect: w.recorder.inspect,
      storeHooks: {
        publish: (d) => (d.state === FrameworkRuntimeState.Draining ? w.gate('publish').wait() : undefined),
        remove: () => w.gate('remove').wait(),
        get: (o) => (o.id === 'elsewhere' ? w.gate('lookup').wait() : undefined),
        release: () => (events.includes('error(forcing)') ? Promise.reject(storeDown('descriptor release')) : undefined),
      },
      transportHooks: {
        seal: () => {
          if (events[0] === 'error(sealing)') throw new Error('injected: transport seal failed');
        },
      },
    });
    w.subject.on(TERMINATION_CHANGED, (s) => void w.terminations.push(s));
    await w.subject.createActor('Item', 'busy');
    await w.subject.createSpot('Group', 'closer');
    w.gate('closing:closer'); // onClosing(HostShutdown) waits on it
    // Accepted work Shutdown must finish first (§14 step 3): a turn the test holds.
    w.held = w.keep(w.subject.request({ actor: 'busy' }, { op: 'hold', gate: 'turn' }, { timeoutMs: 10 * DEADLINE_MS }));
    if (events.includes('error(drainingWork)')) {
      // A message still being routed (its owner lookup held) when Shutdown waits for routing to settle; the Clock
      // defect is armed as the machine enters drainingWork.
      w.subject.send({ actor: 'elsewhere' }, { op: 'add' });
      w.recorder.onEvent = (event, isSubject) => {
        if (isSubject && event.type === '@xstate.microstep' && (event.snapshot as unknown as { matches(v: unknown): boolean }).matches({ running: 'drainingWork' })) w.clock.armed = true;
      };
    }
    return w;
  },

  async fire(w, path, index) {
    const name = eventName(path.events[index]!);
    if (index === 0) {
      w.shutdown = w.keep(w.subject.shutdown({ deadlineMs: DEADLINE_MS }));
      return;
    }
    switch (name) {
      case 'done(publishingDraining)':
        return w.gate('publish').open();
      case 'error(publishingDraining)':
        return w.gate('publish').fail(storeDown('Draining descriptor publish'));
      case 'done(drainingWork)':
        return w.gate('turn').open();
      case 'done(closingSpots)':
        return w.gate('closing:closer').open();
      case 'error(closingSpots)':
        return w.gate('closing:closer').fail(new Error('injected: onClosing threw'));
      case 'done(cleaningUp)':
        return w.gate('remove').open();
      case 'error(cleaningUp)':
        return w.gate('remove').fail(storeDown('owner record removal'));
      case 'after(shutdownDeadline)':
        return void w.clock.increment(DEADLINE_MS);
      default:
        return; // error(drainingWork), done/error(forcing): armed in setup
    }
  },

  async check(w, path, index) {
    const value = path.steps[index]!.snapshot.value;
    const seen = w.recorder.seen(value)?.surface;
    const state = typeof value === 'string' ? value : (value as { running: string }).running;
    if (state === 'done') return; // finish
    // §14 step 1: Draining from the seal on; nothing new is admitted and a Relocate ends ShutdownRequested.
    expect(seen?.status.state).toBe(FrameworkRuntimeState.Draining);
    // The bounded force teardown is not held: by now the host may be Stopped already (checked in finish).
    if (state === 'forcing') return;
    expect(w.subject.status).toMatchObject({ state: FrameworkRuntimeState.Draining, isReady: false });
    await expect(w.subject.createActor('Item', 'late')).rejects.toBeInstanceOf(AdmissionError);
    expect(await w.subject.relocate({ mode: RelocationMode.PlannedMaintenance })).toMatchObject({
      outcome: RelocationOutcome.Blocked,
      reason: RelocationReason.ShutdownRequested,
    });
    const events = names(path).slice(0, index + 1);
    const descriptor = (await w.stores.descriptors.list()).find((d) => d.nodeId === 'subject');
    if (events.includes('done(publishingDraining)')) expect(descriptor?.state).toBe(FrameworkRuntimeState.Draining);
    else expect(descriptor?.state).toBe(FrameworkRuntimeState.Serving); // not published (yet, or it failed: §14 step 2)
    if (events.includes('done(drainingWork)')) expect(await w.held).toBe('released');
    if (state === 'forcing' || state === 'cleaningUp') expect((await w.subject.locate({ actor: 'busy' }))?.nodeId).toBe('subject');
  },

  async finish(w, path) {
    const events = names(path);
    const expected = path.steps[path.steps.length - 1]!.snapshot.output as TerminationResult;
    // The runtime's result is the machine's output (§14 step 6), published once with the Stopped state.
    expect(await w.shutdown).toEqual(expected);
    expect(w.subject.status).toMatchObject({ state: FrameworkRuntimeState.Stopped, lastTermination: expected });
    await until(() => w.terminations.length > 0, 'termination event');
    expect(w.terminations.map((s) => [s.state, s.lastTermination])).toEqual([[FrameworkRuntimeState.Stopped, expected]]);
    // Cleanup removed the owner records only when its removals answered; a forced end leaves them to expire with
    // the run, and the descriptor is released unless the release itself failed.
    const record = await w.stores.location.get({ kind: 'actor', id: 'busy' });
    expect(record === undefined).toBe(events.includes('done(cleaningUp)'));
    const listed = (await w.stores.descriptors.list()).some((d) => d.nodeId === 'subject');
    expect(listed).toBe(events.includes('error(forcing)'));
    expect(await w.subject.shutdown()).toEqual(expected); // Shutdown in Stopped: the stored result
  },
};

modelSuite(
  'shutdown',
  shutdownMachine,
  generatePaths(shutdownMachine, {
    events: () => [],
    input: { deadlineMs: DEADLINE_MS },
    cover: 'edges',
    // The seal (step 1) is synchronous: nothing holds the machine in `sealing`, so the deadline cannot pass there.
    admissible: (path) => !eventName(path.events[0]!).startsWith('after('),
  }),
  driver,
);
