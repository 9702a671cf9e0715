/**
 * The unit payload (§9): application state bytes, the unexecuted queue and timer registrations, sent straight
 * from source memory to the target (never through a store). The transport adds chunking and the sha256; parcels
 * (parcel.ts) carry many of these.
 *
 * A binary layout (issue [6/10]: state bytes stay bytes, no JSON or base64 around them, no zod on the hot path).
 * The encoder measures the payload, allocates it once and writes it with Buffer methods; the state bytes are copied
 * in as they are. Big-endian:
 *
 *   payload = u8 version (PAYLOAD_VERSION) | u8 kind | text unit | u32 objectCount | object… | u32 queueCount | item…
 *   object  = u8 mode | u8 has (1 spot, 2 state, 4 ext) | f64 gen | f64 auth | text key | text type
 *             | [text spot] | [bytes state] | u32 timerCount | timer… | [u32 extCount | (text name | bytes)…]
 *   timer   = u8 has (1 periodMs) | f64 remainingMs | [f64 periodMs] | text name
 *   item    = u8 k (0 msg, 1 tick) | text to | msg: bytes env | tick: text name
 *   text    = u32 byteLength | UTF-8;   bytes = u32 length | raw bytes
 *
 * kind and mode are codes (UNIT_KIND_CODE, HOSTED_MODE_CODE). The decoded state, extension bytes and bodies are
 * views into the payload's bytes, not copies (as MessagePack gave them before).
 *
 * A queued message's envelope is the one part that stays MessagePack (the options version 2 used), as envelopes are
 * everywhere else on the wire: its body (already encoded by runtime/codec.ts) is raw bytes in it, and fields the
 * Envelope type may gain travel without a layout change. Queued messages are rare on the hot path (most units move
 * with an empty queue).
 *
 * The decoder is strict: every length is checked against the bytes left before it is read, trailing bytes, unknown
 * codes and unknown `has` bits are refused, integers must be safe integers, numbers finite, text valid UTF-8. It
 * keeps the rules of the former validator (unknown envelope fields are kept as they came) and refuses anything else
 * with a PayloadError — never another error — that names the field path and the rule
 * (`payload.objects[3].timers[0].remainingMs must be a non-negative number`).
 *
 * The encoder refuses (with a PayloadError, the same rule) only what the layout cannot carry: another version, a
 * field of the wrong type, an unknown kind or mode, text with a lone surrogate (it would not come back the same).
 * A value of the right type that breaks a rule (a negative generation, an empty type) is written as it is; the
 * target refuses it.
 */
import { isUtf8 } from 'node:buffer';
import { Packr } from 'msgpackr';
import type { Envelope } from '../envelope';
import { isEnvelope } from '../protocol';
import type { HostedMode } from '../objects';
import type { TimerRegistration } from '../timers';
import type { UnitKind } from './protocol';
import { decodePayloadV2 } from './payload-v2';

/** 3: the binary layout above (2 was MessagePack of the whole payload, 1 carried state as base64 text). */
export const PAYLOAD_VERSION = 3;

export interface CapturedObject {
  readonly key: string;
  readonly type: string;
  readonly gen: number;
  readonly auth: number;
  readonly mode: HostedMode;
  readonly spot?: string;
  /** The adapter's bytes (PreserveStateWith); absent for RecreateOnRelocation and PerActor shells. */
  readonly state?: Uint8Array;
  readonly timers: readonly TimerRegistration[];
  /** Component state that moves with the object (objects.ts ObjectExtension: STREAM session bindings), by name. */
  readonly ext?: Readonly<Record<string, Uint8Array>>;
}

/** Queue items in their lane order; ticks are pending timer ticks (§12). */
export type CapturedItem = { readonly k: 'msg'; readonly to: string; readonly env: Envelope } | { readonly k: 'tick'; readonly to: string; readonly name: string };

export interface UnitPayload {
  readonly v: number;
  readonly unit: string;
  readonly kind: UnitKind;
  readonly objects: readonly CapturedObject[];
  readonly queue: readonly CapturedItem[];
}

/** A payload that is not one of this version; the message names the field path and the rule it breaks. */
export class PayloadError extends Error {
  override readonly name = 'PayloadError';
}

/** Wire codes, one for every value of the type (the compiler checks). A changed code is a new PAYLOAD_VERSION. */
const UNIT_KIND_CODE: Readonly<Record<UnitKind, number>> = { actor: 0, perActorShell: 1, spotWide: 2, instance: 3 };
const HOSTED_MODE_CODE: Readonly<Record<HostedMode, number>> = { entry: 0, member: 1, SpotWide: 2, PerActor: 3, instance: 4 };
/** Code → value; the encoder looks values up here too (indexOf: -1 for anything else, prototype names included). */
const byCode = <T extends string>(codes: Readonly<Record<T, number>>): readonly T[] => {
  const out: T[] = [];
  for (const [value, code] of Object.entries(codes) as [T, number][]) out[code] = value;
  return out;
};
const UNIT_KIND_CODES = byCode(UNIT_KIND_CODE);
const HOSTED_MODE_CODES = byCode(HOSTED_MODE_CODE);
const MSG = 0;
const TICK = 1;
const HAS_SPOT = 1;
const HAS_STATE = 2;
const HAS_EXT = 4;
const HAS_PERIOD = 1;

/** The fixed part of an object: mode, has, gen, auth. */
const OBJECT_FIXED_BYTES = 18;
/** Smallest encodings, so a count is checked against the bytes left before anything is allocated for it. */
const MIN_OBJECT_BYTES = OBJECT_FIXED_BYTES + 4 + 4 + 4;
const MIN_TIMER_BYTES = 1 + 8 + 4;
const MIN_ITEM_BYTES = 1 + 4 + 4;
const MIN_EXT_BYTES = 4 + 4;
/** A length prefix is a u32. */
const MAX_LENGTH = 0xffffffff;

/** Envelopes only (see above): the options payload version 2 used for the whole payload. */
const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

/** Paths are only built on the way out, so a valid payload costs no string work. */
/** Shared with payload-v2.ts (the version-2 reader keeps the same rules and messages). */
export function fail(path: string, rule: string): never {
  throw new PayloadError(`${path} ${rule}`);
}

export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** A record by name (objects.ts captureExtensions): an object, not a Date, Map or Buffer with keys of its own. */
const isPlainRecord = (v: unknown): v is Record<string, unknown> => isRecord(v) && Object.prototype.toString.call(v) === '[object Object]';
export const isText = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
/** A safe integer ≥ 0 (Number.isSafeInteger is false for anything but a number). */
export const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
/** Finite: NaN and ±Infinity are refused. */
export const isNonNegative = (v: unknown): v is number => Number.isFinite(v) && (v as number) >= 0;
export const isPositive = (v: unknown): v is number => Number.isFinite(v) && (v as number) > 0;
/**
 * `a:` or `s:` and at least one more character that is not a line terminator — exactly /^[as]:.+/ (`.` does not
 * match \n, \r, U+2028, U+2029), checked without a regex.
 */
export function isObjectKey(v: unknown): v is string {
  if (typeof v !== 'string' || v.length < 3) return false;
  const c0 = v.charCodeAt(0);
  if ((c0 !== 97 && c0 !== 115) || v.charCodeAt(1) !== 58) return false;
  const c2 = v.charCodeAt(2);
  return c2 !== 10 && c2 !== 13 && c2 !== 0x2028 && c2 !== 0x2029;
}

const RULE_KIND = `must be one of ${UNIT_KIND_CODES.join(', ')}`;
const RULE_MODE = `must be one of ${HOSTED_MODE_CODES.join(', ')}`;
const RULE_KEY = "must be an object key ('a:<id>' or 's:<id>')";
const RULE_NAME = 'must be a non-empty string';
const RULE_GEN = 'must be a non-negative safe integer';
const RULE_REMAINING = 'must be a non-negative number';
const RULE_PERIOD = 'must be a positive number when present';
const RULE_EXT = 'must map non-empty names to bytes';
const RULE_ITEM_KIND = "must be 'msg' or 'tick'";
const RULE_ENVELOPE = 'must be an envelope (id, to, gen, body bytes, from)';

// ── the encoder ───────────────────────────────────────────────────────────────────────────

/** The envelopes packed by the size pass, in queue order, for the write pass (cleared as they are written). */
const packedEnvelopes: Uint8Array[] = [];
const EMPTY = new Uint8Array(0);

/**
 * 4 + the UTF-8 length of a text field, or a negative number when it cannot be written: NOT_TEXT (the caller fails
 * with the field's own rule, which the target would refuse it by), LONE_SURROGATE, TOO_LONG.
 */
function textBytes(s: unknown): number {
  if (typeof s !== 'string') return NOT_TEXT;
  const n = Buffer.byteLength(s, 'utf8');
  // Only non-ASCII text can hold a lone surrogate, which UTF-8 would turn into U+FFFD.
  if (n !== s.length && !(s as unknown as { isWellFormed(): boolean }).isWellFormed()) return LONE_SURROGATE;
  return n > MAX_LENGTH ? TOO_LONG : 4 + n;
}
const NOT_TEXT = -1;
const LONE_SURROGATE = -2;
const TOO_LONG = -3;

/** The PayloadError for a negative textBytes `n`. */
function badText(n: number, path: string, rule: string): never {
  return fail(path, n === NOT_TEXT ? rule : n === LONE_SURROGATE ? 'must not contain a lone surrogate (it cannot be written as UTF-8)' : 'must be under 4 GiB of UTF-8');
}

/** Short ASCII text (ids, names, keys) is copied by a loop; a native call costs more below ~20 characters. */
const SHORT_TEXT = 24;

function writeText(buf: Buffer, o: number, s: string): number {
  const length = s.length;
  if (length <= SHORT_TEXT) {
    let at = o + 4;
    for (let i = 0; i < length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      buf[at++] = c;
    }
    if (at === o + 4 + length) {
      buf.writeUInt32BE(length, o);
      return at;
    }
  }
  const n = buf.write(s, o + 4, 'utf8');
  buf.writeUInt32BE(n, o);
  return o + 4 + n;
}

function writeBytes(buf: Buffer, o: number, b: Uint8Array): number {
  buf.writeUInt32BE(b.length, o);
  buf.set(b, o + 4);
  return o + 4 + b.length;
}

/**
 * Throws a PayloadError when the payload cannot be written in this layout (see the top of the file); one Buffer of
 * exactly the payload's size otherwise.
 */
export function encodePayload(payload: UnitPayload): Buffer {
  const p = payload as unknown;
  if (!isRecord(p)) fail('payload', 'must be an object');
  if (p.v !== PAYLOAD_VERSION) fail('payload.v', `must be ${PAYLOAD_VERSION} (this runtime's payload version)`);
  const kind = UNIT_KIND_CODES.indexOf(p.kind as UnitKind);
  if (kind < 0) fail('payload.kind', RULE_KIND);
  const objects = p.objects;
  if (!Array.isArray(objects)) fail('payload.objects', 'must be a non-empty array');
  const queue = p.queue;
  if (!Array.isArray(queue)) fail('payload.queue', 'must be an array');

  // The size pass: every field's type is checked here, so the write pass cannot fail half-way.
  let n = textBytes(p.unit);
  if (n < 0) badText(n, 'payload.unit', RULE_NAME);
  let size = 2 + n + 4 + 4;
  for (let i = 0; i < objects.length; i++) size += objectBytes(objects[i], i);
  const envelopes = packedEnvelopes;
  let packed = 0;
  for (let i = 0; i < queue.length; i++) {
    const q = queue[i] as unknown;
    if (!isRecord(q)) fail(`payload.queue[${i}]`, 'must be an object');
    if (q.k !== 'msg' && q.k !== 'tick') fail(`payload.queue[${i}].k`, RULE_ITEM_KIND);
    n = textBytes(q.to);
    if (n < 0) badText(n, `payload.queue[${i}].to`, 'must be a string');
    size += 1 + n;
    if (q.k === 'msg') {
      let env: Uint8Array;
      try {
        env = packr.pack(q.env);
      } catch (error) {
        fail(`payload.queue[${i}].env`, `${RULE_ENVELOPE}: ${error instanceof Error ? error.message : String(error)}`);
      }
      if (env.length > MAX_LENGTH) fail(`payload.queue[${i}].env`, 'must be under 4 GiB');
      envelopes[packed++] = env;
      size += 4 + env.length;
    } else {
      n = textBytes(q.name);
      if (n < 0) badText(n, `payload.queue[${i}].name`, RULE_NAME);
      size += n;
    }
  }

  const buf = Buffer.allocUnsafe(size);
  buf[0] = PAYLOAD_VERSION;
  buf[1] = kind;
  let o = writeText(buf, 2, p.unit as string);
  buf.writeUInt32BE(objects.length, o);
  o += 4;
  for (let i = 0; i < objects.length; i++) o = writeObject(buf, o, objects[i] as CapturedObject);
  buf.writeUInt32BE(queue.length, o);
  o += 4;
  packed = 0;
  for (let i = 0; i < queue.length; i++) {
    const q = queue[i] as CapturedItem;
    if (q.k === 'msg') {
      buf[o] = MSG;
      o = writeBytes(buf, writeText(buf, o + 1, q.to), envelopes[packed]!);
      envelopes[packed++] = EMPTY; // not kept alive until the next payload
    } else {
      buf[o] = TICK;
      o = writeText(buf, writeText(buf, o + 1, q.to), q.name);
    }
  }
  if (o !== size) throw new Error(`payload encoder wrote ${o} bytes of ${size}`); // a bug here, not bad input
  return buf;
}

/** Encoded size of one object; checks that every field can be written. */
function objectBytes(c: unknown, i: number): number {
  if (!isRecord(c)) fail(`payload.objects[${i}]`, 'must be an object');
  if (HOSTED_MODE_CODES.indexOf(c.mode as HostedMode) < 0) fail(`payload.objects[${i}].mode`, RULE_MODE);
  if (typeof c.gen !== 'number') fail(`payload.objects[${i}].gen`, RULE_GEN);
  if (typeof c.auth !== 'number') fail(`payload.objects[${i}].auth`, RULE_GEN);
  let n = textBytes(c.key);
  if (n < 0) badText(n, `payload.objects[${i}].key`, RULE_KEY);
  let size = OBJECT_FIXED_BYTES + n + 4;
  n = textBytes(c.type);
  if (n < 0) badText(n, `payload.objects[${i}].type`, RULE_NAME);
  size += n;
  if (c.spot !== undefined) {
    n = textBytes(c.spot);
    if (n < 0) badText(n, `payload.objects[${i}].spot`, 'must be a string when present');
    size += n;
  }
  if (c.state !== undefined) {
    if (!(c.state instanceof Uint8Array)) fail(`payload.objects[${i}].state`, 'must be bytes when present');
    if (c.state.length > MAX_LENGTH) fail(`payload.objects[${i}].state`, 'must be under 4 GiB');
    size += 4 + c.state.length;
  }
  const timers = c.timers;
  if (!Array.isArray(timers)) fail(`payload.objects[${i}].timers`, 'must be an array');
  for (let j = 0; j < timers.length; j++) {
    const t = timers[j] as unknown;
    if (!isRecord(t)) fail(`payload.objects[${i}].timers[${j}]`, 'must be an object');
    if (typeof t.remainingMs !== 'number') fail(`payload.objects[${i}].timers[${j}].remainingMs`, RULE_REMAINING);
    if (t.periodMs !== undefined && typeof t.periodMs !== 'number') fail(`payload.objects[${i}].timers[${j}].periodMs`, RULE_PERIOD);
    n = textBytes(t.name);
    if (n < 0) badText(n, `payload.objects[${i}].timers[${j}].name`, RULE_NAME);
    size += 1 + 8 + (t.periodMs !== undefined ? 8 : 0) + n;
  }
  if (c.ext !== undefined) {
    if (!isPlainRecord(c.ext)) fail(`payload.objects[${i}].ext`, 'must be a record when present');
    size += 4;
    for (const name of Object.keys(c.ext)) {
      const bytes = c.ext[name];
      if (!(bytes instanceof Uint8Array)) fail(`payload.objects[${i}].ext`, RULE_EXT);
      if (bytes.length > MAX_LENGTH) fail(`payload.objects[${i}].ext.${name}`, 'must be under 4 GiB');
      n = textBytes(name);
      if (n < 0) badText(n, `payload.objects[${i}].ext`, RULE_EXT);
      size += n + 4 + bytes.length;
    }
  }
  return size;
}

function writeObject(buf: Buffer, o: number, c: CapturedObject): number {
  buf[o] = HOSTED_MODE_CODES.indexOf(c.mode);
  buf[o + 1] = (c.spot !== undefined ? HAS_SPOT : 0) | (c.state !== undefined ? HAS_STATE : 0) | (c.ext !== undefined ? HAS_EXT : 0);
  buf.writeDoubleBE(c.gen, o + 2);
  buf.writeDoubleBE(c.auth, o + 10);
  o = writeText(buf, writeText(buf, o + OBJECT_FIXED_BYTES, c.key), c.type);
  if (c.spot !== undefined) o = writeText(buf, o, c.spot);
  if (c.state !== undefined) o = writeBytes(buf, o, c.state);
  buf.writeUInt32BE(c.timers.length, o);
  o += 4;
  for (const t of c.timers) {
    if (t.periodMs !== undefined) {
      buf[o] = HAS_PERIOD;
      buf.writeDoubleBE(t.remainingMs, o + 1);
      buf.writeDoubleBE(t.periodMs, o + 9);
      o = writeText(buf, o + 17, t.name);
    } else {
      buf[o] = 0;
      buf.writeDoubleBE(t.remainingMs, o + 1);
      o = writeText(buf, o + 9, t.name);
    }
  }
  if (c.ext !== undefined) {
    const names = Object.keys(c.ext);
    buf.writeUInt32BE(names.length, o);
    o += 4;
    for (const name of names) o = writeBytes(buf, writeText(buf, o, name), c.ext[name]!);
  }
  return o;
}

// ── the decoder ───────────────────────────────────────────────────────────────────────────

const fromCharCode = String.fromCharCode;
/** Text up to this many bytes is decoded in JS when it is ASCII. */
const SHORT_TEXT_BYTES = 16;

/**
 * Reads the layout with every length checked first. A read that does not fit returns undefined and leaves the
 * reason in `why`, so the caller names the field (paths are built only on failure).
 */
class Reader {
  o = 0;
  why = '';
  constructor(readonly b: Buffer) {}

  get left(): number {
    return this.b.length - this.o;
  }

  private short(needed: number, what: string): undefined {
    this.why = `is cut short (${what} needs ${needed} byte${needed === 1 ? '' : 's'}, ${this.left} left)`;
    return undefined;
  }

  u8(): number | undefined {
    if (this.o >= this.b.length) return this.short(1, 'a u8');
    return this.b[this.o++];
  }

  u32(): number | undefined {
    if (this.left < 4) return this.short(4, 'a u32');
    const v = this.b.readUInt32BE(this.o);
    this.o += 4;
    return v;
  }

  f64(): number | undefined {
    if (this.left < 8) return this.short(8, 'an f64');
    const v = this.b.readDoubleBE(this.o);
    this.o += 8;
    return v;
  }

  /** A view into the payload's bytes (no copy), as MessagePack gave before. */
  bytes(): Buffer | undefined {
    const n = this.u32();
    if (n === undefined) return undefined;
    if (n > this.left) return this.short(n, 'its length');
    const start = this.o;
    this.o += n;
    return this.b.subarray(start, this.o);
  }

  text(): string | undefined {
    const n = this.u32();
    if (n === undefined) return undefined;
    if (n > this.left) return this.short(n, 'its length');
    const { b } = this;
    const start = this.o;
    const end = (this.o += n);
    if (n <= SHORT_TEXT_BYTES) {
      let bits = 0;
      for (let i = start; i < end; i++) bits |= b[i]!;
      if (bits < 0x80) {
        // ASCII (ids, keys, names): four characters per call, no native call (a third of the time of toString).
        let s = '';
        let i = start;
        for (; i + 4 <= end; i += 4) s += fromCharCode(b[i]!, b[i + 1]!, b[i + 2]!, b[i + 3]!);
        const rest = end - i;
        return rest === 0 ? s : rest === 1 ? s + fromCharCode(b[i]!) : rest === 2 ? s + fromCharCode(b[i]!, b[i + 1]!) : s + fromCharCode(b[i]!, b[i + 1]!, b[i + 2]!);
      }
    }
    const s = b.toString('utf8', start, end);
    // The UTF-8 decoder replaces what is not UTF-8 by U+FFFD; only then is the text checked (U+FFFD may be real).
    if (s.indexOf('\ufffd') >= 0 && !isUtf8(b.subarray(start, end))) {
      this.why = 'must be valid UTF-8';
      return undefined;
    }
    return s;
  }

  /** A count of items of at least `min` bytes each, that the bytes left can hold (nothing huge is allocated). */
  count(min: number): number | undefined {
    const n = this.u32();
    if (n === undefined) return undefined;
    if (n * min > this.left) {
      this.why = `counts ${n} items, more than the ${this.left} bytes left can hold`;
      return undefined;
    }
    return n;
  }
}

/** Throws a PayloadError (and nothing else) on anything that is not a payload of this version. */
export function decodePayload(bytes: Uint8Array): UnitPayload {
  const r = new Reader(Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  if (r.b.length === 0) fail('payload', 'is empty');
  const v = r.b[0]!;
  r.o = 1;
  if (v !== PAYLOAD_VERSION) {
    // Version 2 was a MessagePack map (fixmap, map16, map32): still read, so hosts on the older zlink can move their
    // units here during a rolling update (payload-v2.ts). Anything else is refused.
    if ((v >= 0x80 && v <= 0x8f) || v === 0xde || v === 0xdf) return decodePayloadV2(r.b);
    fail('payload.v', `must be ${PAYLOAD_VERSION} (this runtime's payload version) or a version-2 MessagePack map, got version ${v}`);
  }
  const kindCode = r.u8();
  if (kindCode === undefined) fail('payload.kind', r.why);
  const kind = UNIT_KIND_CODES[kindCode];
  if (kind === undefined) fail('payload.kind', RULE_KIND);
  const unit = r.text();
  if (!isText(unit)) fail('payload.unit', unit === undefined ? r.why : RULE_NAME);
  const objectCount = r.count(MIN_OBJECT_BYTES);
  if (objectCount === undefined) fail('payload.objects', r.why);
  if (objectCount === 0) fail('payload.objects', 'must be a non-empty array');
  const objects: CapturedObject[] = new Array(objectCount);
  for (let i = 0; i < objectCount; i++) objects[i] = readObject(r, i);
  const queueCount = r.count(MIN_ITEM_BYTES);
  if (queueCount === undefined) fail('payload.queue', r.why);
  const queue: CapturedItem[] = new Array(queueCount);
  for (let i = 0; i < queueCount; i++) queue[i] = readItem(r, i);
  if (r.left !== 0) fail('payload', `has ${r.left} trailing bytes after its last field`);
  return { v: PAYLOAD_VERSION, unit, kind, objects, queue };
}

function readObject(r: Reader, i: number): CapturedObject {
  if (r.left < OBJECT_FIXED_BYTES) fail(`payload.objects[${i}]`, `is cut short (its fixed part needs ${OBJECT_FIXED_BYTES} bytes, ${r.left} left)`);
  const { b } = r;
  const mode = HOSTED_MODE_CODES[b[r.o]!];
  const has = b[r.o + 1]!;
  const gen = b.readDoubleBE(r.o + 2);
  const auth = b.readDoubleBE(r.o + 10);
  r.o += OBJECT_FIXED_BYTES;
  if (mode === undefined) fail(`payload.objects[${i}].mode`, RULE_MODE);
  if ((has & ~(HAS_SPOT | HAS_STATE | HAS_EXT)) !== 0) fail(`payload.objects[${i}].has`, `must only mark spot (1), state (2), ext (4), got ${has}`);
  if (!isCount(gen)) fail(`payload.objects[${i}].gen`, RULE_GEN);
  if (!isCount(auth)) fail(`payload.objects[${i}].auth`, RULE_GEN);
  const key = r.text();
  if (!isObjectKey(key)) fail(`payload.objects[${i}].key`, key === undefined ? r.why : RULE_KEY);
  const type = r.text();
  if (!isText(type)) fail(`payload.objects[${i}].type`, type === undefined ? r.why : RULE_NAME);
  let spot: string | undefined;
  if ((has & HAS_SPOT) !== 0) {
    spot = r.text();
    if (spot === undefined) fail(`payload.objects[${i}].spot`, r.why);
  }
  let state: Buffer | undefined;
  if ((has & HAS_STATE) !== 0) {
    state = r.bytes();
    if (state === undefined) fail(`payload.objects[${i}].state`, r.why);
  }
  const timerCount = r.count(MIN_TIMER_BYTES);
  if (timerCount === undefined) fail(`payload.objects[${i}].timers`, r.why);
  const timers: TimerRegistration[] = new Array(timerCount);
  for (let j = 0; j < timerCount; j++) timers[j] = readTimer(r, i, j);
  const ext = (has & HAS_EXT) !== 0 ? readExt(r, i) : undefined;
  // Fields in the order of the type; the optional ones only when present (absent, never `undefined`).
  const out = { key, type, gen, auth, mode } as { -readonly [K in keyof CapturedObject]: CapturedObject[K] };
  if (spot !== undefined) out.spot = spot;
  if (state !== undefined) out.state = state;
  out.timers = timers;
  if (ext !== undefined) out.ext = ext;
  return out;
}

function readTimer(r: Reader, i: number, j: number): TimerRegistration {
  const has = r.u8();
  if (has === undefined) fail(`payload.objects[${i}].timers[${j}]`, r.why);
  if ((has & ~HAS_PERIOD) !== 0) fail(`payload.objects[${i}].timers[${j}].has`, `must only mark periodMs (1), got ${has}`);
  const remainingMs = r.f64();
  if (!isNonNegative(remainingMs)) fail(`payload.objects[${i}].timers[${j}].remainingMs`, remainingMs === undefined ? r.why : RULE_REMAINING);
  let periodMs: number | undefined;
  if (has === HAS_PERIOD) {
    periodMs = r.f64();
    if (!isPositive(periodMs)) fail(`payload.objects[${i}].timers[${j}].periodMs`, periodMs === undefined ? r.why : RULE_PERIOD);
  }
  const name = r.text();
  if (!isText(name)) fail(`payload.objects[${i}].timers[${j}].name`, name === undefined ? r.why : RULE_NAME);
  return periodMs === undefined ? { name, remainingMs } : { name, remainingMs, periodMs };
}

function readExt(r: Reader, i: number): Record<string, Uint8Array> {
  const count = r.count(MIN_EXT_BYTES);
  if (count === undefined) fail(`payload.objects[${i}].ext`, r.why);
  const ext: Record<string, Uint8Array> = {};
  for (let j = 0; j < count; j++) {
    const name = r.text();
    if (!isText(name)) fail(`payload.objects[${i}].ext`, name === undefined ? r.why : RULE_EXT);
    const bytes = r.bytes();
    if (bytes === undefined) fail(`payload.objects[${i}].ext.${name}`, r.why);
    if (Object.prototype.hasOwnProperty.call(ext, name)) fail(`payload.objects[${i}].ext`, `must not name '${name}' twice`);
    // An own field even for '__proto__' (assigning it would set the prototype instead).
    if (name === '__proto__') Object.defineProperty(ext, name, { value: bytes, enumerable: true, writable: true, configurable: true });
    else ext[name] = bytes;
  }
  return ext;
}

function readItem(r: Reader, i: number): CapturedItem {
  const k = r.u8();
  if (k === undefined) fail(`payload.queue[${i}]`, r.why);
  if (k !== MSG && k !== TICK) fail(`payload.queue[${i}].k`, RULE_ITEM_KIND);
  const to = r.text();
  if (to === undefined) fail(`payload.queue[${i}].to`, r.why);
  if (k === TICK) {
    const name = r.text();
    if (!isText(name)) fail(`payload.queue[${i}].name`, name === undefined ? r.why : RULE_NAME);
    return { k: 'tick', to, name };
  }
  const length = r.u32();
  if (length === undefined) fail(`payload.queue[${i}].env`, r.why);
  if (length > r.left) fail(`payload.queue[${i}].env`, `is cut short (its length needs ${length} bytes, ${r.left} left)`);
  if (length === 0) fail(`payload.queue[${i}].env`, RULE_ENVELOPE);
  const start = r.o;
  r.o += length;
  let env: unknown;
  try {
    // In place (msgpackr reads start..end of the payload's bytes and refuses what does not end at `end`): the body
    // stays a view into the payload, as the state does.
    env = packr.unpack(r.b, { start, end: r.o });
  } catch (error) {
    fail(`payload.queue[${i}].env`, `${RULE_ENVELOPE}: not MessagePack (${error instanceof Error ? error.message : String(error)})`);
  }
  // The same hand check as every envelope on the wire (runtime/protocol.ts); the envelope is kept as it came.
  if (!isEnvelope(env)) fail(`payload.queue[${i}].env`, RULE_ENVELOPE);
  return { k: 'msg', to, env: env as Envelope };
}
