/**
 * Model-based test of machines/unit-target.machine.ts (one machine per inbound parcel) on the real runtime: every
 * simple path of the machine (xstate/graph getSimplePaths, via generatePaths) drives a real relocation of one
 * Actor from a source host to a target host on the memory stack, and the target's parcel machine is observed
 * through the target's `inspect` option.
 *
 * Events → stimuli:
 *   CUTOVER             the source's cutover arrives (a normal relocation)
 *   CUTOVER_WAIT_ENDED  the source's cutover submit is lost (its transport refuses `r.cutover` / `r.cutovers`), and the target's
 *                       SimulatedClock passes the cutover wait: the §13 fallback
 *   COMMITTED           the target's owner CAS applies (the real Location Store)
 *   COMMIT_FAILED       the target's Location Store answers the CAS with a conflict (another owner changed the record)
 */
import { FrameworkRuntimeState, RelocationMode, SimulatedClock, UNIT_CHANGED, type FrameworkRuntime, type RelocationDiagnostics, type UnitEvent } from '../../runtime';
import { FALLBACK_STATES, unitTargetMachine } from '../../machines';
import { generatePaths, type ModelPath } from './support/model';
import { modelSuite, Recorder, type Driver } from './support/runner';
import { MODEL_TIMING, until, World } from './support/world';

interface Surface {
  diagnostics: RelocationDiagnostics;
  targetEvents: UnitEvent[];
}

class TargetWorld extends World {
  readonly clock = new SimulatedClock();
  readonly sourceEvents: UnitEvent[] = [];
  readonly targetEvents: UnitEvent[] = [];
  source!: FrameworkRuntime;
  target!: FrameworkRuntime;
  readonly recorder = new Recorder<Surface>(unitTargetMachine, () =>
    this.target ? { diagnostics: this.target.diagnostics(), targetEvents: [...this.targetEvents] } : undefined,
  );
}

const has = (path: ModelPath, type: string) => path.events.some((e) => e.type === type);
const eventsOf = (events: UnitEvent[], state: UnitEvent['state']) => events.filter((e) => e.state === state && e.objects.includes('a:u'));

const driver: Driver<TargetWorld> = {
  async setup(path) {
    const w = new TargetWorld();
    w.target = await w.host({
      nodeId: 'target',
      role: 'target',
      clock: w.clock,
      inspect: w.recorder.inspect,
      storeHooks: {
        // COMMIT_FAILED: the record's authority moved on under the unit (a conflict, not a store failure: no retry).
        commitOwners: (request) =>
          has(path, 'COMMIT_FAILED') ? request.entries.map(() => ({ status: 'conflict' as const })) : undefined,
      },
    });
    w.source = await w.host({
      nodeId: 'source',
      transportHooks: {
        // CUTOVER_WAIT_ENDED: the one-way cutover submit is lost (send answers false); the source still crosses (§13).
        dropOutbound: (_peer, message) => has(path, 'CUTOVER_WAIT_ENDED') && (message.t === 'r.cutovers' || (message.t === 'r.cutover' && !message.retransmit)),
      },
    });
    w.source.on(UNIT_CHANGED, (e) => void w.sourceEvents.push(e));
    w.target.on(UNIT_CHANGED, (e) => void w.targetEvents.push(e));
    await w.source.createActor('Item', 'u');
    expect(await w.source.request({ actor: 'u' }, { op: 'add' })).toBe(1);
    w.keep(w.source.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 30_000 }));
    // The parcel machine starts at relay-ready: the payload restored on the target and answered.
    await until(() => w.recorder.subject !== undefined, 'the inbound parcel machine');
    return w;
  },

  async fire(w, path, index) {
    const type = path.events[index]!.type;
    // The cutover wait is a shared expiry queue on the target's clock: only simulated time ends it.
    if (type === 'CUTOVER_WAIT_ENDED') return { onPoll: () => w.clock.increment(MODEL_TIMING.relocationCutoverWaitTimeoutMs) };
    // CUTOVER, COMMITTED, COMMIT_FAILED: what the source and the Location Store do (armed in setup).
    return undefined;
  },

  async check(w, path, index) {
    const value = String(path.steps[index]!.snapshot.value);
    const fellBack = has(path, 'CUTOVER_WAIT_ENDED');
    const seen = w.recorder.seen(value)?.surface;
    expect(eventsOf(w.targetEvents, 'relayReady')).toHaveLength(1);
    // After the §13 fallback the parcel is in the *AfterFallback twin of each state, with the same checks.
    if (value !== 'relayReady') expect(FALLBACK_STATES.has(value)).toBe(fellBack);
    const state = value.replace(/AfterFallback$/, '');
    switch (state) {
      case 'committing':
        // In flight on the target until its CAS settles; the source crossed at S1 either way (§13).
        if (seen) expect(seen.diagnostics.units.targetInFlight).toBe(1);
        await until(() => eventsOf(w.sourceEvents, 'cutOver').length === 1, 'source S1');
        expect(eventsOf(w.sourceEvents, 'cutOver')[0]!.submitOk).toBe(!fellBack);
        break;
      case 'open': {
        const committed = eventsOf(w.targetEvents, 'committed');
        expect(committed.map((e) => [e.point, e.fellBack])).toEqual([['S2', fellBack]]);
        expect(eventsOf(w.targetEvents, 'opened').map((e) => e.point)).toEqual(['S3']);
        expect((await w.target.locate({ actor: 'u' }))?.nodeId).toBe('target');
        expect(await w.target.request({ actor: 'u' }, { op: 'where' })).toBe('target');
        expect(await w.source.request({ actor: 'u' }, { op: 'get' })).toBe(1); // followed from the source, state kept
        await until(() => w.target.diagnostics().units.targetInFlight === 0, 'no inbound unit in flight');
        break;
      }
      case 'discarded':
        // §11 after relay-ready: nothing of it ran on the target, and the owner record still names the source.
        expect(eventsOf(w.targetEvents, 'discarded')).toHaveLength(1);
        expect(eventsOf(w.targetEvents, 'committed')).toEqual([]);
        expect(eventsOf(w.targetEvents, 'opened')).toEqual([]);
        expect((await w.target.locate({ actor: 'u' }))?.nodeId).toBe('source');
        await until(() => w.target.diagnostics().units.targetInFlight === 0, 'no inbound unit in flight');
        break;
      default:
        throw new Error(`no check for ${state}`);
    }
  },

  async finish(w) {
    // The source's Relocate ended Relocated: a unit counts at its cutover submit, whatever the target did after.
    await until(() => w.source.status.state === FrameworkRuntimeState.Relocated, 'source Relocated');
    expect(w.target.status.state).toBe(FrameworkRuntimeState.Serving);
  },
};

modelSuite('unitTarget', unitTargetMachine, generatePaths(unitTargetMachine, { events: () => [], all: true }), driver);
