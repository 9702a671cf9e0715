/**
 * Wire values (§2.1, §3). This module is the one place they come from: the host, the transport frames,
 * metrics and events all import them here.
 */
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
