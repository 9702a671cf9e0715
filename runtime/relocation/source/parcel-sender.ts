/**
 * Source side of parcels (issue [6/10] "a pipeline, not 100k little conversations"): the payloads of units that
 * seal together for the same target go out as one transport payload (one chunked transfer, one checksum over the
 * whole, one intake acknowledgement), each unit inside with its own bytes and checksum (parcel.ts). Every unit still
 * learns its own outcome: the parcel's delivery (or failure) is reported to each unit it carried, and the target
 * answers each unit separately (relay-ready or an explicit failure).
 *
 * A parcel goes as soon as it is full (PARCEL_MAX_UNITS), in the middle of the step that seals its units; what is left
 * goes at the end of the I/O turn. So the seal window moves as a stream of small parcels, not as one convoy: the
 * target restores the first parcel while this host seals the next, and the first units' relay-ready comes back while
 * the last ones are still on their way (both hosts busy at once instead of in turn).
 */
import { randomUUID } from 'node:crypto';
import type { NodeRef } from '../../../vocabulary';
import type { BudgetLease, Transport } from '../../../transport/types';
import { nodeKey } from '../../keys';
import { encodeParcel } from '../parcel';

/** Bytes of unit payloads per parcel: the transport chunks it; small enough that one parcel is not a long stall. */
export const PARCEL_MAX_BYTES = 4 * 1024 * 1024;
/**
 * Units per parcel. With at most 128 units sealed at once (seal-gate.ts) that is about four parcels in flight, each
 * restored in a short task of its own on the target. Measured with `npm run bench -- --n 100000` (2 cores, six
 * alternated pairs): one parcel per turn (~115 units: the seal window moved as one convoy, the hosts busy in turn)
 * 9.4–11.5 s, S0→S1 p99 41–55 ms; parcels of 32 with the target's intake in turns of its own (target/inbound.ts)
 * 8.8–12.1 s (median 9.6 against 10.6), p99 36–46 ms. Parcels of 16 cost more per parcel on the target than they gained.
 */
export const PARCEL_MAX_UNITS = 32;
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
  /** Units waiting for their parcel, per target (never more than PARCEL_MAX_UNITS / PARCEL_MAX_BYTES). */
  private readonly waiting = new Map<string, Waiting>();
  private scheduled: NodeJS.Immediate | undefined;

  constructor(private readonly transport: () => Transport | undefined) {}

  /**
   * `done()` once the target acknowledged intake of the parcel that carried this unit (§7 budget release), or
   * `done(error)` when it failed (PeerUnavailableError / PayloadRejectedError: nothing of it was taken).
   */
  send(target: NodeRef, unit: string, bytes: Buffer, lease: BudgetLease, done: (error?: Error) => void): void {
    const key = nodeKey(target);
    let entry = this.waiting.get(key);
    if (!entry) this.waiting.set(key, (entry = { target, items: [], bytes: 0 }));
    if (entry.bytes + bytes.length > PARCEL_MAX_BYTES) this.shipWaiting(entry);
    entry.items.push({ unit, bytes, lease, done });
    entry.bytes += bytes.length;
    // Full: it goes now, and the target starts on it while this step seals the next units.
    if (entry.items.length === PARCEL_MAX_UNITS) return this.shipWaiting(entry);
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
