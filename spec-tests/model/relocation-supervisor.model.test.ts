/**
 * Model-based test of machines/relocation-supervisor.machine.ts (one host Relocate, §4–§8, §13, §14) on the real
 * runtime. Paths are generated from the machine with xstate/graph (simple paths to a final state, and shortest
 * paths through every edge), and a set of them that takes every transition in every state it is taken in is run.
 * Each path is one relocate() of a source host on a SimulatedClock, on the memory stack; its supervisor is observed
 * through the host's `inspect` option. Every step the runtime takes waits at a boundary the test holds, so each state
 * is looked at from outside while the operation is in it (`diagnostics().operation.phase` is the machine's state).
 *
 * Holds: preflight — the Store ping; awaitingTarget — no target host exists yet; closingAdmission — creations the
 * host accepted before Relocating whose owner-record claims the Stores hold (§4 first row); enteringRelocating — the
 * Relocating descriptor publish; rollingBack — the Serving descriptor publish; batch N — the turn of each object of
 * batch N (PerActor shell, Actor, SpotWide Spot) that the test holds, i.e. its unit waits for its safe point (§7).
 *
 * Events → stimuli:
 *   done(preflight)            the ping answers; the host holds Actors and Spots (hasUnits), nothing (an empty host,
 *                              §5.1), or a DisableRelocation Actor (Blocked/RelocationDisabled)
 *   error(preflight)           the Store does not answer the ping
 *   done(awaitingTarget)       a target host starts
 *   error(awaitingTarget)      the Store does not answer the descriptor read of the target search
 *   done(closingAdmission)     the held creations are confirmed (hasUnits) or refused by the Store (nothing added)
 *   error(closingAdmission)    the owner lease was found gone while the host waited for a target (it is in Error)
 *   done/error(enteringRelocating), done/error(rollingBack)   the held descriptor publish answers / fails
 *   BATCH_DONE                 the held turns of batch N end and its units move; with `failure`, the target cannot
 *                              restore them (its Restore throws: an explicit failure before relay-ready, §11)
 *   error(pool)                a defect while the pool starts a unit (the inspection observer throws as the unit's
 *                              actor is created): nothing else makes the pool actor fail
 *   after(relocationDeadline)  the Relocate deadline passes on the host's clock
 *   SHUTDOWN_REQUESTED         shutdown() of the host (§14 race table)
 */
import {
  FrameworkRuntimeState,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  SimulatedClock,
  TerminationOutcome,
  TerminationReason,
  type FrameworkRuntime,
  type RelocationDiagnostics,
  type RelocationResult,
  type RuntimeStatus,
} from '../../runtime';
import { relocationSupervisorMachine, type PreflightOutput, type SupervisorOutput } from '../../machines';
import type { EventObject } from 'xstate';
import { eventName, generatePaths, type ModelPath } from './support/model';
import { modelSuite, Recorder, type Driver } from './support/runner';
import { MODEL_TIMING, storeDown, tick, until, World } from './support/world';
import { statePath } from '../../runtime/state-path';

const DEADLINE_MS = 600_000;
const PM = RelocationMode.PlannedMaintenance;
const ID = 'relocationSupervisor';
const done = (state: string) => `xstate.done.actor.0.${ID}.${state}`;
const AFTER = `xstate.after.relocationDeadline.${ID}`;
const TARGET = { nodeId: 'target', lifecycleGeneration: 1 };

/** The objects of batch N (§7): PerActor shell, Actor, SpotWide aggregate; `late-…` ones are created during the step. */
const BATCH_OBJECTS = [
  { batch: 1, kind: 'Shell', ref: (id: string) => ({ spot: id }) },
  { batch: 2, kind: 'Item', ref: (id: string) => ({ actor: id }) },
  { batch: 3, kind: 'Group', ref: (id: string) => ({ spot: id }) },
] as const;

interface Surface {
  status: RuntimeStatus;
  diagnostics: RelocationDiagnostics;
}

class SupervisorWorld extends World {
  readonly clock = new SimulatedClock();
  source!: FrameworkRuntime;
  target: FrameworkRuntime | undefined;
  relocation!: Promise<RelocationResult>;
  shutdownCalled = false;
  leaseLost = false;
  listFails = false;
  /** The supervisor's state as its last microstep left it (the runtime's steps start right after). */
  phase: string | undefined;
  /** Object ids per batch that exist on the source. */
  readonly objects: string[][] = [[], [], []];
  late: Promise<unknown>[] | undefined;
  readonly recorder = new Recorder<Surface>(relocationSupervisorMachine, () =>
    this.source ? { status: this.source.status, diagnostics: this.source.diagnostics() } : undefined,
  );

  async addBatchObjects(prefix: string): Promise<void> {
    for (const o of BATCH_OBJECTS) {
      const id = `${prefix}b${o.batch}`;
      if (o.kind === 'Item') await this.source.createActor(o.kind, id);
      else await this.source.createSpot(o.kind, id);
    }
    this.holdBatchObjects(prefix);
  }

  /** Each object's turn waits for `batch-N`: its unit waits for that safe point. */
  holdBatchObjects(prefix: string): void {
    for (const o of BATCH_OBJECTS) {
      const id = `${prefix}b${o.batch}`;
      this.objects[o.batch - 1]!.push(id);
      this.keep(this.source.request(o.ref(id), { op: 'hold', gate: `batch-${o.batch}` }, { timeoutMs: 10 * DEADLINE_MS }));
    }
  }
}

const isDone = (e: EventObject, state: string) => e.type === done(state);
const stateName = (value: unknown) => (typeof value === 'string' ? value : `relocating.${(value as { relocating: string }).relocating}`);
const outputOf = (e: EventObject) => (e as unknown as { output: unknown }).output;

/**
 * The sequences the real runtime can produce. Each rule is a property of the runtime (not of the machine), and a
 * generated path that breaks one is dropped; the transitions it would have taken come from other generated paths.
 */
function admissible(path: ModelPath): boolean {
  const count = (type: string) => path.events.filter((e) => e.type === type).length;
  // The deadline fires once per operation; Shutdown requests it once.
  if (count(AFTER) > 1 || count('SHUTDOWN_REQUESTED') > 1) return false;
  let hasUnits = false;
  let inventory: boolean | undefined;
  let passes = 0;
  for (let i = 0; i < path.events.length; i++) {
    const e = path.events[i]!;
    const before = stateName((i === 0 ? path.initial : path.steps[i - 1]!.snapshot).value);
    const out = outputOf(e) as { hasUnits?: boolean } | undefined;
    if (before === 'closingAdmission') {
      passes++;
      // A second pass (after a late target search) finds the host Relocating: no new creation is admitted to hold
      // it, so it ends at once, with what the host has.
      if (passes > 1 && !isDone(e, 'closingAdmission')) return false;
      // closeAdmission fails only when the host left Serving while it waited for its first target (its owner lease
      // was found gone, §3 Error); without the lease, the rollback cannot be confirmed either.
      if (e.type.startsWith('xstate.error.actor'))
        if (passes > 1 || !isDone(path.events[i - 1]!, 'awaitingTarget') || !path.events[i + 1]?.type.startsWith('xstate.error.actor')) return false;
    }
    if (isDone(e, 'preflight') && out?.hasUnits) hasUnits = true;
    if (isDone(e, 'closingAdmission')) {
      // Objects never disappear: once the host had something to move, it still has.
      if (hasUnits && !out!.hasUnits) return false;
      hasUnits ||= !!out!.hasUnits;
    }
    if (isDone(e, 'enteringRelocating')) inventory = hasUnits;
    // An empty inventory moves no unit: its batches end at once (nothing to hold, to fail or to start).
    if (before.startsWith('relocating.') && inventory === false && (e.type !== 'BATCH_DONE' || (e as { failure?: unknown }).failure !== undefined)) return false;
  }
  return true;
}

const currentBatch = (value: unknown): 1 | 2 | 3 | undefined => {
  const sub = (value as { relocating?: string }).relocating;
  return sub === 'batch1' ? 1 : sub === 'batch2' ? 2 : sub === 'batch3' ? 3 : undefined;
};

const generated = generatePaths(relocationSupervisorMachine, {
  input: { deadlineMs: DEADLINE_MS },
  cover: 'edges',
  events: (state) => {
    const batch = currentBatch(state.value) ?? 1;
    return [
      { type: done('preflight'), output: { kind: 'blocked', reason: RelocationReason.RelocationDisabled } },
      { type: done('preflight'), output: { kind: 'ready', hasUnits: true } },
      { type: done('preflight'), output: { kind: 'ready', hasUnits: false } },
      { type: done('awaitingTarget'), output: TARGET },
      { type: done('closingAdmission'), output: { hasUnits: true } },
      { type: done('closingAdmission'), output: { hasUnits: false } },
      { type: done('enteringRelocating'), output: { batch1: 2, batch2: 2, batch3: 2 } },
      { type: 'BATCH_DONE', batch },
      { type: 'BATCH_DONE', batch, failure: RelocationReason.RelocationFailed },
    ] as unknown as EventObject[];
  },
  // DEADLINE_REACHED is raised inside the machine by its own deadline (the `after` event), never sent to it.
  filterEvents: (_state, event) => event.type !== 'DEADLINE_REACHED',
  admissible,
});


const driver: Driver<SupervisorWorld> = {
  async setup(path) {
    const w = new SupervisorWorld();
    const events = path.events;
    const poolFailsAt = events.findIndex((e) => e.type === 'xstate.error.actor.pool');
    w.source = await w.host({
      nodeId: 'source',
      clock: w.clock,
      inspect: w.recorder.inspect,
      storeHooks: {
        ping: () => w.gate('ping').wait(),
        renew: () => (w.leaseLost ? false : undefined),
        list: () => (w.listFails ? Promise.reject(storeDown('descriptor list')) : undefined),
        claim: (request) => (request.object.id.startsWith('late-') ? w.gate('admission').wait() : undefined),
        publish: (d) => {
          if (d.state === FrameworkRuntimeState.Relocating) return w.gate('publish-relocating').wait();
          // The rollback (§13): back to Serving, or Draining when a Shutdown came meanwhile.
          if (w.phase === 'rollingBack') return w.gate('publish-rollback').wait();
          return undefined;
        },
      },
    });
    const first = events[0]!;
    if (isDone(first, 'preflight')) {
      const out = outputOf(first) as PreflightOutput;
      if (out.kind === 'blocked') await w.source.createActor('Pinned', 'pinned');
      else if (out.hasUnits) await w.addBatchObjects('');
    }
    // The defect behind error(pool): as the pool starts the first unit of the batch the path fails in, creating its
    // actor throws.
    const failBatch = poolFailsAt >= 0 ? currentBatch(path.steps[poolFailsAt - 1]!.snapshot.value) : undefined;
    let armed = false;
    w.recorder.onEvent = (event, isSubject) => {
      if (isSubject && event.type === '@xstate.microstep') {
        const value = (event.snapshot as unknown as { value: unknown }).value;
        w.phase = stateName(value);
        if (failBatch !== undefined && currentBatch(value) === failBatch) armed = true;
      }
      if (armed && event.type === '@xstate.actor' && (event.actorRef as unknown as { logic: { id?: string } }).logic.id === 'unitSource') {
        armed = false;
        throw new Error('injected: defect while the pool starts a unit');
      }
    };
    w.relocation = w.keep(w.source.relocate({ mode: PM, deadlineMs: DEADLINE_MS }));
    await until(() => w.gate('ping').reached > 0, 'preflight at its Store check');
    const seen = w.recorder.seen('preflight')?.surface;
    expect(seen?.diagnostics.operation?.phase).toBe('preflight');
    expect(seen?.status.state).toBe(FrameworkRuntimeState.Serving);
    return w;
  },

  async fire(w, path, index) {
    const e = path.events[index]!;
    const next = path.events[index + 1];
    const before = (index === 0 ? path.initial : path.steps[index - 1]!.snapshot).value;
    const name = eventName(e);
    const startLate = () => {
      // Creations the host accepts before it enters Relocating; their owner records wait in the Stores (§4).
      if (w.source.status.state !== FrameworkRuntimeState.Serving) return;
      w.late = [w.keep(w.source.createSpot('Shell', 'late-b1')), w.keep(w.source.createActor('Item', 'late-b2')), w.keep(w.source.createSpot('Group', 'late-b3'))];
    };
    if (isDone(e, 'preflight')) {
      if ((outputOf(e) as PreflightOutput).kind === 'ready' && !(outputOf(e) as { hasUnits: boolean }).hasUnits) startLate();
      return w.gate('ping').open();
    }
    if (name === 'error(preflight)') return w.gate('ping').fail(storeDown('ping'));
    if (isDone(e, 'awaitingTarget')) {
      if (next && next.type.includes('error.actor') && next.type.endsWith('closingAdmission')) {
        // The owner lease is found gone at the next renewal: the host goes to Error (§3) while it waits.
        w.leaseLost = true;
        w.clock.increment(Math.floor(MODEL_TIMING.leaseMs / 3) + 1);
        await until(() => w.source.status.state === FrameworkRuntimeState.Error, 'host in Error');
      } else startLate();
      w.target = await w.host({ nodeId: 'target', role: 'target' });
      return { onPoll: () => w.clock.increment(MODEL_TIMING.discoveryIntervalMs) };
    }
    if (name === 'error(awaitingTarget)') {
      w.listFails = true;
      return { onPoll: () => w.clock.increment(MODEL_TIMING.discoveryIntervalMs) };
    }
    if (isDone(e, 'closingAdmission')) {
      if (!w.late || w.gate('admission').decided) return; // a second pass: nothing holds it
      if ((outputOf(e) as { hasUnits: boolean }).hasUnits) {
        w.gate('admission').open();
        await Promise.all(w.late);
        w.holdBatchObjects('late-');
      } else w.gate('admission').fail(storeDown('owner record claim'));
      return;
    }
    if (isDone(e, 'enteringRelocating')) {
      for (let i = 0; i < 5; i++) await tick(); // the held turns of objects created just before have started
      return w.gate('publish-relocating').open();
    }
    if (name === 'error(enteringRelocating)') return w.gate('publish-relocating').fail(storeDown('Relocating descriptor publish'));
    if (isDone(e, 'rollingBack')) return w.gate('publish-rollback').open();
    if (name === 'error(rollingBack)') return w.leaseLost ? undefined : w.gate('publish-rollback').fail(storeDown('Serving descriptor publish'));
    if (e.type === 'BATCH_DONE') {
      const batch = currentBatch(before)!;
      if ((e as { failure?: number }).failure !== undefined) for (const id of w.objects[batch - 1]!) w.poisoned.add(id);
      return w.gate(`batch-${batch}`).open();
    }
    if (e.type === AFTER) return void w.clock.increment(DEADLINE_MS);
    if (e.type === 'SHUTDOWN_REQUESTED') {
      w.shutdownCalled = true;
      // Its own deadline is far beyond the Relocate deadline the path may still pass.
      w.keep(w.source.shutdown({ deadlineMs: 10 * DEADLINE_MS }));
      return;
    }
    return undefined; // error(closingAdmission), error(pool): prepared earlier
  },

  async check(w, path, index) {
    const value = path.steps[index]!.snapshot.value;
    const name = stateName(value);
    const events = path.events.slice(0, index + 1);
    const seen = w.recorder.seen(value)?.surface;
    const hostState = () =>
      events.some((e) => e.type === 'SHUTDOWN_REQUESTED')
        ? FrameworkRuntimeState.Draining
        : w.leaseLost
          ? FrameworkRuntimeState.Error
          : name === 'awaitingTarget' && !events.some((e) => isDone(e, 'closingAdmission'))
            ? FrameworkRuntimeState.Serving
            : FrameworkRuntimeState.Relocating;
    if (name !== 'relocated' && name !== 'blocked' && seen) {
      // The operation's phase in diagnostics() is the supervisor's state; the host's state follows §3.
      expect(seen.diagnostics.operation?.phase).toBe(statePath(value));
      expect(seen.status.state).toBe(hostState());
    }
    const batch = currentBatch(value);
    switch (name) {
      case 'awaitingTarget':
        expect(w.source.diagnostics().lastSelection).toBeDefined(); // the target search ran and found none yet
        break;
      case 'enteringRelocating': {
        // The inventory is fixed once, right before the host enters Relocating (§7).
        expect(w.source.diagnostics().lastInventory?.objects).toBe(w.objects.flat().length);
        break;
      }
      case 'relocating.batch1':
      case 'relocating.batch2':
      case 'relocating.batch3': {
        const held = w.objects[batch! - 1]!.length;
        if (path.events[index + 1]?.type !== 'xstate.error.actor.pool' && held > 0)
          // Its units wait for the safe point the test holds.
          await until(() => w.source.diagnostics().units.sourceByState.safePoint === held, `batch ${batch} units at their safe point`);
        // Earlier batches moved: the target owns their objects.
        for (const id of w.objects.slice(0, batch! - 1).flat()) await until(async () => (await w.source.locate(refOf(id)))?.nodeId === 'target', `${id} on the target`);
        break;
      }
      case 'relocated': {
        const relocated = { mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None };
        expect(await w.relocation).toEqual(relocated);
        expect(w.source.status).toMatchObject({ state: FrameworkRuntimeState.Relocated, lastRelocation: relocated });
        for (const id of w.objects.flat()) await until(async () => (await w.source.locate(refOf(id)))?.nodeId === 'target', `${id} on the target`);
        break;
      }
      case 'blocked': {
        const output = path.steps[index]!.snapshot.output as SupervisorOutput & { outcome: 'blocked' };
        const blocked = { mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Blocked, reason: output.reason };
        // The runtime's result is the machine's output.
        expect(await w.relocation).toEqual(blocked);
        expect(w.source.status.lastRelocation).toEqual(blocked);
        if (w.shutdownCalled) {
          expect([FrameworkRuntimeState.Draining, FrameworkRuntimeState.Stopped]).toContain(w.source.status.state);
          // A Draining host is never advertised as Serving again (§14 step 2), a rollback included.
          const descriptor = (await w.stores.descriptors.list()).find((d) => d.nodeId === 'source');
          if (descriptor) expect(descriptor.state).toBe(FrameworkRuntimeState.Draining);
        }
        else if (path.events.some((e) => eventName(e) === 'error(rollingBack)')) {
          // §13: a rollback that cannot be confirmed: no new work, bounded teardown, ForceStopped/TeardownFailed.
          await w.nudging(until(() => w.source.status.state === FrameworkRuntimeState.Stopped, 'bounded teardown'));
          expect(w.source.status.lastTermination).toEqual({ outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.TeardownFailed });
        } else {
          // Blocked keeps (or restores) Serving, admission open again (§13).
          expect(w.source.status.state).toBe(FrameworkRuntimeState.Serving);
          if (output.reason === RelocationReason.RelocationDisabled)
            expect(w.source.diagnostics().blockers).toContainEqual({ object: 'a:pinned', reason: 'RelocationDisabled' });
        }
        // What the batches before the blocking one moved is on the target; the rest never left the source.
        const moved = path.events.filter((e) => e.type === 'BATCH_DONE' && (e as { failure?: number }).failure === undefined).length;
        for (let b = 0; b < 3; b++)
          for (const id of w.objects[b]!) {
            const owner = b < moved ? 'target' : 'source';
            await until(async () => (await w.stores.location.get(idOf(id)))?.owner.nodeId === owner, `${id} owned by ${owner}`);
          }
        break;
      }
    }
  },
};

function refOf(id: string) {
  return id.endsWith('b2') ? { actor: id } : { spot: id };
}

function idOf(id: string) {
  return id.endsWith('b2') ? { kind: 'actor' as const, id } : { kind: 'spot' as const, id };
}

modelSuite(ID, relocationSupervisorMachine, generated, driver);

