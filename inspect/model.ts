/**
 * The inspector's aggregate of what the hosts' machines do: fed by xstate inspection events (tagged with the host's
 * nodeId, runtime/inspection.ts) and, for watched hosts, by the unit-event stream (S0–S4).
 *
 * Bounded whatever the workload: each event costs O(1) (a WeakMap lookup and two counter updates); the model keeps,
 * per node and machine id, counts by state, the most recent actor (the one-per-host machines: lifecycle, the current
 * relocation supervisor, shutdown) and a sample of at most `sampleSize` actors; and a sample of relocation units.
 * `view()` builds the JSON the page shows; the server calls it at most `maxUpdatesPerSecond` times a second, and
 * only while something changed.
 *
 * Generic on purpose: actors are grouped by their machine's id and counted by state path; nothing here knows which
 * machines exist or what their states mean (the page only picks the host lifecycle, supervisor and shutdown panels by id).
 */
import type { InspectionEvent } from 'xstate';
import { diagramOf, isMachineLogic } from './diagram';
import type { ActorSample, InspectorView, MachineDiagram, MachineView, NodeView, UnitSample } from './types';

/** A unit event as the runtime emits it (runtime/relocation/events.ts); read structurally. */
export interface UnitEventLike {
  readonly side: 'source' | 'target';
  readonly unit: string;
  readonly kind: string;
  readonly batch?: number;
  readonly state: string;
  readonly point?: 'S0' | 'S1' | 'S2' | 'S3' | 'S4';
  readonly at: number;
}

export interface ModelOptions {
  /** Individual actors followed per node and machine, and relocation units sampled. @default 8 */
  sampleSize?: number;
  /** Called once per machine id, the first time an actor of it is seen. */
  onDiagram?: (diagram: MachineDiagram) => void;
}

/**
 * Samples are bottom-k by a hash of the id (actor id, unit id): the same ids are picked whatever the order events
 * arrive in, so a unit machine's sampled actors are the sampled units of the unit-event stream (their ids are the unit
 * ids), and processes feeding one inspector pick the same units. A sample finished (or unchanged) this long — an
 * earlier relocation — makes room first.
 */
const SAMPLE_STALE_MS = 30_000;
const HISTORY = 16;
/** The latest actor's context is shown only when its JSON is at most this long. */
const CONTEXT_CHARS = 2000;

interface Tracked {
  readonly machine: MachineAgg;
  readonly id: string;
  state: string;
  status: string;
  since: number;
  /** fnv1a(id), for the bottom-k sample. */
  readonly hash: number;
  /** Kept only while the actor is its machine's latest or in the sample. */
  history?: string[];
}

interface MachineAgg {
  readonly machine: string;
  total: number;
  live: number;
  readonly byState: Record<string, number>;
  latest?: { tracked: Tracked; ref: { getSnapshot(): unknown } };
  readonly samples: Tracked[];
}

interface NodeAgg {
  readonly nodeId: string;
  readonly machines: Map<string, MachineAgg>;
  units?: { byState: Record<string, Record<string, number>>; byKind: Record<string, Record<string, Record<string, number>>> };
}

interface MutableUnitSample {
  unit: string;
  kind: string;
  batch?: number;
  source?: string;
  target?: string;
  sourceState?: string;
  targetState?: string;
  points: Partial<Record<'S0' | 'S1' | 'S2' | 'S3' | 'S4', number>>;
  updated: number;
  /** fnv1a(unit): the sample keeps the smallest. */
  hash: number;
}

/** Untagged events (an observer used outside createRuntime) are shown under this node id. */
export const UNTAGGED = '(untagged)';

export class InspectionModel {
  private readonly sampleSize: number;
  private readonly nodes = new Map<string, NodeAgg>();
  private readonly actors = new WeakMap<object, Tracked>();
  private readonly diagrams = new Map<string, MachineDiagram>();
  private readonly units = new Map<string, MutableUnitSample>();
  private readonly onDiagram?: (diagram: MachineDiagram) => void;
  /** Set by every change; the server clears it when it pushes a view. */
  dirty = true;

  constructor(options: ModelOptions = {}) {
    this.sampleSize = options.sampleSize ?? 8;
    this.onDiagram = options.onDiagram;
  }

  /** The xstate inspection observer. Never throws into the actor that emitted the event. */
  readonly inspect = (event: InspectionEvent): void => {
    if (event.type !== '@xstate.snapshot') return;
    try {
      this.onSnapshot((event as { nodeId?: string }).nodeId ?? UNTAGGED, event.actorRef as never, event.snapshot as never);
    } catch {
      // an inspector never breaks the host
    }
  };

  /** One unit event of the host `nodeId` (`host.on(UNIT_CHANGED, …)`). */
  unit(nodeId: string, e: UnitEventLike): void {
    try {
      const node = this.node(nodeId);
      const units = (node.units ??= { byState: {}, byKind: {} });
      const bySide = (units.byState[e.side] ??= {});
      bySide[e.state] = (bySide[e.state] ?? 0) + 1;
      const byKind = ((units.byKind[e.side] ??= {})[e.kind] ??= {});
      byKind[e.state] = (byKind[e.state] ?? 0) + 1;
      this.sampleUnit(nodeId, e);
      this.dirty = true;
    } catch {
      // an inspector never breaks the host
    }
  }

  diagram(machine: string): MachineDiagram | undefined {
    return this.diagrams.get(machine);
  }

  allDiagrams(): MachineDiagram[] {
    return [...this.diagrams.values()];
  }

  view(): InspectorView {
    const nodes: NodeView[] = [];
    for (const node of this.nodes.values()) {
      const machines: MachineView[] = [];
      for (const m of node.machines.values()) {
        if (!m.latest) continue;
        machines.push({
          machine: m.machine,
          total: m.total,
          live: m.live,
          byState: { ...m.byState },
          latest: { ...sampleOf(m.latest.tracked), ...contextOf(m.latest.ref) },
          samples: [...m.samples].sort((a, b) => a.hash - b.hash).map(sampleOf),
        });
      }
      nodes.push({ nodeId: node.nodeId, machines, ...(node.units ? { units: structuredClone(node.units) } : {}) });
    }
    const units = [...this.units.values()].sort((a, b) => a.hash - b.hash).map(({ hash: _hash, ...u }) => ({ ...u, points: { ...u.points } }) as UnitSample);
    return { at: Date.now(), nodes, units };
  }

  // ── inspection ────────────────────────────────────────────────────────────────────────────

  private onSnapshot(nodeId: string, ref: { id: string; logic?: unknown; getSnapshot(): unknown }, snapshot: { value?: unknown; status: string }): void {
    let tracked = this.actors.get(ref);
    const state = stateKey(snapshot.value);
    if (tracked && tracked.state === state && tracked.status === snapshot.status) return;
    const now = Date.now();
    if (!tracked) {
      const logic = ref.logic;
      if (!isMachineLogic(logic)) return; // promise and callback actors have no states to show
      const machine = this.machine(this.node(nodeId), logic);
      tracked = { machine, id: ref.id, state: '', status: 'active', since: now, hash: fnv1a(ref.id), history: [] };
      this.actors.set(ref, tracked);
      machine.total++;
      machine.live++;
      const previous = machine.latest?.tracked;
      machine.latest = { tracked, ref };
      if (previous && !machine.samples.includes(previous)) previous.history = undefined;
      this.offerSample(machine, tracked, now);
    } else {
      dec(tracked.machine.byState, tracked.state);
    }
    const m = tracked.machine;
    m.byState[state] = (m.byState[state] ?? 0) + 1;
    if (tracked.status === 'active' && snapshot.status !== 'active') m.live--;
    tracked.state = state;
    tracked.status = snapshot.status;
    tracked.since = now;
    const history = tracked.history;
    if (history && history[history.length - 1] !== state) {
      history.push(state);
      if (history.length > HISTORY) history.splice(0, history.length - HISTORY);
    }
    this.dirty = true;
  }

  private node(nodeId: string): NodeAgg {
    let node = this.nodes.get(nodeId);
    if (!node) this.nodes.set(nodeId, (node = { nodeId, machines: new Map() }));
    return node;
  }

  private machine(node: NodeAgg, logic: { id: string; root: unknown }): MachineAgg {
    let m = node.machines.get(logic.id);
    if (!m) {
      node.machines.set(logic.id, (m = { machine: logic.id, total: 0, live: 0, byState: {}, samples: [] }));
      if (!this.diagrams.has(logic.id)) {
        const diagram = diagramOf(logic);
        this.diagrams.set(logic.id, diagram);
        this.onDiagram?.(diagram);
      }
    }
    return m;
  }

  /** A free slot, else the slot of a sample finished long ago, else that of the largest hash if larger (bottom-k). */
  private offerSample(m: MachineAgg, tracked: Tracked, now: number): void {
    if (this.sampleSize === 0) return;
    if (m.samples.length < this.sampleSize) return void m.samples.push(tracked);
    const victim = pickVictim(m.samples, tracked.hash, (s) => s.status !== 'active' && now - s.since > SAMPLE_STALE_MS);
    if (victim === undefined) return;
    const old = m.samples[victim]!;
    m.samples[victim] = tracked;
    if (m.latest?.tracked !== old) old.history = undefined;
  }

  // ── unit events ───────────────────────────────────────────────────────────────────────────

  /** Bottom-k by unit id hash, like the actor samples (SAMPLE_STALE_MS): the page joins S0–S4 from both sides. */
  private sampleUnit(nodeId: string, e: UnitEventLike): void {
    let u = this.units.get(e.unit);
    if (!u) {
      const hash = fnv1a(e.unit);
      if (this.units.size >= this.sampleSize) {
        const now = Date.now();
        const samples = [...this.units.values()];
        const victim = pickVictim(samples, hash, (s) => now - s.updated > SAMPLE_STALE_MS);
        if (victim === undefined) return;
        this.units.delete(samples[victim]!.unit);
      }
      u = { unit: e.unit, kind: e.kind, points: {}, updated: 0, hash };
      this.units.set(e.unit, u);
    }
    if (e.side === 'source') {
      u.source = nodeId;
      u.sourceState = e.state;
      if (e.batch !== undefined) u.batch = e.batch;
    } else {
      u.target = nodeId;
      u.targetState = e.state;
    }
    if (e.point) u.points[e.point] = e.at;
    u.updated = Date.now();
  }
}

/** Index of the sample to replace: the stale one with the largest hash, else the largest hash above `hash`. */
function pickVictim<T extends { readonly hash: number }>(samples: readonly T[], hash: number, stale: (s: T) => boolean): number | undefined {
  let victim: number | undefined;
  for (let i = 0; i < samples.length; i++) if (stale(samples[i]!) && (victim === undefined || samples[i]!.hash > samples[victim]!.hash)) victim = i;
  if (victim !== undefined) return victim;
  for (let i = 0; i < samples.length; i++) if (samples[i]!.hash > hash && (victim === undefined || samples[i]!.hash > samples[victim]!.hash)) victim = i;
  return victim;
}

/** 32-bit FNV-1a of a string. */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** `'a'` → `a`; `{ a: 'b' }` → `a.b`; parallel regions joined by `,`. */
export function stateKey(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value !== 'object' || value === null) return String(value);
  const paths: string[] = [];
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    const sub = stateKey(child);
    for (const p of sub.split(',')) paths.push(p ? `${key}.${p}` : key);
  }
  return paths.join(',');
}

function dec(counts: Record<string, number>, key: string): void {
  const n = (counts[key] ?? 0) - 1;
  if (n > 0) counts[key] = n;
  else delete counts[key];
}

function sampleOf(t: Tracked): ActorSample {
  return { id: t.id, state: t.state, status: t.status, history: [...(t.history ?? [t.state])], since: t.since };
}

function contextOf(ref: { getSnapshot(): unknown }): { context?: unknown } {
  try {
    const context = (ref.getSnapshot() as { context?: unknown }).context;
    if (context === undefined) return {};
    const json = JSON.stringify(context);
    return json !== undefined && json.length <= CONTEXT_CHARS ? { context: JSON.parse(json) } : {};
  } catch {
    return {};
  }
}
