/**
 * OpenTelemetry instruments (§8, §16). `@opentelemetry/api` is an optional peer dependency: it is loaded lazily,
 * and without it — or without an SDK MeterProvider installed by the application — every instrument is a no-op.
 * No IDs in labels: only bounded names (state, mode, outcome, reason, kind, store operation).
 * A telemetry failure never blocks the host.
 */
import type { Attributes, MetricsAPI, ObservableResult } from '@opentelemetry/api';
import { nameOf, FrameworkRuntimeState, RelocationMode, RelocationOutcome, RelocationReason, TerminationOutcome, TerminationReason } from '../vocabulary';
import type { RelocationResult, TerminationResult } from '../vocabulary';

/** Latency buckets (ms) for calls that take anything from microseconds (memory stores) to seconds. */
const LATENCY_BUCKETS_MS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000];

let metricsApi: MetricsAPI | null | undefined;
/** The application's copy of @opentelemetry/api (a peer dependency), or null when it is not installed. */
function otel(): MetricsAPI | null {
  if (metricsApi === undefined) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      metricsApi = (require('@opentelemetry/api') as typeof import('@opentelemetry/api')).metrics;
    } catch {
      metricsApi = null;
    }
  }
  return metricsApi;
}

/** Reports relocation units in flight by side and state (added by each host, removed when it stops). */
export type UnitStateSource = (report: (side: 'source' | 'target', state: string, count: number) => void) => void;
const unitSources = new Set<UnitStateSource>();

function observeUnits(result: ObservableResult): void {
  const totals = new Map<string, { side: string; state: string; count: number }>();
  for (const source of unitSources) {
    try {
      source((side, state, count) => {
        const key = `${side}\u0000${state}`;
        const entry = totals.get(key);
        if (entry) entry.count += count;
        else totals.set(key, { side, state, count });
      });
    } catch {
      // a host that is being torn down reports nothing this round
    }
  }
  for (const { side, state, count } of totals.values()) result.observe(count, { side, state });
}

/**
 * Instruments are (re)made for whichever MeterProvider is global when they are used, so an SDK installed
 * after this module loaded still receives everything.
 */
function makeInstruments(api: MetricsAPI) {
  const meter = api.getMeter('zlink', '0.1.0');
  const latency = { unit: 'ms', advice: { explicitBucketBoundaries: LATENCY_BUCKETS_MS } };
  const units = meter.createObservableGauge('zlink.relocation.units', {
    description: 'Relocation units in flight on this process, by side (source | target) and unit state',
  });
  units.addCallback(observeUnits);
  return {
    interruption: meter.createHistogram('zlink.relocation.interruption', {
      description: 'Source stop time per relocation unit: S0 (admission seal) → S1 (cutover submit terminal), source clock',
      unit: 'ms',
    }),
    targetResume: meter.createHistogram('zlink.relocation.target_resume', {
      description: 'Target resume time per unit: S2 (CAS confirmed) → S3 (dispatch open), target clock',
      unit: 'ms',
    }),
    routeConvergence: meter.createHistogram('zlink.relocation.route_convergence', {
      description: 'Route convergence per unit: S1 → S4 (Message Follow route removable), source clock',
      unit: 'ms',
    }),
    cutoverTimeout: meter.createCounter('zlink.relocation.cutover_timeout', { description: 'Cutover-wait fallbacks taken by targets' }),
    hostState: meter.createCounter('zlink.runtime.host.state_transitions', { description: 'Host lifecycle transitions by new state' }),
    hostRelocations: meter.createCounter('zlink.runtime.host.relocations', { description: 'Host Relocate results by mode, outcome and reason' }),
    hostTerminations: meter.createCounter('zlink.runtime.host.terminations', { description: 'Host Shutdown results by outcome and reason' }),
    routed: meter.createCounter('zlink.runtime.message.routed', {
      description: 'Application messages accepted from callers on this host (send, request, ctx.send/request) and routed, by kind (one-way | request)',
    }),
    followed: meter.createCounter('zlink.runtime.message.followed', {
      description: 'Messages this host relayed to an object’s new owner through Message Follow (S1 → S4)',
    }),
    bounced: meter.createCounter('zlink.runtime.message.bounced', {
      description: 'Messages this host turned back to their origin because it no longer hosts the object (the origin re-resolves the owner)',
    }),
    requestDuration: meter.createHistogram('zlink.runtime.request.duration', {
      description: 'Time from a request call to its one terminal, by outcome (ok, or the RequestError kind, or aborted)',
      ...latency,
    }),
    storeDuration: meter.createHistogram('zlink.store.call.duration', {
      description: 'Location / descriptor / Relocation Store call latency by store, operation and outcome (ok | error)',
      ...latency,
    }),
    storeErrors: meter.createCounter('zlink.store.call.errors', {
      description: 'Store calls that failed, by store, operation and error class',
    }),
    undeliverable: meter.createCounter('zlink.runtime.message.undeliverable', {
      description: 'One-way application messages that could not be delivered, by cause (a request ends with an error instead)',
    }),
    connectionLost: meter.createCounter('zlink.runtime.connection_lost', {
      description: 'Peer connections that closed without the peer announcing it (requests in flight over them end unavailable)',
    }),
  };
}
type Instruments = ReturnType<typeof makeInstruments>;

let provider: unknown;
let cached: Instruments | undefined;
function instruments(): Instruments | undefined {
  const api = otel();
  if (!api) return undefined;
  const current = api.getMeterProvider();
  if (!cached || current !== provider) {
    provider = current;
    cached = makeInstruments(api);
  }
  return cached;
}

function safely(fn: (i: Instruments) => void): void {
  try {
    const i = instruments();
    if (i) fn(i);
  } catch {
    // §16: telemetry provider failure does not block operation progress.
  }
}

/** A per-unit histogram record: called for every unit on both sides, so no closure per call (see `safely`). */
function recordUnit(name: 'interruption' | 'targetResume' | 'routeConvergence', ms: number, attrs: UnitTimings): void {
  try {
    instruments()?.[name].record(ms, attrs as unknown as Attributes);
  } catch {
    // §16: telemetry provider failure does not block operation progress.
  }
}

export interface UnitTimings {
  /** Which kind of unit: actor | perActorShell | spotWide | instance (bounded set, no IDs). */
  readonly unitKind: string;
}

/** Metric attributes per unit kind, built once: the unit histograms are recorded once per unit (issue [6/10]). */
const KIND_ATTRIBUTES = new Map<string, UnitTimings>();
export const unitKindAttributes = (unitKind: string): UnitTimings => KIND_ATTRIBUTES.get(unitKind) ?? KIND_ATTRIBUTES.set(unitKind, { unitKind }).get(unitKind)!;

/** Outcome label of a settled request: 'ok', a RequestError kind, 'aborted' or 'error'. */
export type RequestOutcome = string;

export const telemetry = {
  sourceStop(ms: number, attrs: UnitTimings): void {
    recordUnit('interruption', ms, attrs);
  },
  targetResume(ms: number, attrs: UnitTimings): void {
    recordUnit('targetResume', ms, attrs);
  },
  routeConvergence(ms: number, attrs: UnitTimings): void {
    recordUnit('routeConvergence', ms, attrs);
  },
  cutoverTimeout(attrs: UnitTimings): void {
    safely((i) => i.cutoverTimeout.add(1, attrs as unknown as Attributes));
  },
  hostState(state: number): void {
    safely((i) => i.hostState.add(1, { state: nameOf(FrameworkRuntimeState, state) }));
  },
  relocation(result: RelocationResult): void {
    safely((i) =>
      i.hostRelocations.add(1, {
        mode: nameOf(RelocationMode, result.mode),
        outcome: nameOf(RelocationOutcome, result.outcome),
        reason: nameOf(RelocationReason, result.reason),
      }),
    );
  },
  /** An application message accepted from a caller on this host. */
  routed(request: boolean): void {
    safely((i) => i.routed.add(1, { kind: request ? 'request' : 'one-way' }));
  },
  /** A message relayed to the new owner through Message Follow. */
  followed(): void {
    safely((i) => i.followed.add(1));
  },
  /** A message turned back to its origin (this host no longer hosts the object). */
  bounced(): void {
    safely((i) => i.bounced.add(1));
  },
  requestSettled(ms: number, outcome: RequestOutcome): void {
    safely((i) => i.requestDuration.record(ms, { outcome }));
  },
  /** One store call: `store` and `operation` are interface and method names (bounded), `error` an error class name. */
  storeCall(store: string, operation: string, ms: number, error: string | undefined): void {
    safely((i) => {
      i.storeDuration.record(ms, { store, operation, outcome: error === undefined ? 'ok' : 'error' });
      if (error !== undefined) i.storeErrors.add(1, { store, operation, error });
    });
  },
  /** `cause` is one of a fixed set of words (no IDs, §16). */
  undeliverable(cause: string): void {
    safely((i) => i.undeliverable.add(1, { cause }));
  },
  connectionLost(): void {
    safely((i) => i.connectionLost.add(1));
  },
  termination(result: TerminationResult): void {
    safely((i) =>
      i.hostTerminations.add(1, { outcome: nameOf(TerminationOutcome, result.outcome), reason: nameOf(TerminationReason, result.reason) }),
    );
  },
  /** Adds a reporter of units in flight to the `zlink.relocation.units` gauge; returns its removal. */
  addUnitStates(source: UnitStateSource): () => void {
    unitSources.add(source);
    // Makes the instruments (and so the gauge callback) for the current provider without waiting for a first record.
    safely(() => undefined);
    return () => void unitSources.delete(source);
  },
};
