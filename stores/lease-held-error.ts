/**
 * acquire() found a live owner lease for that node: another run holds it, and only one run of a nodeId may hold
 * it at a time, whatever its lifecycle generation. Nothing was written. A run that crashed without releasing its
 * lease blocks its nodeId until the lease expires (`leaseExpiresInMs`, at most the holder's leaseMs after its last
 * renewal); then acquire succeeds. The runtime reports this to createRuntime callers as NodeIdInUseError.
 */
export class LeaseHeldError extends Error {
  override readonly name = 'LeaseHeldError';
  constructor(
    readonly nodeId: string,
    /** Lifecycle generation of the run holding the lease. */
    readonly heldGeneration: number,
    /** Lifecycle generation of the run that asked for it. */
    readonly requestedGeneration: number,
    /** Time left on the live lease when acquire read it; the holder extends it each time it renews. */
    readonly leaseExpiresInMs: number,
  ) {
    super(
      `owner lease of node '${nodeId}' is held by live lifecycle generation ${heldGeneration}; generation ${requestedGeneration} ` +
        `cannot take it. The lease expires in ${leaseExpiresInMs} ms unless its holder renews it: acquire succeeds after that`,
    );
  }
}
