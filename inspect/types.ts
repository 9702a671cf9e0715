/**
 * What the inspector server sends to its page and what a feed (another process) sends to the server: JSON only,
 * bounded in size whatever the number of actors (counts by state and a fixed-size sample, never one entry per actor).
 */

/** One state node of a machine definition, as the page draws it. */
export interface DiagramState {
  /** Full state id, e.g. `relocationSupervisor.relocating.batch1`. */
  readonly id: string;
  readonly key: string;
  readonly type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  /** Id of the initial child (compound states). */
  readonly initial?: string;
  /** Names of the actors this state invokes. */
  readonly invoke: readonly string[];
  readonly children: readonly DiagramState[];
}

/** One transition; transitions without a target (actions only) are left out. */
export interface DiagramEdge {
  readonly source: string;
  readonly target: string;
  /** Event, shortened (`done`, `error`, `after <delay>`, `always`), with the guard name in brackets. */
  readonly label: string;
}

/** A machine's structure, sent once per machine id. */
export interface MachineDiagram {
  readonly machine: string;
  readonly root: DiagramState;
  readonly edges: readonly DiagramEdge[];
}

/** An individual actor the inspector follows (a bounded sample per machine and node). */
export interface ActorSample {
  readonly id: string;
  /** State path, e.g. `relocating.batch2` (parallel regions joined by `,`). */
  readonly state: string;
  readonly status: string;
  /** The distinct states it went through, oldest first (bounded). */
  readonly history: readonly string[];
  /** Date.now() of its last change. */
  readonly since: number;
}

/** Every actor of one machine on one node. */
export interface MachineView {
  readonly machine: string;
  /** Actors seen so far / still active. */
  readonly total: number;
  readonly live: number;
  /** The last state of every actor seen (final states stay counted). */
  readonly byState: Readonly<Record<string, number>>;
  /** The most recently created actor: for one-per-host machines (lifecycle, the current supervisor, shutdown). */
  readonly latest: ActorSample & { readonly context?: unknown };
  readonly samples: readonly ActorSample[];
}

/** Counts from the host's unit-event stream (`host.on(UNIT_CHANGED)`, only for watched hosts). */
export interface UnitCounts {
  /** side → unit-event state → count. */
  readonly byState: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** side → unit kind → unit-event state → count. */
  readonly byKind: Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, number>>>>>>;
}

export interface NodeView {
  readonly nodeId: string;
  readonly machines: readonly MachineView[];
  readonly units?: UnitCounts;
}

/** A sampled relocation unit: its §8 points, each on the clock of the node that recorded it. */
export interface UnitSample {
  readonly unit: string;
  readonly kind: string;
  readonly batch?: number;
  readonly source?: string;
  readonly target?: string;
  /** Latest unit-event state per side. */
  readonly sourceState?: string;
  readonly targetState?: string;
  readonly points: Readonly<Partial<Record<'S0' | 'S1' | 'S2' | 'S3' | 'S4', number>>>;
  readonly updated: number;
}

export interface InspectorView {
  readonly at: number;
  readonly nodes: readonly NodeView[];
  readonly units: readonly UnitSample[];
}

/** Server → page, and feed → server. */
export type InspectorMessage = { readonly t: 'def'; readonly diagram: MachineDiagram } | { readonly t: 'view'; readonly view: InspectorView };
