/**
 * Model-based test of machines/host-lifecycle.machine.ts (§3) on the real runtime. The paths are generated from the
 * machine with xstate/graph: every simple path to Stopped, and for every edge the shortest path to it and on to
 * Stopped (the Relocating → Serving edge returns to a visited state, so no simple path takes it). Each path runs a
 * host (on a SimulatedClock) beside a target host on the memory stack; the host's lifecycle machine is observed
 * through its `inspect` option, and after every step the host's status, its observe stream and its records are
 * checked.
 *
 * Events → stimuli:
 *   COMPONENTS_READY           createRuntime resolves
 *   STARTUP_FAILED             createRuntime of a nodeId whose owner lease a live host holds (NodeIdInUseError)
 *   RELOCATE_INTENT_PUBLISHED  relocate() while an Actor is in a turn the test holds: the host enters Relocating
 *   ALL_UNITS_DETACHED         the test ends the turn: the unit moves, Relocated
 *   SOURCE_RESTORED            the Relocate deadline passes on the host's clock first: Blocked/DeadlineExceeded
 *   RUNTIME_ERROR              the owner lease is found gone at a renewal (the Stores answer renew with false)
 *   SHUTDOWN_SEALED            shutdown(); from Error after a failed start, the runtime's own bounded cleanup
 *   CLEANUP_COMPLETE           the shutdown's cleanup ends
 */
import {
  AdmissionError,
  FrameworkRuntimeState,
  NodeIdInUseError,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  RequestError,
  SimulatedClock,
  TerminationOutcome,
  TerminationReason,
  type FrameworkRuntime,
  type RelocationResult,
  type RuntimeStatus,
  type TerminationResult,
} from '../../runtime';
import { hostLifecycleMachine, type HostLifecycleStateName } from '../../machines';
import { generatePaths } from './support/model';
import { modelSuite, Recorder, type Driver } from './support/runner';
import { MODEL_TIMING, until, World } from './support/world';

const DEADLINE_MS = 60_000;

class LifecycleWorld extends World {
  readonly clock = new SimulatedClock();
  subject: FrameworkRuntime | undefined;
  target!: FrameworkRuntime;
  /** Set for the STARTUP_FAILED path: the live host whose lease the subject's nodeId runs into. */
  holder: FrameworkRuntime | undefined;
  startupError: unknown;
  leaseLost = false;
  relocations = 0;
  relocation: Promise<RelocationResult> | undefined;
  shutdown: Promise<TerminationResult> | undefined;
  /** Every status the subject's observe stream gave, from its first one. */
  readonly observed: RuntimeStatus[] = [];
  readonly recorder = new Recorder<{ status: RuntimeStatus }>(hostLifecycleMachine, () => (this.subject ? { status: this.subject.status } : undefined));

  async start(): Promise<FrameworkRuntime> {
    const host = await this.host({
      nodeId: 'subject',
      clock: this.clock,
      inspect: this.recorder.inspect,
      storeHooks: { renew: () => (this.leaseLost ? false : undefined) },
    });
    this.subject = host;
    void (async () => {
      for await (const s of host.observe()) this.observed.push(s);
    })();
    return host;
  }
}

const STATE: Record<HostLifecycleStateName, FrameworkRuntimeState> = FrameworkRuntimeState as never;

const driver: Driver<LifecycleWorld> = {
  async setup(path) {
    const w = new LifecycleWorld();
    w.target = await w.host({ nodeId: 'target', role: 'target' });
    if (path.events[0]!.type === 'STARTUP_FAILED') {
      w.holder = await w.host({ nodeId: 'subject' });
      await w.holder.createActor('Item', 'held-by-holder');
    }
    return w;
  },

  async fire(w, path, index) {
    const type = path.events[index]!.type;
    const host = w.subject;
    switch (type) {
      case 'COMPONENTS_READY':
        await w.start();
        return;
      case 'STARTUP_FAILED':
        // The lease of 'subject' is held by a live host: startup is refused; the run cleans up what it started.
        await w.start().catch((error: unknown) => void (w.startupError = error));
        return;
      case 'RELOCATE_INTENT_PUBLISHED': {
        const gate = `turn-${++w.relocations}`;
        if (w.relocations === 1) await host!.createActor('Item', 'u');
        w.keep(host!.request({ actor: 'u' }, { op: 'hold', gate }, { timeoutMs: 10 * DEADLINE_MS }));
        w.relocation = w.keep(host!.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: DEADLINE_MS }));
        // The target search reads descriptors on the host's clock.
        return { onPoll: () => w.clock.increment(MODEL_TIMING.discoveryIntervalMs) };
      }
      case 'ALL_UNITS_DETACHED':
        w.gate(`turn-${w.relocations}`).open();
        return;
      case 'SOURCE_RESTORED':
        w.clock.increment(DEADLINE_MS);
        return;
      case 'RUNTIME_ERROR':
        w.leaseLost = true;
        w.clock.increment(Math.floor(MODEL_TIMING.leaseMs / 3) + 1); // the next renewal
        return;
      case 'SHUTDOWN_SEALED':
        // From Error after a failed start, the runtime itself cleans up (bounded); otherwise the test calls Shutdown.
        if (host) w.shutdown = w.keep(host.shutdown({ deadlineMs: 30_000 }));
        return;
      case 'CLEANUP_COMPLETE':
        for (let i = 1; i <= w.relocations; i++) w.gate(`turn-${i}`).open(); // accepted work finishes (§14 step 3)
        if (w.shutdown) await w.nudging(w.shutdown);
        return;
    }
  },

  async check(w, path, index) {
    const name = String(path.steps[index]!.snapshot.value) as HostLifecycleStateName;
    const type = path.events[index]!.type;
    const host = w.subject;
    const seen = w.recorder.seen(name)?.surface;
    if (host && seen) {
      expect(seen.status.state).toBe(STATE[name]);
      expect(seen.status.isReady).toBe(name === 'Serving');
    }
    switch (name) {
      case 'Serving':
        expect(host!.status.state).toBe(FrameworkRuntimeState.Serving);
        await until(async () => (await w.stores.descriptors.list()).some((d) => d.nodeId === 'subject' && d.state === FrameworkRuntimeState.Serving), 'Serving descriptor');
        if (type === 'SOURCE_RESTORED') {
          // §13: Blocked before every unit cut over; the Actor never left and admission is open again.
          const blocked = { mode: RelocationMode.PlannedMaintenance, targetApplicationVersion: 1, outcome: RelocationOutcome.Blocked, reason: RelocationReason.DeadlineExceeded };
          expect(await w.relocation).toEqual(blocked);
          expect(host!.status.lastRelocation).toEqual(blocked);
          expect((await host!.locate({ actor: 'u' }))?.nodeId).toBe('subject');
          await host!.createActor('Item', `after-${w.relocations}`);
        } else await host!.createActor('Item', 'admitted');
        break;
      case 'Relocating':
        expect(host!.status.state).toBe(FrameworkRuntimeState.Relocating);
        expect(host!.diagnostics().operation).toMatchObject({ mode: RelocationMode.PlannedMaintenance });
        // §15: new owner admission is closed while Relocating.
        await expect(host!.createActor('Item', 'refused')).rejects.toBeInstanceOf(AdmissionError);
        break;
      case 'Relocated': {
        const relocated = { mode: RelocationMode.PlannedMaintenance, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None };
        expect(await w.relocation).toEqual(relocated);
        expect(host!.status).toMatchObject({ state: FrameworkRuntimeState.Relocated, lastRelocation: relocated });
        await until(async () => (await host!.locate({ actor: 'u' }))?.nodeId === 'target', 'the target owns u');
        expect(await host!.request({ actor: 'u' }, { op: 'where' })).toBe('target'); // Message Follow
        break;
      }
      case 'Error':
        if (type === 'STARTUP_FAILED') {
          expect(w.startupError).toBeInstanceOf(NodeIdInUseError);
          // The live host keeps its lease, its state and its objects.
          expect(w.holder!.status.state).toBe(FrameworkRuntimeState.Serving);
          expect((await w.holder!.locate({ actor: 'held-by-holder' }))?.nodeId).toBe('subject');
        } else {
          expect(host!.status.state).toBe(FrameworkRuntimeState.Error);
          await expect(host!.request({ actor: 'u' }, { op: 'where' })).rejects.toBeInstanceOf(RequestError);
          await expect(host!.createActor('Item', 'refused')).rejects.toBeInstanceOf(AdmissionError);
        }
        break;
      case 'Draining':
        if (host) expect([FrameworkRuntimeState.Draining, FrameworkRuntimeState.Stopped]).toContain(host.status.state);
        break;
      case 'Stopped': {
        if (!host) break; // the failed start: checked at Error (the holder is untouched)
        const result = { outcome: TerminationOutcome.Stopped, reason: TerminationReason.None };
        expect(await w.shutdown).toEqual(result);
        expect(host.status).toMatchObject({ state: FrameworkRuntimeState.Stopped, lastTermination: result, isReady: false });
        // Cleanup releases descriptor and lease; a host that found its lease gone does not touch it (another run may
        // hold it now), so its descriptor only goes when that lease expires.
        const listed = (await w.stores.descriptors.list()).some((d) => d.nodeId === 'subject');
        expect(listed).toBe(w.leaseLost);
        break;
      }
    }
  },

  async finish(w, path) {
    if (w.holder) {
      expect(w.holder.status.state).toBe(FrameworkRuntimeState.Serving);
      return;
    }
    // The observe stream gave exactly the path's states, in order (its first value is the state at subscription).
    const states = w.observed.map((s) => s.state).filter((s, i, all) => i === 0 || all[i - 1] !== s);
    expect(states).toEqual(path.steps.map((s) => STATE[String(s.snapshot.value) as HostLifecycleStateName]));
  },
};

modelSuite('hostLifecycle', hostLifecycleMachine, generatePaths(hostLifecycleMachine, { events: () => [], all: true }), driver);
