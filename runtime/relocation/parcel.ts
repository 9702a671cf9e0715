/**
 * Parcels (issue [6/10], DESIGN "Relocation at scale"): the payloads of units that seal together for the same
 * target travel as one transport payload (up to 32 units, source/parcel-sender.ts) instead of one each. Per-unit
 * semantics do not change: every unit keeps its own bytes and its own checksum, so a corrupt unit fails alone (§13:
 * the target answers that unit with an explicit failure before relay-ready and the source restores it), while the
 * others restore.
 *
 * Binary layout (big-endian), never JSON or base64 — state bytes stay bytes:
 *
 *   u8 magic 0x50 ('P') | u8 version (2) | u32 unitCount (1..MAX_PARCEL_UNITS)
 *   per unit: u8 idLength (1..255) | id (UTF-8) | u32 CRC-32 of (id, payload) | u32 length | payload
 *
 * Version 1 (decoded, never written) had 32 bytes of sha256 of (id, payload) where version 2 has the CRC-32: a
 * target of this version still takes parcels from a source of the previous one (a rolling update moves old → new).
 * The unit's checksum tells which unit of a parcel is damaged, not whether the parcel is: the transport already
 * checks the sha256 of the whole parcel (transport/chunks.ts) and refuses a parcel that fails it. A CRC-32 does the
 * per-unit part in ~0.4 µs instead of ~2.7 µs for a sha256 per ~1 KiB unit, on each side (issue [6/10]).
 *
 * The decoder is strict: a wrong magic or version, a count out of range, a truncated or overlong field, a bad
 * UTF-8 id, a duplicate unit id or trailing bytes is a ParcelError for the whole parcel (nothing is restored from
 * it); a unit whose bytes do not match its own checksum is reported as that unit's failure only.
 */
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';

export const PARCEL_MAGIC = 0x50;
/** The version this runtime writes. */
export const PARCEL_VERSION = 2;
/** The previous version (sha256 per unit): still decoded. */
const PARCEL_VERSION_SHA256 = 1;
/** Units per parcel: bounded so one bad parcel cannot claim unbounded per-unit work. */
export const MAX_PARCEL_UNITS = 65_536;
const CRC32_BYTES = 4;
const SHA256_BYTES = 32;
const HEADER_BYTES = 6;

export class ParcelError extends Error {
  override readonly name = 'ParcelError';
}

export interface ParcelUnit {
  readonly unit: string;
  readonly payload: Uint8Array;
}

export type DecodedUnit = { readonly unit: string; readonly ok: true; readonly payload: Buffer } | { readonly unit: string; readonly ok: false; readonly error: string };

/** The unit's own checksum covers its id too, so bytes cannot be restored under another unit's name. */
const unitChecksum = (id: Uint8Array, payload: Uint8Array): number => crc32(payload, crc32(id));
/** Version 1's checksum of a unit. */
const unitSha256 = (id: Uint8Array, payload: Uint8Array): Buffer => createHash('sha256').update(id).update(payload).digest();

export function encodeParcel(units: readonly ParcelUnit[]): Buffer {
  if (units.length < 1 || units.length > MAX_PARCEL_UNITS) throw new RangeError(`a parcel holds 1..${MAX_PARCEL_UNITS} units, got ${units.length}`);
  const ids = units.map((u) => Buffer.from(u.unit, 'utf8'));
  let size = HEADER_BYTES;
  for (let i = 0; i < units.length; i++) {
    const id = ids[i]!;
    if (id.length < 1 || id.length > 255) throw new RangeError(`unit id must be 1..255 UTF-8 bytes: ${units[i]!.unit}`);
    if (units[i]!.payload.length > 0xffffffff) throw new RangeError(`unit ${units[i]!.unit} payload exceeds 4 GiB`);
    size += 1 + id.length + CRC32_BYTES + 4 + units[i]!.payload.length;
  }
  const buf = Buffer.allocUnsafe(size);
  buf[0] = PARCEL_MAGIC;
  buf[1] = PARCEL_VERSION;
  buf.writeUInt32BE(units.length, 2);
  let o = HEADER_BYTES;
  for (let i = 0; i < units.length; i++) {
    const id = ids[i]!;
    const payload = units[i]!.payload;
    buf[o++] = id.length;
    id.copy(buf, o);
    o += id.length;
    buf.writeUInt32BE(unitChecksum(id, payload), o);
    o += CRC32_BYTES;
    buf.writeUInt32BE(payload.length, o);
    o += 4;
    buf.set(payload, o);
    o += payload.length;
  }
  return buf;
}

/** Whether `bytes` starts like a parcel (a target may receive parcels and older single-unit payloads). */
export function isParcel(bytes: Uint8Array): boolean {
  return bytes.length >= HEADER_BYTES && bytes[0] === PARCEL_MAGIC && (bytes[1] === PARCEL_VERSION || bytes[1] === PARCEL_VERSION_SHA256);
}

export function decodeParcel(bytes: Buffer): DecodedUnit[] {
  if (bytes.length < HEADER_BYTES) throw new ParcelError('parcel shorter than its header');
  if (bytes[0] !== PARCEL_MAGIC) throw new ParcelError('bad parcel magic');
  const version = bytes[1];
  if (version !== PARCEL_VERSION && version !== PARCEL_VERSION_SHA256) throw new ParcelError(`unsupported parcel version ${version}`);
  const checksumBytes = version === PARCEL_VERSION ? CRC32_BYTES : SHA256_BYTES;
  const count = bytes.readUInt32BE(2);
  if (count < 1 || count > MAX_PARCEL_UNITS) throw new ParcelError(`parcel unit count ${count} out of range`);
  const out: DecodedUnit[] = [];
  const seen = new Set<string>();
  let o = HEADER_BYTES;
  for (let i = 0; i < count; i++) {
    if (o + 1 > bytes.length) throw new ParcelError(`parcel truncated at unit ${i}`);
    const idLength = bytes[o++]!;
    if (idLength < 1) throw new ParcelError(`unit ${i}: empty id`);
    if (o + idLength + checksumBytes + 4 > bytes.length) throw new ParcelError(`parcel truncated at unit ${i}`);
    const idBytes = bytes.subarray(o, o + idLength);
    // Checked on the bytes (no re-encoded copy per unit): invalid UTF-8 would decode with replacement characters.
    if (!isUtf8(idBytes)) throw new ParcelError(`unit ${i}: id is not UTF-8`);
    const unit = idBytes.toString('utf8');
    if (seen.has(unit)) throw new ParcelError(`unit ${unit} appears twice`);
    seen.add(unit);
    o += idLength;
    const at = o;
    o += checksumBytes;
    const length = bytes.readUInt32BE(o);
    o += 4;
    if (o + length > bytes.length) throw new ParcelError(`unit ${unit}: payload truncated`);
    const payload = bytes.subarray(o, o + length);
    o += length;
    // §13: a unit whose bytes differ from its checksum is never restored from; only that unit fails.
    const intact = version === PARCEL_VERSION ? unitChecksum(idBytes, payload) === bytes.readUInt32BE(at) : unitSha256(idBytes, payload).equals(bytes.subarray(at, at + SHA256_BYTES));
    if (intact) out.push({ unit, ok: true, payload });
    else out.push({ unit, ok: false, error: `unit ${unit}: checksum mismatch` });
  }
  if (o !== bytes.length) throw new ParcelError(`${bytes.length - o} trailing bytes after the last unit`);
  return out;
}
