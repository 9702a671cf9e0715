/**
 * Reading unit payloads of version 2 (MessagePack maps), written by zlink before the binary layout of version 3
 * (payload.ts). A rolling update that also upgrades zlink moves units from hosts on the older version to hosts on
 * this one, so the target still reads what they send; it never writes version 2 (a unit moving the other way is
 * refused by the older host and restored on its source, §11).
 *
 * This is the version-2 decoder as it was: msgpackr, then a hand-written strict validator that accepts exactly what
 * the former zod schema accepted (unknown fields dropped, numbers finite, integers safe) and refuses anything else
 * with a PayloadError naming the field path and the rule.
 */
import { Packr } from 'msgpackr';
import type { Envelope } from '../envelope';
import { isEnvelope } from '../protocol';
import type { HostedMode } from '../objects';
import type { TimerRegistration } from '../timers';
import { fail, isCount, isNonNegative, isObjectKey, isPositive, isRecord, isText, PAYLOAD_VERSION, PayloadError, type CapturedItem, type CapturedObject, type UnitPayload } from './payload';
import type { UnitKind } from './protocol';

export const LEGACY_PAYLOAD_VERSION = 2;

const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

/** Throws a PayloadError (and nothing else) on anything that is not a version-2 payload. */
export function decodePayloadV2(bytes: Buffer): UnitPayload {
  let raw: unknown;
  try {
    raw = packr.unpack(bytes);
  } catch (error) {
    throw new PayloadError(`payload is not MessagePack: ${error instanceof Error ? error.message : String(error)}`);
  }
  return readPayload(raw);
}

const UNIT_KINDS: ReadonlySet<unknown> = new Set<UnitKind>(['actor', 'perActorShell', 'spotWide', 'instance']);
const HOSTED_MODES: ReadonlySet<unknown> = new Set<HostedMode>(['entry', 'member', 'SpotWide', 'PerActor', 'instance']);

function readPayload(raw: unknown): UnitPayload {
  if (!isRecord(raw)) fail('payload', 'must be a map');
  if (raw.v !== LEGACY_PAYLOAD_VERSION) fail('payload.v', `must be ${PAYLOAD_VERSION} (this runtime's payload version) or ${LEGACY_PAYLOAD_VERSION}`);
  if (!isText(raw.unit)) fail('payload.unit', 'must be a non-empty string');
  if (!UNIT_KINDS.has(raw.kind)) fail('payload.kind', `must be one of ${[...UNIT_KINDS].join(', ')}`);
  const objects = raw.objects;
  if (!Array.isArray(objects) || objects.length === 0) fail('payload.objects', 'must be a non-empty array');
  const queue = raw.queue;
  if (!Array.isArray(queue)) fail('payload.queue', 'must be an array');
  const outObjects: CapturedObject[] = new Array(objects.length);
  for (let i = 0; i < objects.length; i++) outObjects[i] = readObject(objects[i], i);
  const outQueue: CapturedItem[] = new Array(queue.length);
  for (let i = 0; i < queue.length; i++) outQueue[i] = readItem(queue[i], i);
  return { v: LEGACY_PAYLOAD_VERSION, unit: raw.unit, kind: raw.kind as UnitKind, objects: outObjects, queue: outQueue };
}

function readObject(o: unknown, i: number): CapturedObject {
  if (!isRecord(o)) fail(`payload.objects[${i}]`, 'must be a map');
  if (!isObjectKey(o.key)) fail(`payload.objects[${i}].key`, "must be an object key ('a:<id>' or 's:<id>')");
  if (!isText(o.type)) fail(`payload.objects[${i}].type`, 'must be a non-empty string');
  if (!isCount(o.gen)) fail(`payload.objects[${i}].gen`, 'must be a non-negative safe integer');
  if (!isCount(o.auth)) fail(`payload.objects[${i}].auth`, 'must be a non-negative safe integer');
  if (!HOSTED_MODES.has(o.mode)) fail(`payload.objects[${i}].mode`, `must be one of ${[...HOSTED_MODES].join(', ')}`);
  if (o.spot !== undefined && typeof o.spot !== 'string') fail(`payload.objects[${i}].spot`, 'must be a string when present');
  if (o.state !== undefined && !(o.state instanceof Uint8Array)) fail(`payload.objects[${i}].state`, 'must be bytes when present');
  const timers = o.timers;
  if (!Array.isArray(timers)) fail(`payload.objects[${i}].timers`, 'must be an array');
  const outTimers: TimerRegistration[] = new Array(timers.length);
  for (let j = 0; j < timers.length; j++) {
    const t = timers[j] as unknown;
    if (!isRecord(t)) fail(`payload.objects[${i}].timers[${j}]`, 'must be a map');
    if (!isText(t.name)) fail(`payload.objects[${i}].timers[${j}].name`, 'must be a non-empty string');
    if (!isNonNegative(t.remainingMs)) fail(`payload.objects[${i}].timers[${j}].remainingMs`, 'must be a non-negative number');
    if (t.periodMs !== undefined && !isPositive(t.periodMs)) fail(`payload.objects[${i}].timers[${j}].periodMs`, 'must be a positive number when present');
    outTimers[j] = 'periodMs' in t ? { name: t.name, remainingMs: t.remainingMs, periodMs: t.periodMs as number | undefined } : { name: t.name, remainingMs: t.remainingMs };
  }
  if (o.ext !== undefined) {
    if (!isRecord(o.ext)) fail(`payload.objects[${i}].ext`, 'must be a map when present');
    for (const [name, bytes] of Object.entries(o.ext))
      if (name.length === 0 || !(bytes instanceof Uint8Array)) fail(`payload.objects[${i}].ext`, 'must map non-empty names to bytes');
  }
  // Optional fields are kept as they came (absent, or present and undefined), like the former schema did.
  const out: { -readonly [K in keyof CapturedObject]: CapturedObject[K] } = { key: o.key, type: o.type, gen: o.gen, auth: o.auth, mode: o.mode as HostedMode, timers: outTimers };
  if ('spot' in o) out.spot = o.spot as string | undefined;
  if ('state' in o) out.state = o.state as Uint8Array | undefined;
  if (o.ext !== undefined) out.ext = o.ext as Record<string, Uint8Array>;
  return out;
}

function readItem(q: unknown, i: number): CapturedItem {
  if (!isRecord(q)) fail(`payload.queue[${i}]`, 'must be a map');
  if (q.k === 'msg') {
    if (typeof q.to !== 'string') fail(`payload.queue[${i}].to`, 'must be a string');
    // The same hand check as every envelope on the wire (runtime/protocol.ts); the envelope is kept as it came.
    if (!isEnvelope(q.env)) fail(`payload.queue[${i}].env`, 'must be an envelope (id, to, gen, body bytes, from)');
    return { k: 'msg', to: q.to, env: q.env as Envelope };
  }
  if (q.k === 'tick') {
    if (typeof q.to !== 'string') fail(`payload.queue[${i}].to`, 'must be a string');
    if (!isText(q.name)) fail(`payload.queue[${i}].name`, 'must be a non-empty string');
    return { k: 'tick', to: q.to, name: q.name };
  }
  return fail(`payload.queue[${i}].k`, "must be 'msg' or 'tick'");
}
