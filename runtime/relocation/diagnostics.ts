/**
 * `diagnostics().relocation`-side view (API.md): the operation, units in flight by state, the follow window and a
 * count-limited list of what holds the operation up. Read from the parts that own each fact; nothing is kept twice.
 */
import type { StateValue } from 'xstate';
import type { NodeRef } from '../../stores/types';
import { FrameworkRuntimeState, nameOf } from '../../vocabulary';
import { statePath } from '../state-path';
import type { FollowWindow } from './follow-window';
import type { RelocationHost } from './ports';
import type { SourceUnit } from './source/unit';
import type { UnitPlan } from './inventory';
import type { Inbound } from './target/inbound';
import type { SelectionResult } from './target-selection';

export interface RelocationDiagnostics {
  state: string;
  safeToShutdown: boolean;
  operation?: { mode: number; targetApplicationVersion: number; phase: string; target?: NodeRef };
  /** How many descriptors survived each §5 step in the last target search. */
  lastSelection?: SelectionResult['survivors'];
  units: { sourceInFlight: number; sourceByState: Record<string, number>; targetInFlight: number };
  /** Units of the last fixed inventory (§7), by kind. */
  lastInventory?: {
    objects: number;
    perActorShells: number;
    actors: number;
    spotWideAggregates: number;
    instanceSpots: number;
    spotWideMembers: number;
  };
  followRoutes: number;
  retransmissionCopies: number;
  retransmissionsSent: number;
  retransmissionCopiesCleaned: number;
  /** Count-limited: objects and units holding the operation up, with why. */
  blockers: { object: string; reason: string }[];
  blockersTotal: number;
}

export interface DiagnosticsView {
  readonly host: Pick<RelocationHost, 'state' | 'status' | 'objects' | 'manualTopology'>;
  readonly operation?: { mode: number; targetApplicationVersion: number; state: StateValue; target?: NodeRef };
  readonly lastSelection?: SelectionResult['survivors'];
  readonly lastInventory?: RelocationDiagnostics['lastInventory'];
  readonly sources: Iterable<SourceUnit>;
  /** Units of the batch still queued without a driver (source/pool.ts), all waiting for the same reason. */
  readonly queued?: { readonly plans: Iterable<UnitPlan>; readonly reason: 'budget' | 'queued' };
  readonly inbound: Pick<Inbound, 'inFlight' | 'inFlightUnits'>;
  readonly window: Pick<FollowWindow, 'followRoutes' | 'retransmissionCopies' | 'retransmissionsSent' | 'copiesCleaned'>;
}

/** The machine state of an in-flight source unit; `waiting` is split by the driver's §7 step (budget, preparing, safePoint). */
function sourceState(unit: SourceUnit): string {
  const value = unit.at;
  return value === 'waiting' ? unit.waitingFor : value;
}

const WAITING_FOR: Record<string, string> = {
  budget: 'waiting for payload budget',
  queued: 'waiting for its turn in the relocation pipeline (before its seal; it keeps serving)',
  safePoint: 'waiting for the current turn or application safe point',
  preparing: 'waiting for the target temporary queue',
  closing: 'closed by closeSpot before its seal: waiting for the close to finish (not moved)',
};

export function relocationDiagnostics(view: DiagnosticsView, limit: number): RelocationDiagnostics {
  const { host, operation, window } = view;
  const sourceByState: Record<string, number> = {};
  const blockers: { object: string; reason: string }[] = [];
  let blockersTotal = 0;
  const add = (object: string, reason: string) => {
    blockersTotal++;
    if (blockers.length < limit) blockers.push({ object, reason });
  };
  for (const o of host.objects.values()) if (o.def.relocation.kind === 'disable') add(o.key, 'RelocationDisabled');
  let sourceInFlight = 0;
  for (const unit of view.sources) {
    sourceInFlight++;
    const value = sourceState(unit);
    sourceByState[value] = (sourceByState[value] ?? 0) + 1;
    const waiting = WAITING_FOR[value];
    if (waiting) add(unit.plan.root.key, waiting);
  }
  if (view.queued) {
    const reason = view.queued.reason;
    for (const plan of view.queued.plans) {
      sourceInFlight++;
      sourceByState[reason] = (sourceByState[reason] ?? 0) + 1;
      add(plan.root.key, WAITING_FOR[reason]!);
    }
  }
  for (const unit of view.inbound.inFlightUnits()) add(unit.keys[0] ?? unit.id, 'inbound relocation unit in flight (it settles before this host fixes its own inventory)');
  if (host.manualTopology().length > 0) add('topology', 'ManualTopologyUnsupported');
  return {
    state: nameOf(FrameworkRuntimeState, host.state),
    safeToShutdown: host.status.safeToShutdown,
    ...(operation
      ? {
          operation: {
            mode: operation.mode,
            targetApplicationVersion: operation.targetApplicationVersion,
            phase: statePath(operation.state),
            ...(operation.target ? { target: operation.target } : {}),
          },
        }
      : {}),
    ...(view.lastSelection ? { lastSelection: view.lastSelection } : {}),
    units: { sourceInFlight, sourceByState, targetInFlight: view.inbound.inFlight },
    ...(view.lastInventory ? { lastInventory: view.lastInventory } : {}),
    followRoutes: window.followRoutes,
    retransmissionCopies: window.retransmissionCopies,
    retransmissionsSent: window.retransmissionsSent,
    retransmissionCopiesCleaned: window.copiesCleaned,
    blockers,
    blockersTotal,
  };
}
