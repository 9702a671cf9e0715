/**
 * What relocation needs from its host, as small ports (issue [6/10] item 4; the router's `RouterDeps` is the
 * pattern): the target side is built on these and never reaches into the host, so it is unit-tested with fakes.
 */
import type { HostLifecycleEvent } from '../../machines/host-lifecycle.machine';
import type { Clock } from '../clock';
import type { ObjectDefinition } from '../definitions';
import type { RuntimeLog } from '../logger';
import type { ResolvedRuntimeOptions, Timing } from '../options';
import type { ObjectServer } from '../objects';
import type { Router } from '../router';
import type { LocationStore, NodeDescriptor, NodeRef, OwnerLease, Stores } from '../../stores/types';
import type { FrameworkRuntimeState, RelocationReason, RuntimeStatus, TerminationResult } from '../../vocabulary';
import type { BudgetLease, RuntimeMessage, Transport } from '../../transport/types';
import type { OwnerCommitBatcher } from './owner-commit-batcher';
import type { ControlBatcher } from './control-batcher';
import type { UnitEvent } from './events';
import type { UnitPlan } from './inventory';
import type { ParcelSender } from './source/parcel-sender';

/** The target side of inbound units: intake, restore, owner commit, merge and dispatch (DESIGN.md "Unit handoff (target)"). */
export interface InboundPorts {
  /** Read at each use: the lifecycle generation is known once the host started. */
  readonly self: NodeRef;
  readonly clock: Clock;
  readonly timing: Pick<Timing, 'restoreValidityMs' | 'relocationCutoverWaitTimeoutMs'>;
  /** Objects this host may hold (restored ones included). */
  readonly capacity: number;
  readonly types: ReadonlyMap<string, ObjectDefinition>;
  /** The Object Server: where restored objects are built, adopted and dispatched. */
  readonly objects: Pick<ObjectServer, 'size' | 'newLane' | 'newHosted' | 'definition' | 'adopt' | 'get' | 'deliver' | 'values' | 'runReadyCompleted' | 'restoreExtensions'>;
  /** Routing: temporary work goes back to it (abandon), ends through it (discard), and owner caches are dropped. */
  readonly routes: Pick<Router, 'dispatch' | 'invalidate' | 'terminal'>;
  /** SpotWide aggregate commit (§10.3); single-record owner commits go through `owners`. */
  readonly location: Pick<LocationStore, 'stageAggregate' | 'commitAggregate' | 'discardAggregate'>;
  /** Owner commits coalesced per tick. */
  readonly owners: Pick<OwnerCommitBatcher, 'submit'>;
  /** Replies to a unit's source: `prepared` and `ready` are batched per turn; `fail` goes after them. */
  readonly replies: {
    prepared(source: NodeRef, unit: string): void;
    ready(source: NodeRef, unit: string): void;
    fail(source: NodeRef, unit: string, reason: RelocationReason, error: string): void;
    /** Sends what is batched for that source now (a payload's relay-ready goes at the end of its intake). */
    flush(source: NodeRef): void;
  };
  readonly logger: RuntimeLog;
  /** Per-unit events (only built when someone listens). */
  readonly unitEvents: { readonly active: boolean; emit(event: UnitEvent): void };
  /** xstate inspection observer passed to the parcel machines. */
  readonly inspect: unknown;
  /** Why new inbound units are refused now (the host is not Serving, or relocation closed), else undefined. */
  refusal(): string | undefined;
  /** Shutdown closed relocation (§14): no retry goes on. */
  closed(): boolean;
  /** Inbound units ended (opened, discarded or abandoned): the host re-checks what waits on them. */
  unitsEnded(): void;
}

/** The source side of a unit (source/unit.ts): seal, capture, transfer, relay and cutover (DESIGN.md "Unit handoff (source)"). */
export interface OutboundPorts {
  readonly clock: Clock;
  readonly logger: RuntimeLog;
  /** One message to the unit's target; false when the transport did not take it. */
  send(to: NodeRef, message: RuntimeMessage): boolean;
  /** §7 payload budget toward a target; undefined when this host has no transport. */
  acquireBudget(to: NodeRef, bytes: number): Promise<BudgetLease> | undefined;
  /** The same budget at once when it has room and nobody waits ahead (FIFO); undefined otherwise. */
  tryAcquireBudget(to: NodeRef, bytes: number): BudgetLease | undefined;
  /**
   * Batched per-unit control messages (`r.prepare`, `r.cutovers`), flushed before a per-unit message that must not
   * overtake them; the step that cut units over flushes their cutovers before it returns (S1 is the submit, §8).
   */
  readonly control: Pick<ControlBatcher, 'prepare' | 'cutover' | 'flush'>;
  /** Unit payloads of one tick travel as one parcel. */
  readonly parcels: Pick<ParcelSender, 'send'>;
  readonly objects: Pick<ObjectServer, 'get' | 'forget' | 'runReadyCompleted'>;
  /** §7 ApplicationSignaled readiness: `ready` runs once the Spot's handler called relocationReady().defer(). */
  awaitDeferSignal(key: string, ready: () => void): void;
  cancelDeferSignal(key: string): void;
  readonly routes: Pick<Router, 'setFollow'>;
  readonly unitEvents: { readonly active: boolean; emit(event: UnitEvent): void };
  /** The payload estimate before the seal (§7), and what the seal measured. */
  estimateBytes(plan: UnitPlan): number;
  recordBytes(plan: UnitPlan, bytes: number): void;
}

/**
 * What the relocation operation (coordinator.ts: the §6 table, the supervisor's steps, the follow window) needs from
 * its host: lifecycle and publication, discovery, stores, transport, objects, routes, clock and log. The host
 * implements it; nothing under relocation/ imports host.ts.
 */
export interface RelocationHost {
  readonly self: NodeRef;
  readonly clock: Clock;
  readonly logger: RuntimeLog;
  readonly options: Pick<ResolvedRuntimeOptions, 'timing' | 'inspect' | 'capacity' | 'maintenanceWave'>;
  readonly types: ReadonlyMap<string, ObjectDefinition>;
  readonly objects: ObjectServer;
  readonly router: Router;
  readonly stores: Pick<Stores, 'location' | 'descriptors' | 'ping'>;
  /** Undefined before the host started and after it closed. */
  readonly transport: Transport | undefined;
  /** The owner lease of this run (§1.1), while held. */
  readonly lease: OwnerLease | undefined;
  /** §4 topology: manual registrations of every component (RouteMesh peers, ClientServer client endpoints, fanout endpoints). */
  manualTopology(): readonly string[];
  /** §4 first row: accepted component work (session binding, placement) finishes before the inventory is fixed. */
  settleComponents(): Promise<void>;
  /** §3 lifecycle: the host's state changes only through its machine. */
  readonly state: FrameworkRuntimeState;
  readonly status: RuntimeStatus;
  transition(event: HostLifecycleEvent['type'], patch?: Partial<RuntimeStatus>): boolean;
  publish(patch: Partial<RuntimeStatus>): void;
  /** Writes this host's descriptor in `state`; false when the owner lease is not held. */
  publishDescriptor(state: FrameworkRuntimeState): Promise<boolean>;
  /** One discovery round (§5); with `failOnError` a failed descriptor read rejects. */
  discover(failOnError?: boolean): Promise<NodeDescriptor[]>;
  nextTopologyChange(signal?: AbortSignal): Promise<void>;
  shutdown(opts?: { deadlineMs?: number; signal?: AbortSignal }): Promise<TerminationResult>;
}
