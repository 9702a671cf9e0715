/**
 * Model-based test of machines/unit-source.machine.ts on the real runtime: every simple path of the machine
 * (xstate/graph getSimplePaths, via generatePaths) drives a real relocation of one Actor from a source host (on a
 * SimulatedClock) to a target host on the memory stack; the source's unit machine is observed through the source's
 * `inspect` option.
 *
 * Events → stimuli:
 *   SAFE_POINT           the Actor's current turn ends (its handler waits on a gate the test opens, §7)
 *   FAILED (waiting)     the `r.prepare` of the unit is not sent (the source transport refuses it): nothing sealed
 *   STOP                 the Relocate deadline passes on the source's clock while the unit waits for its safe point
 *   RELAY_READY          the target restores the payload and answers relay-ready (a normal relocation)
 *   REPLY_INDETERMINATE  the relay-ready reply is lost on the way and the source's reply wait passes (§8)
 *   FAILED (sealed)      the target's Restore throws: an explicit failure before relay-ready (§11)
 *   FOLLOW_EXPIRED       MessageFollowDuration passes on the source's clock (S4)
 *   ROUTE_CUT            Shutdown of the source while the unit follows (§14)
 *   CLOSED               closeSpot on the source while the unit waits for its safe point (§12: Close first); on these
 *                        paths the unit is an Instance Spot's, whose current turn is the one held on the gate
 *   CLOSE_DONE           the held turn ends: onClosing(Closed) runs and the Spot's records go
 *   STOP (closing)       the Relocate deadline passes while the close still waits for the held turn
 */
import {
  FrameworkRuntimeState,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  SimulatedClock,
  UNIT_CHANGED,
  type FrameworkRuntime,
  type RelocationDiagnostics,
  type RelocationResult,
  type UnitEvent,
} from '../../runtime';
import { unitSourceMachine } from '../../machines';
import { generatePaths, type ModelPath } from './support/model';
import { modelSuite, Recorder, type Driver } from './support/runner';
import { MODEL_TIMING, until, World } from './support/world';

const DEADLINE_MS = 60_000;
/** The source's reply wait (coordinator): max(1000, cutover wait). */
const REPLY_WAIT_MS = Math.max(1000, MODEL_TIMING.relocationCutoverWaitTimeoutMs);

interface Surface {
  state: FrameworkRuntimeState;
  diagnostics: RelocationDiagnostics;
}

class SourceWorld extends World {
  readonly clock = new SimulatedClock();
  readonly sourceEvents: UnitEvent[] = [];
  source!: FrameworkRuntime;
  target!: FrameworkRuntime;
  relocation!: Promise<RelocationResult>;
  shutdownCalled = false;
  /** Paths through `closing`: the unit is an Instance Spot's and closeSpot is called on it. */
  closePath = false;
  closing: Promise<void> | undefined;
  readonly recorder = new Recorder<Surface>(unitSourceMachine, () =>
    this.source ? { state: this.source.status.state, diagnostics: this.source.diagnostics() } : undefined,
  );
}

const types = (path: ModelPath) => path.events.map((e) => e.type);
const unitEvents = (w: SourceWorld, state: UnitEvent['state']) =>
  w.sourceEvents.filter((e) => e.state === state && e.objects.includes(w.closePath ? 's:u' : 'a:u'));

const driver: Driver<SourceWorld> = {
  async setup(path) {
    const w = new SourceWorld();
    const events = types(path);
    w.target = await w.host({ nodeId: 'target', role: 'target' });
    w.source = await w.host({
      nodeId: 'source',
      clock: w.clock,
      inspect: w.recorder.inspect,
      transportHooks: {
        // FAILED while waiting: the target's temporary queue is never asked for (the message is not sent).
        dropOutbound: (_peer, message) => events[0] === 'FAILED' && message.t === 'r.prepare',
        // REPLY_INDETERMINATE: the relay-ready reply is lost; the target did restore and waits for the cutover.
        dropInbound: (_from, message) => events.includes('REPLY_INDETERMINATE') && message.t === 'r.ready',
      },
    });
    w.source.on(UNIT_CHANGED, (e) => void w.sourceEvents.push(e));
    w.closePath = events[0] === 'CLOSED';
    // The object under test: an Actor, or (closing paths) an Instance Spot created by its first message here.
    const u = w.closePath ? { spot: 'u' } : { actor: 'u' };
    if (!w.closePath) await w.source.createActor('Item', 'u');
    expect(await w.source.request(u, { op: 'add' })).toBe(1);
    // A turn that lasts until the test opens `safe`: the unit waits for this safe point.
    w.keep(w.source.request(u, { op: 'hold', gate: 'safe' }, { timeoutMs: 60_000 }));
    w.relocation = w.keep(w.source.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: DEADLINE_MS }));
    // (The target search reads descriptors on the source's clock.)
    await until(() => w.recorder.subject !== undefined, 'the unit machine', undefined, () => {
      if (w.recorder.subject === undefined) w.clock.increment(MODEL_TIMING.discoveryIntervalMs);
    });
    return w;
  },

  async fire(w, path, index) {
    const type = path.events[index]!.type;
    const next = path.events[index + 1]?.type;
    switch (type) {
      case 'CLOSED':
        // The unit waits for the held turn (its safe point): the close is taken first (§12).
        await until(() => (w.source.diagnostics().units.sourceByState['safePoint'] ?? 0) === 1, 'unit at its safe point', undefined, () =>
          w.clock.increment(MODEL_TIMING.discoveryIntervalMs),
        );
        // (Longer than the deadline the STOP path moves the simulated clock by.)
        w.closing = w.keep(w.source.closeSpot({ spot: 'u' }, { timeoutMs: 4 * DEADLINE_MS }));
        return;
      case 'CLOSE_DONE':
        w.gate('safe').open();
        return;
      case 'SAFE_POINT':
        // A FAILED next (sealed) is the target refusing to restore this unit.
        if (next === 'FAILED') w.poisoned.add('u');
        w.gate('safe').open();
        return;
      case 'STOP':
        // §8: past the deadline no unit starts; one still waiting for its safe point (or for a close) stops.
        w.clock.increment(DEADLINE_MS);
        return;
      case 'REPLY_INDETERMINATE':
        return { onPoll: () => w.clock.increment(REPLY_WAIT_MS) };
      case 'FOLLOW_EXPIRED':
        w.clock.increment(MODEL_TIMING.messageFollowDurationMs);
        return;
      case 'ROUTE_CUT':
        w.shutdownCalled = true;
        w.keep(w.source.shutdown({ deadlineMs: 10_000 }));
        return;
      default:
        return; // RELAY_READY, FAILED: what the target and the transport do (armed in setup)
    }
  },

  async check(w, path, index) {
    const state = String(path.steps[index]!.snapshot.value);
    const seen = w.recorder.seen(state)?.surface;
    switch (state) {
      case 'sealed':
        expect(unitEvents(w, 'sealed').map((e) => e.point)).toEqual(['S0']);
        expect(seen?.diagnostics.units.sourceByState).toEqual({ sealed: 1 });
        expect(seen?.state).toBe(FrameworkRuntimeState.Relocating);
        break;
      case 'following': {
        const s1 = unitEvents(w, 'cutOver');
        expect(s1.map((e) => [e.point, e.submitOk])).toEqual([['S1', true]]);
        expect(seen?.diagnostics.followRoutes).toBe(1);
        expect(unitEvents(w, 'restored')).toEqual([]);
        // Detached at S1 (§13): the source's Relocate is Relocated; the target owns the Actor once its CAS applied.
        expect(await w.relocation).toMatchObject({ outcome: RelocationOutcome.Relocated });
        await until(async () => (await w.source.locate({ actor: 'u' }))?.nodeId === 'target', 'target owns u');
        expect(await w.source.request({ actor: 'u' }, { op: 'get' })).toBe(1);
        break;
      }
      case 'followEnded':
        expect(unitEvents(w, 'followEnded').map((e) => e.point)).toEqual(['S4']);
        expect(w.source.diagnostics().followRoutes).toBe(0);
        // S4 of every unit and every retransmission window over: SafeToShutdown (§14).
        await until(() => w.source.status.safeToShutdown, 'SafeToShutdown');
        break;
      case 'routeCut':
        // Shutdown removed the route with the transport: no S4, never SafeToShutdown.
        expect(unitEvents(w, 'followEnded')).toEqual([]);
        expect([FrameworkRuntimeState.Draining, FrameworkRuntimeState.Stopped]).toContain(w.source.status.state);
        expect(w.source.status.safeToShutdown).toBe(false);
        break;
      case 'restored':
        // §11: sealed, failed before relay-ready: the source runs it again.
        expect(unitEvents(w, 'restored')).toHaveLength(1);
        expect(unitEvents(w, 'cutOver')).toEqual([]);
        expect(await w.relocation).toMatchObject({ outcome: RelocationOutcome.Blocked, reason: RelocationReason.RelocationFailed });
        expect((await w.source.locate({ actor: 'u' }))?.nodeId).toBe('source');
        expect(await w.source.request({ actor: 'u' }, { op: 'where' })).toBe('source');
        expect(await w.source.request({ actor: 'u' }, { op: 'get' })).toBe(1);
        break;
      case 'closing':
        // Close came first: the unit gave back what it held and waits for the close; nothing was sealed.
        expect(unitEvents(w, 'closed')).toHaveLength(1);
        expect(unitEvents(w, 'sealed')).toEqual([]);
        expect(seen?.state).toBe(FrameworkRuntimeState.Relocating);
        expect(seen?.diagnostics.units.sourceByState).toEqual({ closing: 1 });
        break;
      case 'closed': {
        // The Spot was not moved. Closed after the close finished: Relocated (nothing left to move). At the deadline
        // the unit stops waiting and the relocation ends; the close still goes on (finish checks it).
        expect(unitEvents(w, 'sealed')).toEqual([]);
        const result = await w.relocation;
        if (path.events[index]!.type === 'CLOSE_DONE') {
          expect(result).toEqual({ mode: RelocationMode.PlannedMaintenance, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
          await w.closing;
          expect(await w.source.locate({ spot: 'u' })).toBeUndefined();
        } else {
          // The relocation did not finish by its deadline (it waited for the close): Blocked, the source serves again.
          expect(result).toEqual({ mode: RelocationMode.PlannedMaintenance, targetApplicationVersion: 1, outcome: RelocationOutcome.Blocked, reason: RelocationReason.DeadlineExceeded });
          expect(w.source.status.state).toBe(FrameworkRuntimeState.Serving);
          expect((await w.source.locate({ spot: 'u' }))?.nodeId).toBe('source');
        }
        break;
      }
      case 'notStarted': {
        // Nothing was sealed: no S0, and the Actor never left the source.
        expect(unitEvents(w, 'notStarted')).toHaveLength(1);
        expect(unitEvents(w, 'sealed')).toEqual([]);
        const reason = path.events[index]!.type === 'STOP' ? RelocationReason.DeadlineExceeded : RelocationReason.RelocationFailed;
        expect(await w.relocation).toMatchObject({ outcome: RelocationOutcome.Blocked, reason });
        expect(w.source.status.state).toBe(FrameworkRuntimeState.Serving);
        expect((await w.source.locate({ actor: 'u' }))?.nodeId).toBe('source');
        break;
      }
      default:
        throw new Error(`no check for ${state}`);
    }
  },

  async finish(w) {
    if (w.shutdownCalled) return;
    if (w.closePath) {
      // The close finishes once the held turn ends; the Spot is gone, and a new message creates a new instance.
      w.gate('safe').open();
      await w.closing;
      expect(await w.source.locate({ spot: 'u' })).toBeUndefined();
      expect(await w.target.request({ spot: 'u' }, { op: 'add' })).toBe(1);
      return;
    }
    // Whatever the unit's end, the source keeps serving the Actor's messages (here, or followed to the target).
    w.gate('safe').open();
    expect(await w.source.request({ actor: 'u' }, { op: 'add' })).toBe(2);
  },
};

modelSuite('unitSource', unitSourceMachine, generatePaths(unitSourceMachine, { events: () => [{ type: 'FAILED', reason: RelocationReason.RelocationFailed }], all: true }), driver);
