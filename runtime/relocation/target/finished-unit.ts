/**
 * What the target keeps of an ended inbound unit while its finished window lasts (inbound.ts): enough to answer a
 * resent prepare or payload and a late retransmission of its relay batch and cutover (§13), and nothing else. An
 * ended `TargetUnit` (its prepare message, parcel, flags and key list, ~450 B) kept for the window was promoted to the
 * old generation with every unit of a 100k move; this record is a fraction of that, and the unit itself dies young.
 */
import type { NodeRef } from '../../../stores/types';
import type { Envelope } from '../../envelope';
import type { InboundPorts } from '../ports';

/** How the unit ended: dispatch opened (S3), discarded after relay-ready (§11), or abandoned before it. */
export type UnitEnd = 'opened' | 'discarded' | 'abandoned';

export class FinishedUnit {
  constructor(
    readonly id: string,
    readonly source: NodeRef,
    readonly end: UnitEnd,
    /** Ids of the relayed messages of an opened unit whose relay was not empty (late retransmissions). */
    private readonly relayIds: ReadonlySet<string> | undefined,
    private readonly routes: InboundPorts['routes'],
  ) {}

  /** Restored here at some point (opened or discarded after relay-ready): a resent payload is answered relay-ready. */
  get restored(): boolean {
    return this.end !== 'abandoned';
  }

  /**
   * Part of a late relay batch or cutover (§13). Opened: deliver only what was not relayed before. Discarded: the
   * discard already gave each relayed request its terminal, and a retransmission carries the same batch. Abandoned
   * before relay-ready: its source never got relay-ready, so it never relayed (§11).
   */
  lateRelay(relay: readonly Envelope[]): void {
    if (this.end !== 'opened') return;
    for (const env of relay) if (!this.relayIds?.has(env.id)) this.routes.dispatch(env, true);
  }
}
