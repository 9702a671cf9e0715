/**
 * The model side of the model-based tests: what a machine declares (every state node and every transition,
 * eventless, delayed, invoke done/error ones included), which of those a sequence of events takes (replayed on
 * the pure machine with xstate's own macrostep), the paths generated from the machine with xstate/graph, and the
 * coverage report every model test file prints and asserts.
 *
 * A transition is named by its source state node, its event type and its index among that node's transitions for
 * the event (guarded branches are separate transitions). The name is the same on a machine and on its
 * `.provide(...)` copy (the runtime's), so what the real runtime takes (its inspection `@xstate.microstep`
 * events) compares with what the model takes.
 */
import { createEmptyActor, type AnyActorScope, type AnyMachineSnapshot, type AnyStateMachine, type EventObject, type InspectionEvent } from 'xstate';
import { getShortestPaths, getSimplePaths, type StatePath } from 'xstate/graph';

/** What an inspection `@xstate.microstep` event carries (`_transitions` is not in xstate's public type). */
export interface MicrostepEvent {
  readonly type: '@xstate.microstep';
  readonly event: EventObject;
  readonly snapshot: AnyMachineSnapshot;
  readonly _transitions: readonly TransitionDef[];
}

interface StateNodeLike {
  readonly id: string;
  readonly key: string;
  readonly states: Record<string, StateNodeLike>;
  readonly transitions: Map<string, TransitionDef[]>;
  readonly always?: TransitionDef[];
}

export interface TransitionDef {
  readonly source: StateNodeLike;
  readonly eventType: string;
  readonly target?: readonly StateNodeLike[];
}

export function isMicrostep(event: InspectionEvent): event is InspectionEvent & MicrostepEvent {
  return event.type === '@xstate.microstep';
}

/** `source#event#index`; eventless transitions have the event `always`. */
export function transitionKey(t: TransitionDef): string {
  const always = t.source.always ?? [];
  const i = always.indexOf(t);
  if (i >= 0) return `${t.source.id}#always#${i}`;
  const list = t.source.transitions.get(t.eventType) ?? [];
  return `${t.source.id}#${t.eventType}#${list.indexOf(t)}`;
}

/** A readable name: `preflight --xstate.done.actor…preflight[1]--> awaitingTarget`. */
export function describeTransition(key: string, machine: AnyStateMachine): string {
  const [source, event, index] = key.split('#') as [string, string, string];
  const node = machine.getStateNodeById(source) as unknown as StateNodeLike;
  const t = event === 'always' ? node.always![Number(index)]! : node.transitions.get(event)![Number(index)]!;
  const to = t.target?.map((n) => n.id).join(',') ?? '(stays)';
  return `${source} --${event}[${index}]--> ${to}`;
}

function nodesOf(node: StateNodeLike, out: StateNodeLike[] = []): StateNodeLike[] {
  out.push(node);
  for (const child of Object.values(node.states)) nodesOf(child, out);
  return out;
}

/** Every state node id (the root excluded: it is always active). */
export function allStates(machine: AnyStateMachine): string[] {
  return nodesOf(machine.root as unknown as StateNodeLike)
    .slice(1)
    .map((n) => n.id);
}

/** Every transition the machine declares, by key. */
export function allTransitions(machine: AnyStateMachine): string[] {
  const keys: string[] = [];
  for (const node of nodesOf(machine.root as unknown as StateNodeLike)) {
    for (const list of node.transitions.values()) for (const t of list) keys.push(transitionKey(t));
    for (const t of node.always ?? []) keys.push(transitionKey(t));
  }
  return keys;
}

/** The state node ids a snapshot is in (the root excluded). */
export function stateIds(snapshot: AnyMachineSnapshot): string[] {
  return (snapshot._nodes as unknown as StateNodeLike[]).filter((n) => n.id !== snapshot.machine.root.id).map((n) => n.id);
}

/**
 * An actor scope like xstate/graph's mock one (invoked actors are created, never started), except that it records
 * the microsteps the machine's own macrostep reports.
 */
function recordingScope(record: (step: MicrostepEvent) => void): AnyActorScope {
  const empty = createEmptyActor();
  const system = Object.create(empty.system) as typeof empty.system & { _sendInspectionEvent: (e: InspectionEvent) => void };
  system._sendInspectionEvent = (e: InspectionEvent) => {
    if (isMicrostep(e)) record(e);
  };
  return {
    self: empty,
    logger: () => undefined,
    id: '',
    sessionId: 'model',
    defer: () => undefined,
    system,
    stopChild: () => undefined,
    emit: () => undefined,
    actionExecutor: () => undefined,
  } as unknown as AnyActorScope;
}

/** One event of a path and what the machine does with it. */
export interface ModelStep {
  readonly event: EventObject;
  /** Transitions taken, in order (raised and eventless ones included). */
  readonly transitions: readonly string[];
  /** State node ids entered or kept along the way (every microstep's snapshot). */
  readonly states: readonly string[];
  /** The snapshot after the step. */
  readonly snapshot: AnyMachineSnapshot;
}

export interface ModelPath {
  readonly name: string;
  readonly initial: AnyMachineSnapshot;
  readonly steps: readonly ModelStep[];
  /** The events, in order. */
  readonly events: readonly EventObject[];
}

/** Replays events on the pure machine (no actor, no side effect) and records what each one takes. */
export function replay(machine: AnyStateMachine, events: readonly EventObject[], input?: unknown, from?: AnyMachineSnapshot): ModelPath {
  let micro: MicrostepEvent[] = [];
  const scope = recordingScope((step) => micro.push(step));
  const initial = from ?? (machine.getInitialSnapshot(scope, input) as AnyMachineSnapshot);
  let snapshot = initial;
  const steps: ModelStep[] = [];
  for (const event of events) {
    micro = [];
    snapshot = machine.transition(snapshot, event, scope) as AnyMachineSnapshot;
    steps.push({
      event,
      transitions: micro.flatMap((m) => m._transitions.map(transitionKey)),
      states: [...new Set(micro.flatMap((m) => stateIds(m.snapshot)))],
      snapshot,
    });
  }
  return { name: events.map(eventName).join(' → ') || '(initial)', initial, steps, events };
}

/** A short event name for test titles: `done(preflight)`, `error(pool)`, `after(relocationDeadline)`. */
export function eventName(event: EventObject): string {
  const t = event.type;
  const m = /^xstate\.(done|error)\.actor\.(?:\d+\.)?(?:.*\.)?([^.]+)$/.exec(t);
  const name = m ? `${m[1]}(${m[2]})` : t.startsWith('xstate.after.') ? `after(${t.split('.')[2]})` : t;
  // Data that picks a branch (guards) or names a result; other outputs (a target, counts) are left out.
  const data = { ...event, ...((event as { output?: object }).output ?? {}) } as Record<string, unknown>;
  const shown = ['kind', 'hasUnits', 'batch', 'failure', 'reason'].filter((k) => data[k] !== undefined).map((k) => `${k}=${String(data[k])}`);
  return shown.length ? `${name}{${shown.join(',')}}` : name;
}

export interface GenerateOptions<TEvent extends EventObject> {
  /** Concrete events (with outputs) offered in a state; xstate/graph adds `{ type }` for every other handled event. */
  events: (state: AnyMachineSnapshot) => readonly TEvent[];
  /** Events never offered (e.g. an internal event the runtime only raises from inside the machine). */
  filterEvents?: (state: AnyMachineSnapshot, event: EventObject) => boolean;
  input?: unknown;
  /**
   * Whether the real runtime can produce this sequence of events (each rule says why not, in the test file). A
   * generated path that is not admissible is dropped, and the transitions it would have covered must come from
   * another generated path.
   */
  admissible?: (path: ModelPath) => boolean;
  /** getSimplePaths to final states is also used as a source of candidates. @default true */
  simplePaths?: boolean;
  /** Every admissible candidate, not only a covering set (small machines: each way through is run). @default false */
  all?: boolean;
  /**
   * What the chosen set must cover besides every transition: `edges` also takes every event in every state value
   * it is taken in (a deadline while each step is running, not only in one). @default 'transitions'
   */
  cover?: 'transitions' | 'edges';
}

const isDone = (s: AnyMachineSnapshot) => s.status === 'done';

/**
 * Generates paths from the machine with xstate/graph that together take every transition:
 *  - candidates: every simple path to a final state (getSimplePaths), and for every edge of the state graph the
 *    shortest path to its source state + the edge + the shortest path on to a final state (getShortestPaths), so
 *    cycles (a host going back to Serving) are covered too;
 *  - the admissible candidates are picked greedily, most not-yet-covered transitions first, shortest first.
 * Every chosen path ends in a final state. Transitions no admissible candidate takes are returned as `missing`.
 */
export function generatePaths<TEvent extends EventObject>(machine: AnyStateMachine, options: GenerateOptions<TEvent>) {
  /** The given events, and `{ type }` for every other event the state handles (as xstate/graph's default does). */
  const events = (state: AnyMachineSnapshot): EventObject[] => {
    const given: EventObject[] = [...options.events(state)];
    for (const type of new Set(state._nodes.flatMap((n) => [...(n as unknown as StateNodeLike).transitions.keys()])))
      if (!given.some((e) => e.type === type)) given.push({ type });
    return given.filter((e) => state._nodes.some((n) => (n as unknown as StateNodeLike).transitions.has(e.type)));
  };
  const traversal = {
    events: events as never,
    ...(options.filterEvents ? { filterEvents: options.filterEvents as never } : {}),
    ...(options.input !== undefined ? { input: options.input as never } : {}),
  };
  const eventsOf = (p: StatePath<AnyMachineSnapshot, EventObject>) => p.steps.map((s) => s.event).filter((e) => e.type !== 'xstate.init');
  const candidates = new Map<string, readonly EventObject[]>();
  const add = (events: readonly EventObject[]) => {
    const path = replay(machine, events, options.input);
    if (path.steps.length === 0 || !isDone(path.steps[path.steps.length - 1]!.snapshot)) return;
    if (options.admissible && !options.admissible(path)) return;
    candidates.set(JSON.stringify(events), events);
  };
  if (options.simplePaths !== false)
    for (const p of getSimplePaths(machine, { ...traversal, toState: isDone } as never) as StatePath<AnyMachineSnapshot, EventObject>[]) add(eventsOf(p));
  const toEvery = getShortestPaths(machine, traversal as never) as StatePath<AnyMachineSnapshot, EventObject>[];
  const completion = new Map<string, readonly EventObject[] | undefined>();
  const complete = (state: AnyMachineSnapshot): readonly EventObject[] | undefined => {
    const key = JSON.stringify({ value: state.value, context: state.context });
    if (!completion.has(key)) {
      if (isDone(state)) completion.set(key, []);
      else {
        const onward = (getShortestPaths(machine, { ...traversal, fromState: state } as never) as StatePath<AnyMachineSnapshot, EventObject>[])
          .filter((p) => isDone(p.state))
          .map(eventsOf)
          .sort((a, b) => a.length - b.length);
        completion.set(key, onward[0]);
      }
    }
    return completion.get(key);
  };
  for (const prefix of toEvery) {
    const head = eventsOf(prefix);
    if (isDone(prefix.state)) continue;
    for (const event of events(prefix.state)) {
      if (options.filterEvents && !options.filterEvents(prefix.state, event)) continue;
      let next: AnyMachineSnapshot;
      try {
        next = machine.transition(prefix.state, event, recordingScope(() => undefined)) as AnyMachineSnapshot;
      } catch {
        continue; // an event this state does not take with these data (a guard needs an output)
      }
      const tail = complete(next);
      if (tail) add([...head, event, ...tail]);
    }
  }

  const all = allTransitions(machine);
  const covered = new Set<string>();
  const chosen: ModelPath[] = [];
  const scored = [...candidates.values()]
    .map((events) => {
      const path = replay(machine, events, options.input);
      const keys = new Set(path.steps.flatMap((s) => s.transitions));
      if (options.cover === 'edges')
        path.steps.forEach((s, i) => keys.add(`edge:${JSON.stringify((i === 0 ? path.initial : path.steps[i - 1]!.snapshot).value)}|${s.event.type}`));
      return { path, keys };
    })
    .sort((a, b) => a.path.steps.length - b.path.steps.length || a.path.name.localeCompare(b.path.name));
  if (options.all) {
    for (const c of scored) {
      chosen.push(c.path);
      for (const k of c.keys) covered.add(k);
    }
    return { paths: chosen, missing: all.filter((k) => !covered.has(k)), candidates: candidates.size };
  }
  for (;;) {
    let best: (typeof scored)[number] | undefined;
    let bestGain = 0;
    for (const c of scored) {
      let gain = 0;
      for (const k of c.keys) if (!covered.has(k)) gain++;
      if (gain > bestGain || (gain === bestGain && gain > 0 && best && c.path.steps.length < best.path.steps.length)) {
        best = c;
        bestGain = gain;
      }
    }
    if (!best) break;
    chosen.push(best.path);
    for (const k of best.keys) covered.add(k);
  }
  return { paths: chosen, missing: all.filter((k) => !covered.has(k)), candidates: candidates.size };
}

/** What the paths that ran (and passed) covered of one machine. */
export class Coverage {
  private readonly states = new Set<string>();
  private readonly transitions = new Set<string>();
  readonly allStates: string[];
  readonly allTransitions: string[];

  constructor(
    readonly name: string,
    readonly machine: AnyStateMachine,
  ) {
    this.allStates = allStates(machine);
    this.allTransitions = allTransitions(machine);
  }

  /** Counts a path whose every step the real runtime was seen to take. */
  add(path: ModelPath): void {
    for (const id of stateIds(path.initial)) this.states.add(id);
    for (const step of path.steps) {
      for (const id of step.states) this.states.add(id);
      for (const key of step.transitions) this.transitions.add(key);
    }
  }

  get missingStates(): string[] {
    return this.allStates.filter((s) => !this.states.has(s));
  }

  get missingTransitions(): string[] {
    return this.allTransitions.filter((t) => !this.transitions.has(t));
  }

  /** `model <machine>: states N/N, transitions M/M (100%)` */
  line(): string {
    const s = this.allStates.length - this.missingStates.length;
    const t = this.allTransitions.length - this.missingTransitions.length;
    const pct = Math.floor((100 * (s + t)) / (this.allStates.length + this.allTransitions.length));
    return `model ${this.name}: states ${s}/${this.allStates.length}, transitions ${t}/${this.allTransitions.length} (${pct}%)`;
  }
}
