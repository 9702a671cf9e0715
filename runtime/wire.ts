/**
 * Wire values (§2.1, §3): defined once in the shared vocabulary (vocabulary/index.ts); re-exported here for the
 * runtime's own modules.
 */
export {
  RelocationMode,
  FrameworkRuntimeState,
  RelocationOutcome,
  RelocationReason,
  TerminationOutcome,
  TerminationReason,
  nameOf,
  isValidRelocationResult,
  isValidTerminationResult,
} from '../vocabulary';
