/** Public result, option and status shapes (API.md): defined in the shared vocabulary (vocabulary/index.ts). */
export type { RelocationOptions, RelocationResult, TerminationResult, RuntimeStatus } from '../vocabulary';
