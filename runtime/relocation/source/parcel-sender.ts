/**
 * Source side of parcels (issue [6/10] "a pipeline, not 100k little conversations"): the payloads of units that
 * seal in the same tick for the same target go out as one transport payload (one chunked transfer, one checksum
 * over the whole, one intake acknowledgement), each unit inside with its own bytes and sha256 (parcel.ts). Every
 * unit still learns its own outcome: the parcel's delivery (or failure) is reported to each unit it carried, and
 * the target answers each unit separately (relay-ready or an explicit failure).
 */
import { randomUUID } from 'node:crypto';
import type { NodeRef } from '../../../vocabulary';
import type { BudgetLease, Transport } from '../../../transport/types';
import { nodeKey } from '../../keys';
import { encodeParcel } from '../parcel';

/** Bytes of unit payloads per parcel: the transport chunks it; small enough that one parcel is not a long stall. */
export const PARCEL_MAX_BYTES = 4 * 1024 * 1024;
/**
 * Units per parcel. A parcel is encoded in one task here and restored in one task on the target, and its units
 * hear relay-ready together: a bound on units keeps each of those tasks short however many units seal in one turn
 * (with the default seal window, at most 128 do), while the target's machine per parcel still costs < 1 µs per unit
 * at 256 (tools/bench/unit-machines.bench.ts).
 */
export const PARCEL_MAX_UNITS = 256;
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

export class ParcelSender {
  private readonly waiting = new Map<string, { target: NodeRef; items: Item[] }>();
  private scheduled: NodeJS.Immediate | undefined;

  constructor(private readonly transport: () => Transport | undefined) {}

  /**
   * `done()` once the target acknowledged intake of the parcel that carried this unit (§7 budget release), or
   * `done(error)` when it failed (PeerUnavailableError / PayloadRejectedError: nothing of it was taken).
   */
  send(target: NodeRef, unit: string, bytes: Buffer, lease: BudgetLease, done: (error?: Error) => void): void {
    const key = nodeKey(target);
    let entry = this.waiting.get(key);
    if (!entry) this.waiting.set(key, (entry = { target, items: [] }));
    entry.items.push({ unit, bytes, lease, done });
    // setImmediate: every unit that reaches its seal in this I/O turn joins the same parcel.
    this.scheduled ??= setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = undefined;
    const groups = [...this.waiting.values()];
    this.waiting.clear();
    for (const { target, items } of groups) {
      let parcel: Item[] = [];
      let bytes = 0;
      for (const item of items) {
        if (parcel.length > 0 && (bytes + item.bytes.length > PARCEL_MAX_BYTES || parcel.length === PARCEL_MAX_UNITS)) {
          this.ship(target, parcel);
          parcel = [];
          bytes = 0;
        }
        parcel.push(item);
        bytes += item.bytes.length;
      }
      this.ship(target, parcel);
    }
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
