import { createActor, getNextSnapshot, getInitialSnapshot } from 'xstate';
import { getShortestPaths, getSimplePaths } from 'xstate/graph';
import { hostLifecycleMachine, type HostLifecycleEvent, type HostLifecycleStateName } from './host-lifecycle.machine';
import { FrameworkRuntimeState } from '../vocabulary';

const STATES: readonly HostLifecycleStateName[] = ['Preparing', 'Serving', 'Relocating', 'Relocated', 'Draining', 'Stopped', 'Error'];
const EVENTS: readonly HostLifecycleEvent[] = [
  { type: 'COMPONENTS_READY' },
  { type: 'STARTUP_FAILED' },
  { type: 'RELOCATE_INTENT_PUBLISHED' },
  { type: 'SHUTDOWN_SEALED' },
  { type: 'RUNTIME_ERROR' },
  { type: 'SOURCE_RESTORED' },
  { type: 'ALL_UNITS_DETACHED' },
  { type: 'CLEANUP_COMPLETE' },
];

/** The §3 stateDiagram, edge by edge: state → event → next state. Anything absent is not accepted. */
const DIAGRAM: Record<HostLifecycleStateName, Partial<Record<HostLifecycleEvent['type'], HostLifecycleStateName>>> = {
  Preparing: { COMPONENTS_READY: 'Serving', STARTUP_FAILED: 'Error' },
  Serving: { RELOCATE_INTENT_PUBLISHED: 'Relocating', SHUTDOWN_SEALED: 'Draining', RUNTIME_ERROR: 'Error' },
  Relocating: { SOURCE_RESTORED: 'Serving', ALL_UNITS_DETACHED: 'Relocated', SHUTDOWN_SEALED: 'Draining' },
  Relocated: { SHUTDOWN_SEALED: 'Draining' },
  Error: { SHUTDOWN_SEALED: 'Draining' },
  Draining: { CLEANUP_COMPLETE: 'Stopped' },
  Stopped: {},
};

const stateOf = (snapshot: { value: unknown }) => snapshot.value as HostLifecycleStateName;
/** Event types of a graph path, without the synthetic `xstate.init` first step. */
const eventsOf = (path: { steps: { event: { type: string } }[] }) => path.steps.map((s) => s.event.type).filter((t) => t !== 'xstate.init');

/** A resolved snapshot in `state` (the machine is flat, so resolveState is enough). */
const snapshotIn = (state: HostLifecycleStateName) => hostLifecycleMachine.resolveState({ value: state, context: {} });

test('the machine has exactly the seven §3 states, starts in Preparing and only Stopped is final', () => {
  expect(Object.keys(hostLifecycleMachine.states).sort()).toEqual([...STATES].sort());
  expect(stateOf(getInitialSnapshot(hostLifecycleMachine))).toBe('Preparing');
  for (const state of STATES) expect(hostLifecycleMachine.states[state]!.type === 'final').toBe(state === 'Stopped');
  // Each state name is a §3 FrameworkRuntimeState wire name.
  expect(Object.keys(FrameworkRuntimeState).sort()).toEqual([...STATES].sort());
});

describe.each(STATES)('from %s', (state) => {
  test.each(EVENTS.map((event) => [event.type, event] as const))('%s', (_type, event) => {
    const snapshot = snapshotIn(state);
    const expected = DIAGRAM[state][event.type];
    expect(snapshot.can(event)).toBe(expected !== undefined);
    const next = getNextSnapshot(hostLifecycleMachine, snapshot, event);
    expect(stateOf(next)).toBe(expected ?? state);
  });
});

test('the machine declares no transition the diagram lacks (11 edges in all)', () => {
  const declared: string[] = [];
  for (const state of STATES)
    for (const [type, transitions] of hostLifecycleMachine.states[state]!.transitions)
      for (const t of transitions) declared.push(`${state} -${type}-> ${t.target?.map((n) => n.key).join(',') ?? '(self)'}`);
  const expected = STATES.flatMap((state) => Object.entries(DIAGRAM[state]).map(([type, to]) => `${state} -${type}-> ${to}`));
  expect(declared.sort()).toEqual(expected.sort());
  expect(expected).toHaveLength(11);
});

test('every state is reachable from Preparing (shortest paths) and Stopped accepts nothing and is done', () => {
  const paths = getShortestPaths(hostLifecycleMachine, { events: EVENTS });
  const reached = new Map(paths.map((p) => [stateOf(p.state), eventsOf(p)]));
  expect([...reached.keys()].sort()).toEqual([...STATES].sort());
  expect(reached.get('Relocated')).toEqual(['COMPONENTS_READY', 'RELOCATE_INTENT_PUBLISHED', 'ALL_UNITS_DETACHED']);
  expect(reached.get('Stopped')).toEqual(['COMPONENTS_READY', 'SHUTDOWN_SEALED', 'CLEANUP_COMPLETE']);

  const stopped = paths.find((p) => stateOf(p.state) === 'Stopped')!.state;
  expect(stopped.status).toBe('done');
  for (const event of EVENTS) expect(stopped.can(event)).toBe(false);
});

test('every simple path that reaches Stopped goes through Draining last; Stopped is the only dead end', () => {
  const paths = getSimplePaths(hostLifecycleMachine, { events: EVENTS });
  const toStopped = paths.filter((p) => stateOf(p.state) === 'Stopped');
  // Serving, Serving→Relocating, Serving→Relocating→Relocated, Serving→Error and Preparing→Error, each then
  // Draining→Stopped (the Relocating→Serving loop revisits Serving, so a simple path never takes it).
  expect(toStopped.map((p) => eventsOf(p).join(' ')).sort()).toEqual(
    [
      'COMPONENTS_READY SHUTDOWN_SEALED CLEANUP_COMPLETE',
      'COMPONENTS_READY RELOCATE_INTENT_PUBLISHED SHUTDOWN_SEALED CLEANUP_COMPLETE',
      'COMPONENTS_READY RELOCATE_INTENT_PUBLISHED ALL_UNITS_DETACHED SHUTDOWN_SEALED CLEANUP_COMPLETE',
      'COMPONENTS_READY RUNTIME_ERROR SHUTDOWN_SEALED CLEANUP_COMPLETE',
      'STARTUP_FAILED SHUTDOWN_SEALED CLEANUP_COMPLETE',
    ].sort(),
  );
  for (const p of toStopped) {
    const types = eventsOf(p);
    expect(types.slice(-2)).toEqual(['SHUTDOWN_SEALED', 'CLEANUP_COMPLETE']);
    expect(p.state.status).toBe('done');
  }
  for (const p of paths) {
    const accepts = EVENTS.some((e) => p.state.can(e));
    expect(accepts).toBe(stateOf(p.state) !== 'Stopped');
  }
});

test('a running actor follows a relocation round trip and ends done in Stopped', () => {
  const actor = createActor(hostLifecycleMachine).start();
  const seen: string[] = [];
  actor.subscribe((s) => seen.push(stateOf(s)));
  for (const type of ['COMPONENTS_READY', 'RELOCATE_INTENT_PUBLISHED', 'SOURCE_RESTORED', 'RELOCATE_INTENT_PUBLISHED', 'ALL_UNITS_DETACHED', 'SHUTDOWN_SEALED', 'CLEANUP_COMPLETE'] as const)
    actor.send({ type });
  expect(seen).toEqual(['Serving', 'Relocating', 'Serving', 'Relocating', 'Relocated', 'Draining', 'Stopped']);
  expect(actor.getSnapshot().status).toBe('done');
});
