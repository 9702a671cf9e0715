/**
 * The shared vocabulary (issue [6/10] "untangle"): node identity, object ids, descriptors, wire values, public
 * results and the bad-input error (ArgumentError, with its "did you mean" helper). A leaf: it imports nothing of
 * ours, so machines/ depend only on it, and stores/ and transport/ need neither each other's nor the runtime's
 * types. Wire values (§2.1, §3) come from here and nowhere else.
 */

// ── bad input ──────────────────────────────────────────────────────────────────────────────

/** Any public call given a wrong type or value (runtime/errors.ts re-exports it with the other error classes). Nothing changed. */
export class ArgumentError extends TypeError {
  override readonly name = 'ArgumentError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

export { closestName } from './closest-name';

// ── wire values (§2.1, §3) ──────────────────────────────────────────────────────────────────

export const RelocationMode = { PlannedMaintenance: 0, RollingUpdate: 1 } as const;
export type RelocationMode = (typeof RelocationMode)[keyof typeof RelocationMode];

export const FrameworkRuntimeState = {
  Preparing: 0,
  Serving: 1,
  Relocating: 2,
  Relocated: 3,
  Draining: 4,
  Stopped: 5,
  Error: 6,
} as const;
export type FrameworkRuntimeState = (typeof FrameworkRuntimeState)[keyof typeof FrameworkRuntimeState];

export const RelocationOutcome = { Relocated: 0, Blocked: 1 } as const;
export type RelocationOutcome = (typeof RelocationOutcome)[keyof typeof RelocationOutcome];

export const RelocationReason = {
  None: 0,
  TargetUnavailable: 1,
  StoreUnavailable: 2,
  RelocationDisabled: 3,
  StateIncompatible: 4,
  DeadlineExceeded: 5,
  RelocationFailed: 6,
  RuntimeNotReady: 7,
  ManualTopologyUnsupported: 8,
  ShutdownRequested: 9,
  OperationInProgress: 10,
} as const;
export type RelocationReason = (typeof RelocationReason)[keyof typeof RelocationReason];

export const TerminationOutcome = { Stopped: 0, ForceStopped: 1 } as const;
export type TerminationOutcome = (typeof TerminationOutcome)[keyof typeof TerminationOutcome];

export const TerminationReason = { None: 0, DeadlineExceeded: 1, TeardownFailed: 2 } as const;
export type TerminationReason = (typeof TerminationReason)[keyof typeof TerminationReason];

/** Reverse lookup for logs and diagnostics: `nameOf(RelocationReason, 2) === 'StoreUnavailable'`. */
export function nameOf<T extends Record<string, number>>(table: T, value: number): keyof T & string {
  for (const key of Object.keys(table)) if (table[key] === value) return key as keyof T & string;
  throw new RangeError(`no name for wire value ${value}`);
}

/** §3: Relocated goes only with None; Blocked only with a non-None reason. Anything else is a protocol error. */
export function isValidRelocationResult(outcome: number, reason: number): boolean {
  if (outcome === RelocationOutcome.Relocated) return reason === RelocationReason.None;
  if (outcome === RelocationOutcome.Blocked) return reason > RelocationReason.None && reason <= RelocationReason.OperationInProgress;
  return false;
}

export function isValidTerminationResult(outcome: number, reason: number): boolean {
  if (outcome === TerminationOutcome.Stopped) return reason === TerminationReason.None;
  if (outcome === TerminationOutcome.ForceStopped)
    return reason === TerminationReason.DeadlineExceeded || reason === TerminationReason.TeardownFailed;
  return false;
}

// ── public results and status (API.md) ──────────────────────────────────────────────────────

export interface RelocationOptions {
  mode: RelocationMode;
  /** RollingUpdate only: one version, greater than the source (§2.1). */
  targetApplicationVersion?: number;
  /** @default 30000 (§2.1) */
  deadlineMs?: number;
}

export interface RelocationResult {
  mode: RelocationMode;
  /** Effective target version: the source's own for PlannedMaintenance (§2.1). */
  targetApplicationVersion: number;
  outcome: RelocationOutcome;
  reason: RelocationReason;
}

export interface TerminationResult {
  outcome: TerminationOutcome;
  reason: TerminationReason;
}

export interface RuntimeStatus {
  state: FrameworkRuntimeState;
  /** true only in Serving (§3). */
  isReady: boolean;
  lastRelocation?: RelocationResult;
  lastTermination?: TerminationResult;
  /** §14: every unit passed S4 and every retransmission window ended. */
  safeToShutdown: boolean;
}

// ── identity, objects and descriptors ───────────────────────────────────────────────────────

/** A MeshNode process run: RID plus the lifecycle generation of this run. */
export interface NodeRef {
  readonly nodeId: string;
  readonly lifecycleGeneration: number;
}

/** Location Store key of one object. Spots and Actors share a namespace split by kind. */
export type ObjectKind = 'actor' | 'spot';
export interface ObjectId {
  readonly kind: ObjectKind;
  readonly id: string;
}

/** What a node offers for one stable type (§5 order 3). */
export interface TypeCapability {
  readonly type: string;
  readonly kind: 'actor' | 'user' | 'instance';
  readonly policy: 'preserve' | 'recreate' | 'disable';
  /** Identifies the state adapter; must match between source and target for 'preserve'. */
  readonly adapter?: string;
  readonly executionMode?: 'SpotWide' | 'PerActor';
}

/** Published by every MeshNode under its owner lease. */
export interface NodeDescriptor {
  readonly nodeId: string;
  readonly lifecycleGeneration: number;
  readonly applicationVersion: number;
  readonly state: FrameworkRuntimeState;
  /** Mesh name -> endpoint URL (ws://host:port or memory://...). */
  readonly endpoints: Readonly<Record<string, string>>;
  readonly types: readonly TypeCapability[];
  /** Total object capacity and the number of objects currently owned. */
  readonly capacity: number;
  readonly load: number;
  readonly weight: number;
  readonly maintenanceWave?: string;
  /** Each host component's published fields by component name (STREAM session endpoint, ClientServer channels, …). */
  readonly components?: Readonly<Record<string, unknown>>;
}
