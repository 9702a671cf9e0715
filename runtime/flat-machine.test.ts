import { assign, createActor, createMachine, fromCallback, setup, type AnyActorLogic, type AnyActorRef, type AnyStateMachine, type InspectionEvent } from 'xstate';
import { getSimplePaths } from 'xstate/graph';
import { unitSourceMachine, type UnitSourceEvent } from '../machines/unit-source.machine';
import { unitTargetMachine, type UnitTargetEvent } from '../machines/unit-target.machine';
import { RelocationReason } from '../vocabulary';
import { FlatActor } from './flat-actor';
import { flatMachineLogic, type FlatMachineLogic } from './flat-machine';

/** How the unit's actor is made: xstate's `Actor`, or the runtime's FlatActor (flat logic only). */
type MakeActor = (logic: AnyActorLogic, parent: AnyActorRef) => Pick<AnyActorRef, 'start' | 'send' | 'getSnapshot' | 'subscribe'>;
const xstateActor: MakeActor = (logic, parent) => createActor(logic, { parent, id: 'u1' });
const flatActor: MakeActor = (logic, parent) => new FlatActor(logic as FlatMachineLogic<{ type: string }, unknown>, { parent, id: 'u1' });

/** Every event the machine declares (a new one is covered without touching this test); FAILED carries a reason. */
const SOURCE_EVENTS = unitSourceMachine.events.map((type) => (type === 'FAILED' ? { type, reason: RelocationReason.StateIncompatible } : { type })) as UnitSourceEvent[];

const TARGET_EVENTS = unitTargetMachine.events.map((type) => ({ type })) as UnitTargetEvent[];

/** Runs `events` on an actor of `logic` (a child of a parent that records what it receives); everything observable. */
function run(logic: AnyActorLogic, events: readonly { type: string }[], make: MakeActor = xstateActor) {
  const trace: string[] = [];
  const toParent: unknown[] = [];
  const inspected: string[] = [];
  const parent = createActor(fromCallback(({ receive }) => receive((e) => void toParent.push(e))), {
    inspect: (e: InspectionEvent) => {
      // The unit's own events, and what reaches the parent from it (its done event, as the relay inspects it).
      if ((e.actorRef as { id?: string }).id !== 'u1') {
        if (e.type === '@xstate.event' && (e.sourceRef as { id?: string } | undefined)?.id === 'u1') inspected.push(`to parent ${e.event.type}`);
        return;
      }
      if (e.type === '@xstate.microstep') inspected.push(`microstep ${e.event.type} taking ${(e as unknown as { _transitions: { eventType: string; target?: { key: string }[] }[] })._transitions.map((t) => `${t.eventType}→${t.target?.[0]?.key}`).join(',')}`);
      else if (e.type === '@xstate.action') inspected.push(`action ${e.action.type}`);
      else if (e.type === '@xstate.snapshot') inspected.push(`snapshot ${(e.snapshot as { value?: string }).value} ${e.snapshot.status} after ${e.event.type}`);
      else inspected.push(`${e.type}${e.type === '@xstate.event' ? ` ${e.event.type}` : ''}`);
    },
  }).start();
  const actor = make(logic, parent);
  actor.subscribe({ next: (s) => trace.push(`${(s as { value: string }).value}/${s.status}`), complete: () => trace.push('complete') });
  actor.start();
  for (const event of events) actor.send(event);
  const snapshot = actor.getSnapshot() as { value: string; status: string; output: unknown };
  return { trace, toParent, inspected, value: snapshot.value, status: snapshot.status, output: snapshot.output };
}

/** The machine with every action recording its name and the event it ran for into `log`. */
function recording(machine: AnyStateMachine, log: string[]): AnyStateMachine {
  const names = Object.keys(machine.implementations.actions);
  const actions = Object.fromEntries(names.map((name) => [name, ({ event, self }: { event: { type: string }; self: { id: string } }) => void log.push(`${name} on ${event.type} by ${self.id}`)]));
  return machine.provide({ actions });
}

/**
 * A simple path's events, then `after`, on xstate's interpreter and on flatMachineLogic — in xstate's `Actor` and in
 * the runtime's FlatActor: everything observable equal, inspection events included.
 */
function expectSameRun(machine: AnyStateMachine, path: { steps: readonly { event: unknown }[] }, after: readonly { type: string }[]): void {
  const events = path.steps.map((s) => s.event as { type: string }).filter((e) => e.type !== 'xstate.init');
  const probe = [...events, ...after];
  const xLog: string[] = [];
  const fLog: string[] = [];
  const aLog: string[] = [];
  const x = run(recording(machine, xLog), probe);
  const f = run(flatMachineLogic(recording(machine, fLog)), probe);
  const a = run(flatMachineLogic(recording(machine, aLog)), probe, flatActor);
  expect({ ...f, log: fLog }).toEqual({ ...x, log: xLog });
  expect({ ...a, log: aLog }).toEqual({ ...x, log: xLog });
}

describe('flatMachineLogic runs the unit-source declaration as xstate does', () => {
  const paths = getSimplePaths(unitSourceMachine, { events: SOURCE_EVENTS });

  test('every simple path: same states, actions (event and self), outputs, done event to the parent and inspection events, in either actor', () => {
    expect(paths.length).toBeGreaterThan(9);
    // Events no state takes are sent too: both must ignore them the same way.
    for (const path of paths) expectSameRun(unitSourceMachine, path, [{ type: 'STOP' }, { type: 'FOLLOW_EXPIRED' }]);
  });

  test('stopping an actor: same snapshot status and inspection as xstate', () => {
    const stop = (logic: AnyActorLogic) => {
      const seen: string[] = [];
      const actor = createActor(logic, { inspect: (e) => void seen.push(e.type === '@xstate.snapshot' ? `snapshot ${e.snapshot.status}` : e.type) }).start();
      actor.send({ type: 'SAFE_POINT' });
      actor.stop();
      const { status, value } = actor.getSnapshot() as { status: string; value: string };
      return { status, value, seen };
    };
    const x = stop(unitSourceMachine);
    expect(x.status).toBe('stopped');
    expect(stop(flatMachineLogic(unitSourceMachine))).toEqual(x);
  });

  test('a persisted snapshot restores into its state; one naming no state of the machine is refused', () => {
    const logic = flatMachineLogic(unitSourceMachine);
    const a = createActor(logic).start();
    a.send({ type: 'SAFE_POINT' });
    const restored = createActor(logic, { snapshot: a.getPersistedSnapshot() }).start();
    expect(restored.getSnapshot().value).toBe('sealed');
    restored.send({ type: 'RELAY_READY' });
    expect(restored.getSnapshot().value).toBe('following');
    const broken = createActor(logic, { snapshot: { status: 'active', value: 'nowhere', output: undefined, error: undefined, context: undefined } as never });
    expect(broken.getSnapshot().status).toBe('error');
  });

  test('the logic carries the machine id and root, so inspectors draw it as the machine', () => {
    const logic = flatMachineLogic(unitSourceMachine);
    expect(logic.id).toBe('unitSource');
    expect(logic.root).toBe(unitSourceMachine.root);
  });

  test('active snapshots are shared per state: a transition allocates nothing per actor', () => {
    const logic = flatMachineLogic(unitSourceMachine);
    const a = createActor(logic).start();
    const b = createActor(logic).start();
    a.send({ type: 'SAFE_POINT' });
    b.send({ type: 'SAFE_POINT' });
    expect(a.getSnapshot()).toBe(b.getSnapshot());
    expect(a.getSnapshot().value).toBe('sealed');
  });
});

describe('flatMachineLogic runs the unit-target declaration as xstate does', () => {
  const paths = getSimplePaths(unitTargetMachine, { events: TARGET_EVENTS });

  test('every simple path: same states, actions, outputs (fellBack from the final state), done event and inspection', () => {
    // relay-ready itself, each committing state, and four finals: CUTOVER | fallback × COMMITTED | COMMIT_FAILED.
    expect(paths.length).toBe(7);
    for (const path of paths) expectSameRun(unitTargetMachine, path, [{ type: 'CUTOVER' }, { type: 'CUTOVER_WAIT_ENDED' }, { type: 'COMMITTED' }]);
  });
});

describe('flatMachineLogic refuses what it would not interpret as xstate does', () => {
  const refuse = (machine: AnyStateMachine, what: RegExp) => expect(() => flatMachineLogic(machine)).toThrow(what);

  test('context and assign', () =>
    refuse(
      setup({ types: { context: {} as { n: number } }, actions: { count: assign({ n: ({ context }) => context.n + 1 }) } }).createMachine({
        id: 'c',
        context: { n: 0 },
        initial: 'a',
        states: { a: { on: { GO: { target: 'b', actions: 'count' } } }, b: {} },
      }),
      /context/,
    ));

  test('guards', () =>
    refuse(
      setup({ guards: { ok: () => true } }).createMachine({ id: 'g', initial: 'a', states: { a: { on: { GO: { target: 'b', guard: 'ok' } } }, b: {} } }),
      /state 'a' on GO uses a guard/,
    ));

  test('child states', () => refuse(createMachine({ id: 'n', initial: 'a', states: { a: { initial: 'x', states: { x: {} } } } }), /state 'a' uses child states/));

  test('delayed transitions', () => refuse(createMachine({ id: 'd', initial: 'a', states: { a: { after: { 10: 'b' } }, b: {} } }), /state 'a' uses exit actions, delays/));

  test('transition actions', () =>
    refuse(
      setup({ actions: { note: () => {} } }).createMachine({ id: 't', initial: 'a', states: { a: { on: { GO: { target: 'b', actions: 'note' } } }, b: {} } }),
      /transition actions/,
    ));

  test('inline entry actions', () => refuse(createMachine({ id: 'i', initial: 'a', states: { a: { entry: () => {} } } }), /not a named action/));

  test('root transitions', () => refuse(createMachine({ id: 'r', initial: 'a', on: { GO: '.a' }, states: { a: {} } }), /the root uses/));
});
