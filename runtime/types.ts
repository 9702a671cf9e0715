/** Public result, option and status shapes (API.md). Values come from ./wire. */
import type {
  FrameworkRuntimeState,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  TerminationOutcome,
  TerminationReason,
} from './wire';

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
