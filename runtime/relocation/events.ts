/**
 * Per-unit relocation events (§8 points, §16 traces): who moved what and when, each point stamped on the
 * clock of the node that records it. Unlike metrics these carry ids, so they are for traces and tests.
 */
import type { UnitKind } from './protocol';

export const UNIT_CHANGED = 'zlink.relocation.unit_changed';

export type UnitPoint = 'S0' | 'S1' | 'S2' | 'S3' | 'S4';

export interface UnitEvent {
  readonly side: 'source' | 'target';
  readonly unit: string;
  readonly kind: UnitKind;
  /** Source side only (§7). */
  readonly batch?: 1 | 2 | 3;
  /** `closed`: source side, closeSpot reached the Instance Spot before its seal (§12); the unit moved nothing. */
  readonly state: 'sealed' | 'cutOver' | 'restored' | 'notStarted' | 'closed' | 'followEnded' | 'relayReady' | 'committed' | 'opened' | 'discarded';
  /** The §8 point this event records, if any. */
  readonly point?: UnitPoint;
  readonly objects: readonly string[];
  /** Local clock of the recording node. */
  readonly at: number;
  /** Target: the CAS came from the cutover-wait fallback, not a cutover. Source cutOver: whether the submit was sent. */
  readonly fellBack?: boolean;
  readonly submitOk?: boolean;
}

export type UnitListener = (event: UnitEvent) => void;

export class UnitEvents {
  private readonly listeners = new Set<UnitListener>();

  on(listener: UnitListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get active(): boolean {
    return this.listeners.size > 0;
  }

  emit(event: UnitEvent): void {
    for (const l of this.listeners) {
      try {
        l(event);
      } catch {
        // an observer never blocks the host (§15)
      }
    }
  }
}
