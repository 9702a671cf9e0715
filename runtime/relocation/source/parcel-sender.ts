/**
 * Source side of parcels (issue [6/10] "a pipeline, not 100k little conversations"): the payloads of units that
 * seal together for the same target go out as one transport payload (one chunked transfer, one checksum over the
 * whole, one intake acknowledgement), each unit inside with its own bytes and checksum (parcel.ts). Every unit still
 * learns its own outcome: the parcel's delivery (or failure) is reported to each unit it carried, and the target
 * answers each unit separately (relay-ready or an explicit failure).
 *
 * A parcel goes as soon as it is full (parcelUnitsFor the seal window), in the middle of the step that seals its
 * units; what is left goes at the end of the I/O turn. So the seal window moves as a stream of parcels, not as one
 * convoy: the target restores the first parcel while this host seals the next, and the first units' relay-ready comes
 * back while the last ones are still on their way (both hosts busy at once instead of in turn).
 */
import { randomUUID } from 'node:crypto';
import type { NodeRef } from '../../../vocabulary';
import type { BudgetLease, Transport } from '../../../transport/types';
import { nodeKey } from '../../keys';
import { encodeParcel } from '../parcel';

/** Bytes of unit payloads per parcel: the transport chunks it; small enough that one parcel is not a long stall. */
export const PARCEL_MAX_BYTES = 4 * 1024 * 1024;
/**
 * Units per parcel: half the seal window (SealGate.size), at least PARCEL_MIN_UNITS and at most PARCEL_MAX_UNITS, so
 * about two parcels are in flight, each restored in a task of its own on the target. Every parcel costs a few
 * messages between the processes (the payload, its intake ack, relay-ready replies, cutovers) and an owner commit,
 * and on a machine whose cores the hosts and Redis share, each message can wake another process.
 * Measured with `npm run bench` (2 cores, alternated pairs, the move's time against parcels of 32): 100k units, where
 * the window reaches 256 — 64 per parcel 0.81–1.05× (median 0.95×, 7 pairs), 128 per parcel against 64 0.82–0.99×
 * (4 pairs), 256 against 128 0.98–1.04× (3 pairs), this rule 0.88–1.03× (median 0.94×, 4 pairs; the target's CPU
 * 2–21% lower in each), S0→S1 p99 unchanged (19–28 ms); beside one busy loop (130–186 units sealed on average) 128
 * against 32 0.875–0.909× (3 pairs), beside two 0.885 / 0.924×. A 10k move (window 39) keeps parcels of 32.
 * Earlier, with at most 128 sealed and the target's intake in the same turn, one parcel per window (~115 units: the
 * hosts busy in turn) made the move 10% longer than parcels of 32 (medians 10.6 / 9.6 s), which is why a small
 * window still gets 32.
 */
export const PARCEL_MAX_UNITS = 128;
export const PARCEL_MIN_UNITS = 32;

/** Units per parcel for a seal window of `sealWindow` units (see PARCEL_MAX_UNITS). */
export function parcelUnitsFor(sealWindow: number): number {
  return Math.min(PARCEL_MAX_UNITS, Math.max(PARCEL_MIN_UNITS, Math.floor(sealWindow / 2)));
}
/** Transport payload ids of parcels start with this (a unit id never does). */
export const PARCEL_ID_PREFIX = 'parcel:';

interface Item {
  readonly unit: string;
  readonly bytes: Buffer;
  readonly lease: BudgetLease;
  /** The parcel's intake ack (no error) or its failure; a callback, not a promise per unit (issue [6/10]). */
  readonly done: (error?: Error) => void;
}

/** One lease over the units' leases: the transport releases it once, at the intake ack or a refusal. */
function combined(leases: readonly BudgetLease[]): BudgetLease {
  let released = false;
  return {
    bytes: leases.reduce((sum, l) => sum + l.bytes, 0),
    grow: () => Promise.reject(new Error('a parcel lease does not grow: a sealed unit never waits for budget')),
    release: () => {
      if (released) return;
      released = true;
      for (const l of leases) l.release();
    },
  };
}

interface Waiting {
  readonly target: NodeRef;
  items: Item[];
  bytes: number;
}

export class ParcelSender {
  /** Units waiting for their parcel, per target (never more than PARCEL_MAX_UNITS, nor over PARCEL_MAX_BYTES). */
  private readonly waiting = new Map<string, Waiting>();
  private scheduled: NodeJS.Immediate | undefined;

  constructor(private readonly transport: () => Transport | undefined) {}

  /**
   * `done()` once the target acknowledged intake of the parcel that carried this unit (§7 budget release), or
   * `done(error)` when it failed (PeerUnavailableError / PayloadRejectedError: nothing of it was taken). The parcel
   * goes once it holds `unitsPerParcel` units (parcelUnitsFor the sender's seal window), or at the end of the turn.
   */
  send(target: NodeRef, unit: string, bytes: Buffer, lease: BudgetLease, done: (error?: Error) => void, unitsPerParcel: number): void {
    const key = nodeKey(target);
    let entry = this.waiting.get(key);
    if (!entry) this.waiting.set(key, (entry = { target, items: [], bytes: 0 }));
    if (entry.bytes + bytes.length > PARCEL_MAX_BYTES) this.shipWaiting(entry);
    entry.items.push({ unit, bytes, lease, done });
    entry.bytes += bytes.length;
    // Full: it goes now, and the target starts on it while this step seals the next units.
    if (entry.items.length >= Math.min(unitsPerParcel, PARCEL_MAX_UNITS)) return this.shipWaiting(entry);
    // setImmediate: the other units that reach their seal in this I/O turn join it.
    this.scheduled ??= setImmediate(() => this.flush());
  }

  private shipWaiting(entry: Waiting): void {
    if (entry.items.length === 0) return;
    const items = entry.items;
    entry.items = [];
    entry.bytes = 0;
    this.ship(entry.target, items);
  }

  private flush(): void {
    this.scheduled = undefined;
    const entries = [...this.waiting.values()];
    this.waiting.clear();
    for (const entry of entries) this.shipWaiting(entry);
  }

  private ship(target: NodeRef, items: Item[]): void {
    const transport = this.transport();
    let payload: Buffer;
    try {
      if (!transport) throw Object.assign(new Error('no transport'), { name: 'PeerUnavailableError' });
      payload = encodeParcel(items.map((i) => ({ unit: i.unit, payload: i.bytes })));
    } catch (error) {
      for (const i of items) i.done(error as Error);
      return;
    }
    transport.sendPayload(target, `${PARCEL_ID_PREFIX}${randomUUID()}`, payload, combined(items.map((i) => i.lease))).then(
      () => {
        for (const i of items) i.done();
      },
      (error: Error) => {
        for (const i of items) i.done(error);
      },
    );
  }
}
