/** acquire() found a live owner lease of the same or a newer run of that node: this run must not publish. */
export class LeaseHeldError extends Error {
  override readonly name = 'LeaseHeldError';
  constructor(nodeId: string, heldGeneration: number, requestedGeneration: number) {
    super(
      `owner lease of node '${nodeId}' is held by lifecycle generation ${heldGeneration}; ` +
        `generation ${requestedGeneration} cannot take it (start a new run with nextLifecycleGeneration, or wait for the lease to expire)`,
    );
  }
}
