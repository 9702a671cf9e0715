/**
 * Actor logic that runs a *flat* machine declaration — top-level states, string targets, named entry actions, final
 * states with an output — by table lookup, for actors that exist by the ten thousand (the relocation source's one
 * actor per unit, issue [6/10]).
 *
 * Why: xstate's interpreter is general (hierarchy, parallel regions, history, guards, eventless and delayed
 * transitions) and pays for it on every event of every actor: measured with `tools/bench/unit-machines.bench.ts`,
 * ~40–50 µs per unit for create + three transitions of the unit-source machine, and ~32 KB of garbage per unit in a
 * 10k `npm run bench` move (a heap sampling profile: xstate was 74% of the source's allocations during the move, and
 * its scavenges a fifth of the source's main thread). The same four steps over this table cost ~10 µs per unit, most
 * of it the `Actor` itself.
 *
 * What stays xstate's: the actor system (registration, parent and done event, inspection events) — the logic runs in
 * xstate's `Actor` or, where actors exist by the hundred thousand, in the runtime's FlatActor (runtime/flat-actor.ts)
 * — the declaration in machines/ (setup() + createMachine, provided implementations, xstate/graph model tests) and its
 * semantics: `flat-machine.test.ts` replays every simple path of the declarations it runs on both interpreters and
 * compares states, actions and outputs. A declaration outside the subset is refused when the logic is made (never
 * silently interpreted differently), so a machine that grows a guard or a nested state goes back to xstate's own
 * interpreter by choice, not by accident.
 *
 * The logic exposes the machine's `id`, `root` and `config`, so inspectors draw it like the machine it runs, and sends
 * the same inspection events as xstate, `@xstate.microstep` with the machine's own transition objects included (the
 * model-based tests read which transition was taken from it). That one goes through the system's
 * `_sendInspectionEvent`, which xstate's own interpreter uses and does not declare; without it no microstep is sent.
 */
import type { ActorLogic, ActorScope, AnyStateMachine, EventObject, Snapshot } from 'xstate';

/** A flat machine's snapshot: the state's name, and the final state's output once done. */
export type FlatSnapshot<TOutput> = Snapshot<TOutput> & { readonly value: string; readonly context: undefined };

export type FlatMachineLogic<TEvent extends EventObject, TOutput> = ActorLogic<FlatSnapshot<TOutput>, TEvent, undefined> & {
  readonly id: string;
  readonly root: AnyStateMachine['root'];
  readonly config: unknown;
};

type Exec = (args: unknown, params: unknown) => void;
type Mapper = (args: { context: undefined; event: EventObject; self: unknown }) => unknown;

interface Transition {
  readonly to: FlatState;
  /** The machine's own transition objects (what xstate reports in `@xstate.microstep`). */
  readonly taken: readonly unknown[];
}

interface FlatState {
  readonly name: string;
  /** The shared snapshot of an active state (no per-actor data: one object for every actor in this state). */
  readonly snapshot: FlatSnapshot<unknown> | undefined;
  readonly entry: readonly { readonly type: string; readonly exec: Exec | undefined }[];
  readonly on: ReadonlyMap<string, Transition>;
  /** Final states: their output (a value, or a function of the event that led there). */
  readonly final: { readonly output: unknown } | undefined;
}

const NOTHING_TAKEN: readonly unknown[] = Object.freeze([]);

/** xstate's inspection of one microstep (see the header): which transitions an event took, after their actions ran. */
function microstep(scope: { readonly system: unknown; readonly self: unknown }, event: EventObject, snapshot: unknown, taken: readonly unknown[]): void {
  // A FlatActor whose system has no observer (FlatActorOptions.inspected): nothing would receive it.
  if ((scope.self as { readonly inspected?: boolean }).inspected === false) return;
  const system = scope.system as { _sendInspectionEvent?: (event: object) => void };
  system._sendInspectionEvent?.({ type: '@xstate.microstep', actorRef: scope.self, event, snapshot, _transitions: taken });
}

function refuse(machine: AnyStateMachine, where: string, what: string): never {
  throw new Error(`flatMachineLogic(${machine.id}): ${where} uses ${what}; only top-level states, plain targets, named entry actions and final outputs are supported`);
}

/** The table for a machine's declaration; throws naming the first feature outside the flat subset. */
function compile(machine: AnyStateMachine): { initial: FlatState; states: ReadonlyMap<string, FlatState>; rootOutput: Mapper | undefined } {
  const root = machine.root;
  if (machine.config.context !== undefined) refuse(machine, 'the machine', 'context');
  if (root.entry.length || root.exit.length || Object.keys(root.on).length || root.after.length || root.always?.length || root.invoke.length)
    refuse(machine, 'the root', 'entry, exit, transitions, delays or invocations');
  const actions = (machine.implementations.actions ?? {}) as Record<string, Exec | undefined>;
  const table = new Map<string, { on: Map<string, Transition> } & FlatState>();
  for (const [name, node] of Object.entries(root.states)) {
    const where = `state '${name}'`;
    if (Object.keys(node.states).length) refuse(machine, where, 'child states');
    if (node.exit.length || node.after.length || node.always?.length || node.invoke.length || node.tags.length) refuse(machine, where, 'exit actions, delays, eventless transitions, invocations or tags');
    const entry = node.entry.map((action) => {
      const type = typeof action === 'string' ? action : undefined;
      if (type === undefined) refuse(machine, where, 'an entry action that is not a named action');
      return { type, exec: actions[type] };
    });
    const final = node.type === 'final' ? { output: node.output } : undefined;
    if (!final && node.type !== 'atomic') refuse(machine, where, `a state of type '${node.type}'`);
    const snapshot: FlatSnapshot<unknown> | undefined = final ? undefined : Object.freeze({ status: 'active' as const, value: name, output: undefined, error: undefined, context: undefined });
    table.set(name, { name, snapshot, entry, on: new Map(), final });
  }
  for (const [name, node] of Object.entries(root.states)) {
    const from = table.get(name)!;
    for (const [event, transitions] of Object.entries(node.on)) {
      const where = `state '${name}' on ${event}`;
      if (transitions.length !== 1) refuse(machine, where, 'several candidate transitions');
      const t = transitions[0]!;
      if (t.guard || t.actions.length || t.reenter || t.target?.length !== 1) refuse(machine, where, 'a guard, transition actions, a reentry or a targetless transition');
      const to = t.target[0]!;
      if (to.parent !== root) refuse(machine, where, 'a target outside the top level');
      if (event.includes('*') || event.startsWith('xstate.')) refuse(machine, where, 'a wildcard or built-in event');
      from.on.set(event, { to: table.get(to.key)!, taken: transitions });
    }
  }
  const initial = root.initial?.target[0];
  if (!initial) refuse(machine, 'the root', 'no initial state');
  return { initial: table.get(initial.key)!, states: table, rootOutput: root.output as Mapper | undefined };
}

/**
 * The actor logic of a flat machine (after `.provide(...)`: its implementations are the ones called). Use it with
 * `createActor(logic, { parent, id })` exactly where the machine would go, or in a FlatActor.
 */
export function flatMachineLogic<TEvent extends EventObject, TOutput>(machine: AnyStateMachine): FlatMachineLogic<TEvent, TOutput> {
  const { initial, states, rootOutput } = compile(machine);

  /** Enters `state` by `event`: its entry actions go through the actor's executor (deferred until start, inspected). */
  const enter = (state: FlatState, event: EventObject, scope: ActorScope<FlatSnapshot<TOutput>, TEvent>): FlatSnapshot<TOutput> => {
    const self = scope.self;
    for (const action of state.entry)
      scope.actionExecutor({ type: action.type, info: { context: undefined, event, self, system: scope.system } as never, params: undefined, exec: action.exec as never });
    if (!state.final) return state.snapshot as FlatSnapshot<TOutput>;
    // As xstate: the final state's output from the event that led there, then the root's from the done-state event.
    const declared = state.final.output;
    const output = typeof declared === 'function' ? (declared as Mapper)({ context: undefined, event, self }) : declared;
    const result = rootOutput ? rootOutput({ context: undefined, event: { type: `xstate.done.state.${machine.id}`, output } as EventObject, self }) : output;
    return { status: 'done' as const, value: state.name, output: result as TOutput, error: undefined, context: undefined };
  };

  return {
    id: machine.id,
    root: machine.root,
    config: machine.config,
    getInitialSnapshot: (scope) => enter(initial, { type: 'xstate.init' }, scope),
    transition: (snapshot, event, scope) => {
      if (event.type === 'xstate.stop') {
        // As xstate's macrostep: stopping is a step of its own that changes only the status.
        const stopped = { ...snapshot, status: 'stopped' as const, output: undefined, error: undefined };
        microstep(scope, event, stopped, NOTHING_TAKEN);
        return stopped;
      }
      if (snapshot.status !== 'active') return snapshot;
      const t = states.get(snapshot.value)!.on.get(event.type);
      const next = t ? enter(t.to, event, scope) : snapshot;
      // An event no state takes is still a (transition-less) microstep in xstate.
      microstep(scope, event, next, t ? t.taken : NOTHING_TAKEN);
      return next;
    },
    getPersistedSnapshot: (snapshot) => snapshot,
    restoreSnapshot: (persisted) => {
      const value = (persisted as { value?: unknown }).value;
      if (typeof value !== 'string' || !states.has(value)) throw new Error(`flatMachineLogic(${machine.id}): cannot restore a snapshot in state ${JSON.stringify(value)}`);
      return persisted as FlatSnapshot<TOutput>;
    },
  };
}
