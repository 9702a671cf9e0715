/**
 * The one codec for every application value (DESIGN.md "Values and delivery"): send and request bodies, replies and
 * the queued envelopes a relocation payload carries, local or remote. A value is encoded at the call and decoded at
 * the start of the receiving turn (or where a request settles), so neither side ever sees the other's later mutation
 * and a message means the same thing wherever its receiver lives.
 *
 * msgpackr with records + structured-clone extensions, chosen by measurement (tools/bench/codec.bench.ts): on Node 20
 * it round-trips small messages ~4x faster than `v8.serialize`, and its format does not depend on the Node version
 * (a rolling update back to an older Node still reads it). Round-trips: Buffer, Uint8Array (and other typed arrays),
 * Date, Map, Set, BigInt (any size), RegExp, Error, `undefined` fields and array holes, shared references and cycles.
 * Class instances arrive as plain objects (like structuredClone). Refused at the call: functions, symbols, WeakMap,
 * WeakSet, WeakRef, Promise — with an ArgumentError naming the path (`message.list[2].f`).
 */
import { addExtension, Packr } from 'msgpackr';
import { TRANSPORT_DEFAULTS } from '../transport/constants';
import { ArgumentError } from './errors';

/** Room an envelope needs beside its body in one frame (ids, keys, node refs, msgpack headers). */
export const ENVELOPE_RESERVE_BYTES = 64 * 1024;

/**
 * Largest encoded value (message or reply): it must fit one transport frame with its envelope (the transport's
 * default maxFrameBytes of 4 MiB minus ENVELOPE_RESERVE_BYTES). Larger data belongs in actor state or a store.
 */
export const MAX_VALUE_BYTES = TRANSPORT_DEFAULTS.maxFrameBytes - ENVELOPE_RESERVE_BYTES;

/** Thrown inside the packer for a value the codec refuses; becomes an ArgumentError with the path. */
class Refused extends Error {}

const refuse = (what: string) => (): never => {
  throw new Refused(`${what} cannot be encoded`);
};

// msgpackr would write these as {} (or nil for functions) and lose them silently; the codec refuses them instead.
// Extension type numbers are never written: `write` throws first.
for (const [Class, what] of [
  [WeakMap, 'a WeakMap'],
  [WeakSet, 'a WeakSet'],
  [WeakRef, 'a WeakRef'],
  [Promise, 'a Promise'],
] as const) {
  addExtension({ Class: Class as unknown as new () => unknown, type: 0x60, write: refuse(what), read: refuse(what) });
}

// records: objects and Maps stay distinct; structuredClone: cycles, shared references, Set, RegExp, Error;
// moreTypes: typed arrays keep their class (Uint8Array is not turned into a Buffer).
const packr = new Packr({ useRecords: true, structuredClone: true, moreTypes: true, writeFunction: refuse('a function') });

/** Encodes one application value; `field` names it in errors ('message', 'reply'). Throws ArgumentError. */
export function encodeValue(value: unknown, field: string, maxBytes: number = MAX_VALUE_BYTES): Uint8Array {
  let bytes: Uint8Array;
  try {
    bytes = packr.pack(value);
  } catch (error) {
    throw refusal(value, field, error);
  }
  if (bytes.length > maxBytes)
    throw new ArgumentError(field, `encoded value is ${bytes.length} bytes, over the ${maxBytes}-byte limit of one message (it must fit one transport frame)`);
  return bytes;
}

/** Decodes bytes produced by encodeValue (a fresh copy every time: nothing is shared with the sender). */
export function decodeValue(bytes: Uint8Array): unknown {
  return packr.unpack(bytes);
}

/** The error path only: walk the value to name the first part the codec refuses. */
function refusal(value: unknown, field: string, error: unknown): ArgumentError {
  const found = findUnencodable(value, field);
  if (found) return new ArgumentError(found.path, `${found.what} cannot be encoded (messages and replies are copied with one codec; see MAX_VALUE_BYTES and runtime/codec.ts)`);
  return new ArgumentError(field, `cannot be encoded: ${error instanceof Error ? error.message : String(error)}`);
}

const IDENT = /^[A-Za-z_$][\w$]*$/;

/** First path (in depth-first order) of a value the codec refuses, e.g. `message.list[2].f`. */
export function findUnencodable(value: unknown, path: string, seen = new Set<object>()): { path: string; what: string } | undefined {
  switch (typeof value) {
    case 'function':
      return { path, what: 'a function' };
    case 'symbol':
      return { path, what: 'a symbol' };
    case 'object':
      break;
    default:
      return undefined;
  }
  if (value === null || seen.has(value)) return undefined;
  seen.add(value);
  if (value instanceof WeakMap) return { path, what: 'a WeakMap' };
  if (value instanceof WeakSet) return { path, what: 'a WeakSet' };
  if (value instanceof WeakRef) return { path, what: 'a WeakRef' };
  if (value instanceof Promise) return { path, what: 'a Promise' };
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof Date || value instanceof RegExp) return undefined;
  if (value instanceof Map) {
    let i = 0;
    for (const [k, v] of value) {
      const found = findUnencodable(k, `${path}.<key ${i}>`, seen) ?? findUnencodable(v, `${path}.get(${keyText(k)})`, seen);
      if (found) return found;
      i++;
    }
    return undefined;
  }
  if (value instanceof Set) {
    let i = 0;
    for (const v of value) {
      const found = findUnencodable(v, `${path}.<member ${i++}>`, seen);
      if (found) return found;
    }
    return undefined;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnencodable(value[i], `${path}[${i}]`, seen);
      if (found) return found;
    }
    return undefined;
  }
  for (const key of Object.keys(value)) {
    const found = findUnencodable((value as Record<string, unknown>)[key], IDENT.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`, seen);
    if (found) return found;
  }
  return undefined;
}

function keyText(key: unknown): string {
  return typeof key === 'string' ? JSON.stringify(key) : typeof key === 'bigint' ? `${key}n` : String(key);
}
