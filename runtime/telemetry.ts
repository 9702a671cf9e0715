/**
 * OpenTelemetry instruments (§8, §16). No-ops unless the application installs an SDK. No IDs in labels:
 * only state, mode, outcome and reason names. A telemetry failure never blocks the host.
 */
import { metrics, type Attributes } from '@opentelemetry/api';
import { nameOf, FrameworkRuntimeState, RelocationMode, RelocationOutcome, RelocationReason, TerminationOutcome, TerminationReason } from '../vocabulary';
import type { RelocationResult, TerminationResult } from '../vocabulary';

/**
 * Instruments are (re)made for whichever MeterProvider is global when they are used, so an SDK installed
 * after this module loaded still receives everything.
 */
function makeInstruments() {
  const meter = metrics.getMeter('zlink', '0.1.0');
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
    undeliverable: meter.createCounter('zlink.runtime.message.undeliverable', {
      description: 'One-way application messages that could not be delivered, by cause (a request ends with an error instead)',
    }),
    connectionLost: meter.createCounter('zlink.runtime.connection_lost', {
      description: 'Peer connections that closed without the peer announcing it (requests in flight over them end unavailable)',
    }),
  };
}

let provider: unknown;
let cached: ReturnType<typeof makeInstruments> | undefined;
function instruments(): ReturnType<typeof makeInstruments> {
  const current = metrics.getMeterProvider();
  if (!cached || current !== provider) {
    provider = current;
    cached = makeInstruments();
  }
  return cached;
}

function safely(fn: () => void): void {
  try {
    fn();
  } catch {
    // §16: telemetry provider failure does not block operation progress.
  }
}

export interface UnitTimings {
  /** Which kind of unit: actor | perActorShell | spotWide | instance (bounded set, no IDs). */
  readonly unitKind: string;
}

export const telemetry = {
  sourceStop(ms: number, attrs: UnitTimings): void {
    safely(() => instruments().interruption.record(ms, attrs as unknown as Attributes));
  },
  targetResume(ms: number, attrs: UnitTimings): void {
    safely(() => instruments().targetResume.record(ms, attrs as unknown as Attributes));
  },
  routeConvergence(ms: number, attrs: UnitTimings): void {
    safely(() => instruments().routeConvergence.record(ms, attrs as unknown as Attributes));
  },
  cutoverTimeout(attrs: UnitTimings): void {
    safely(() => instruments().cutoverTimeout.add(1, attrs as unknown as Attributes));
  },
  hostState(state: number): void {
    safely(() => instruments().hostState.add(1, { state: nameOf(FrameworkRuntimeState, state) }));
  },
  relocation(result: RelocationResult): void {
    safely(() =>
      instruments().hostRelocations.add(1, {
        mode: nameOf(RelocationMode, result.mode),
        outcome: nameOf(RelocationOutcome, result.outcome),
        reason: nameOf(RelocationReason, result.reason),
      }),
    );
  },
  /** `cause` is one of a fixed set of words (no IDs, §16). */
  undeliverable(cause: string): void {
    safely(() => instruments().undeliverable.add(1, { cause }));
  },
  connectionLost(): void {
    safely(() => instruments().connectionLost.add(1));
  },
  termination(result: TerminationResult): void {
    safely(() =>
      instruments().hostTerminations.add(1, { outcome: nameOf(TerminationOutcome, result.outcome), reason: nameOf(TerminationReason, result.reason) }),
    );
  },
};
