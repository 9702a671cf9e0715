/**
 * A machine's structure for the page: its state tree and its transitions, read from the machine's own definition
 * (`machine.root`), so the drawing is whatever the machine declares — nothing here knows a particular machine.
 */
import type { DiagramEdge, DiagramState, MachineDiagram } from './types';

/** The parts of an xstate StateNode read here (structural, so no internal xstate type is needed). */
interface StateNodeLike {
  readonly id: string;
  readonly key: string;
  readonly type: DiagramState['type'];
  readonly states: Readonly<Record<string, StateNodeLike>>;
  readonly initial?: { readonly target?: readonly StateNodeLike[] };
  readonly invoke?: readonly { readonly src: unknown; readonly id?: string }[];
  readonly transitions: ReadonlyMap<string, readonly TransitionLike[]>;
  readonly always?: readonly TransitionLike[];
}

interface TransitionLike {
  readonly target?: readonly StateNodeLike[];
  readonly guard?: unknown;
}

/** A logic object that is a state machine: it has an id and a root state node. */
export function isMachineLogic(logic: unknown): logic is { id: string; root: StateNodeLike } {
  return typeof logic === 'object' && logic !== null && typeof (logic as { id?: unknown }).id === 'string' && typeof (logic as { root?: unknown }).root === 'object';
}

export function diagramOf(machine: { id: string; root: unknown }): MachineDiagram {
  const edges: DiagramEdge[] = [];
  const root = walk(machine.root as StateNodeLike, edges);
  return { machine: machine.id, root, edges };
}

function walk(node: StateNodeLike, edges: DiagramEdge[]): DiagramState {
  for (const [eventType, transitions] of node.transitions) for (const t of transitions) addEdges(node, t, eventLabel(eventType), edges);
  for (const t of node.always ?? []) addEdges(node, t, 'always', edges);
  const initial = node.initial?.target?.[0]?.id;
  return {
    id: node.id,
    key: node.key,
    type: node.type,
    ...(initial ? { initial } : {}),
    invoke: (node.invoke ?? []).map((i) => (typeof i.src === 'string' ? i.src : (i.id ?? 'actor'))),
    children: Object.values(node.states).map((child) => walk(child, edges)),
  };
}

function addEdges(node: StateNodeLike, t: TransitionLike, label: string, edges: DiagramEdge[]): void {
  const guard = guardName(t.guard);
  for (const target of t.target ?? []) {
    if (target.id === node.id) continue;
    edges.push({ source: node.id, target: target.id, label: guard ? `${label} [${guard}]` : label });
  }
}

/** Built-in event types shortened: the state they leave already names the actor or delay. */
export function eventLabel(eventType: string): string {
  if (eventType.startsWith('xstate.done.actor.')) return 'done';
  if (eventType.startsWith('xstate.error.actor.')) return 'error';
  if (eventType.startsWith('xstate.done.state.')) return 'done';
  if (eventType.startsWith('xstate.after.')) return `after ${eventType.split('.')[2] ?? ''}`.trim();
  return eventType;
}

function guardName(guard: unknown): string | undefined {
  if (guard === undefined) return undefined;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'object' && guard !== null && typeof (guard as { type?: unknown }).type === 'string') return (guard as { type: string }).type;
  return 'guard';
}
