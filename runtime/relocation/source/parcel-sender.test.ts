import type { NodeRef } from '../../../vocabulary';
import type { BudgetLease, Transport } from '../../../transport/types';
import { decodeParcel } from '../parcel';
import { PARCEL_ID_PREFIX, PARCEL_MAX_BYTES, PARCEL_MAX_UNITS, PARCEL_MIN_UNITS, ParcelSender, parcelUnitsFor } from './parcel-sender';

const target: NodeRef = { nodeId: 't', lifecycleGeneration: 1 };
/** The callback API as a promise, for the tests. */
const sendUnit = (sender: ParcelSender, u: string, bytes: Buffer, l: BudgetLease, unitsPerParcel?: number) =>
  new Promise<void>((resolve, reject) => sender.send(target, u, bytes, l, (error) => (error ? reject(error) : resolve()), unitsPerParcel ?? PARCEL_MIN_UNITS));
const lease = (released: string[], name: string): BudgetLease => ({ bytes: 10, grow: async () => undefined, release: () => void released.push(name) });
/** A sender over a transport that takes every parcel (releasing its lease, as at the intake ack); `sent` lists each parcel's units. */
function recording(): { sender: ParcelSender; sent: string[][] } {
  const sent: string[][] = [];
  const transport = {
    sendPayload: async (_peer: NodeRef, _id: string, bytes: Buffer, l: BudgetLease) => {
      sent.push(decodeParcel(bytes).map((u) => u.unit));
      l.release();
    },
  } as unknown as Transport;
  return { sender: new ParcelSender(() => transport), sent };
}

describe('ParcelSender', () => {
  test('units handed over in one turn go as one payload; each learns the outcome; leases are released once', async () => {
    const sent: { id: string; bytes: Buffer; lease: BudgetLease }[] = [];
    const transport = {
      sendPayload: async (_peer: NodeRef, id: string, bytes: Buffer, l: BudgetLease) => {
        sent.push({ id, bytes, lease: l });
        l.release(); // the transport releases at the intake ack
      },
    } as unknown as Transport;
    const released: string[] = [];
    const sender = new ParcelSender(() => transport);
    await Promise.all(['u1', 'u2', 'u3'].map((u) => sendUnit(sender, u, Buffer.from(`state of ${u}`), lease(released, u))));
    expect(sent).toHaveLength(1);
    expect(sent[0]!.id.startsWith(PARCEL_ID_PREFIX)).toBe(true);
    expect(decodeParcel(sent[0]!.bytes).map((u) => u.ok && [u.unit, u.payload.toString()])).toEqual([
      ['u1', 'state of u1'],
      ['u2', 'state of u2'],
      ['u3', 'state of u3'],
    ]);
    sent[0]!.lease.release();
    expect(released.sort()).toEqual(['u1', 'u2', 'u3']);
  });

  test(`units sealed in one turn beyond a parcel's ${PARCEL_MIN_UNITS} go as several parcels, in order (each one a short task)`, async () => {
    const { sender, sent } = recording();
    const units = Array.from({ length: PARCEL_MIN_UNITS * 2 + 1 }, (_, i) => `u${i}`);
    await Promise.all(units.map((u) => sendUnit(sender, u, Buffer.from(u), lease([], u))));
    expect(sent.map((parcel) => parcel.length)).toEqual([PARCEL_MIN_UNITS, PARCEL_MIN_UNITS, 1]);
    expect(sent.flat()).toEqual(units);
  });

  test('a parcel goes as soon as it holds the units asked for, in the step that sealed them; the rest at the end of the turn', async () => {
    const { sender, sent } = recording();
    const units = Array.from({ length: 64 + 2 }, (_, i) => `u${i}`);
    const done = units.map((u) => sendUnit(sender, u, Buffer.from(u), lease([], u), 64));
    expect(sent).toEqual([units.slice(0, 64)]); // synchronously: the target can start on it now
    await Promise.all(done);
    expect(sent).toEqual([units.slice(0, 64), units.slice(64)]);
  });

  test(`never more than ${PARCEL_MAX_UNITS} units in a parcel, whatever is asked`, async () => {
    const { sender, sent } = recording();
    const units = Array.from({ length: PARCEL_MAX_UNITS + 1 }, (_, i) => `u${i}`);
    await Promise.all(units.map((u) => sendUnit(sender, u, Buffer.from(u), lease([], u), 10_000)));
    expect(sent.map((parcel) => parcel.length)).toEqual([PARCEL_MAX_UNITS, 1]);
  });

  test('units per parcel: half the seal window, at least 32 and at most 128', () => {
    expect([1, 39, 64, 65, 128, 200, 256, 512].map(parcelUnitsFor)).toEqual([32, 32, 32, 32, 64, 100, 128, 128]);
  });

  test(`a unit that would take a parcel over ${PARCEL_MAX_BYTES} bytes starts the next one`, async () => {
    const { sender, sent } = recording();
    const big = Buffer.alloc(Math.floor(PARCEL_MAX_BYTES * 0.4));
    await Promise.all(['a', 'b', 'c', 'd'].map((u) => sendUnit(sender, u, big, lease([], u))));
    expect(sent).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
  });

  test('a refused parcel fails every unit it carried', async () => {
    const transport = {
      sendPayload: async () => {
        throw Object.assign(new Error('checksum mismatch'), { name: 'PayloadRejectedError' });
      },
    } as unknown as Transport;
    const sender = new ParcelSender(() => transport);
    const outcomes = await Promise.allSettled(['a', 'b'].map((u) => sendUnit(sender, u, Buffer.from(u), lease([], u))));
    expect(outcomes.map((o) => o.status === 'rejected' && (o.reason as Error).name)).toEqual(['PayloadRejectedError', 'PayloadRejectedError']);
  });
});
