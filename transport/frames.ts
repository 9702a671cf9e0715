/**
 * Frame codec: the one module that turns frames into bytes and validates bytes into frames (DESIGN.md: frames are
 * validated and bounded). It knows no socket, so it is tested without one (frames.test.ts); the ws and memory links
 * only move the Buffers it produces.
 *
 * Every frame is one binary message:
 *
 *   byte 0   magic 0x7a ('z')
 *   byte 1   version (2; version 1 had JSON batches)
 *   byte 2   kind: 1 control (UTF-8 JSON, zod-validated), 2 batch (runtime messages as consecutive MessagePack
 *            values; byte fields such as encoded message bodies travel as raw `bin`, never base64),
 *            3 chunk (binary header + raw bytes, never base64)
 *
 *   chunk:   u8 idLength (1..128) | id (UTF-8) | u32 index | u32 count | u48 totalBytes | 32 bytes sha256 of the
 *            whole payload | data
 *
 * Multi-byte integers are big-endian. Anything else (other magic, version or kind, bad JSON, extra keys, a field of
 * the wrong type, an incoherent chunk header, more bytes than maxFrameBytes) is a FrameError: the connection that
 * sent it is closed with CloseCode.ProtocolError and counted, the process carries on.
 */
import { Packr } from 'msgpackr';
import { z } from 'zod';
import { FrameError } from './errors';
import type { RuntimeMessage } from './types';

export const FRAME_MAGIC = 0x7a;
export const FRAME_VERSION = 2;
export const FrameKind = { Control: 1, Batch: 2, Chunk: 3 } as const;
export const MAX_PAYLOAD_ID_BYTES = 128;
const SHA256_BYTES = 32;
const CHUNK_FIXED = 3 + 1 + 4 + 4 + 6 + SHA256_BYTES;

const name = z.string().min(1).max(256);
const generation = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const hex32 = z.string().regex(/^[0-9a-f]{64}$/);
const payloadId = z.string().min(1).refine((s) => Buffer.byteLength(s) <= MAX_PAYLOAD_ID_BYTES, 'payload id too long');

/** Server → client, first frame on a connection: who the server is and the nonce the client's proof covers (§4). */
const challenge = z.strictObject({ k: z.literal('challenge'), mesh: name, nodeId: name, gen: generation, app: generation, nonce: hex32 });
/** Client → server: identity, its own nonce (the server's Admit proves the key back over it) and the HMAC proof. */
const hello = z.strictObject({
  k: z.literal('hello'),
  mesh: name,
  nodeId: name,
  gen: generation,
  app: generation,
  nonce: hex32,
  proof: hex32.optional(),
});
const admit = z.strictObject({ k: z.literal('admit'), proof: hex32.optional() });
const ready = z.strictObject({ k: z.literal('ready') });
/** §14 step 1: the only peer-table update a sealed node still sends. */
const draining = z.strictObject({ k: z.literal('draining') });
/** Target → source: intake of a payload finished (ok) or failed (checksum, truncation). */
const ack = z.strictObject({ k: z.literal('ack'), id: payloadId, ok: z.boolean(), error: z.string().max(1024).optional() });
/** Source → target: a payload was abandoned mid-way (abort); the target drops what it reassembled. */
const cancel = z.strictObject({ k: z.literal('cancel'), id: payloadId });
/**
 * §14 cleanup step 4, before the links close: "I am about to close; send me nothing more". The peer answers
 * `quiesced` after every message it queued for this node, so on an ordered link nothing it sent is still on the
 * wire when the closing side sees the answer, and everything the closing side sent (replies) was read first.
 */
const quiesce = z.strictObject({ k: z.literal('quiesce') });
const quiesced = z.strictObject({ k: z.literal('quiesced') });

export const ControlFrameSchema = z.discriminatedUnion('k', [challenge, hello, admit, ready, draining, ack, cancel, quiesce, quiesced]);
export type ControlFrame = z.infer<typeof ControlFrameSchema>;

export interface ChunkFrame {
  readonly id: string;
  readonly index: number;
  readonly count: number;
  readonly total: number;
  /** sha256 of the whole payload, repeated in every chunk so each chunk header stands alone. */
  readonly sha256: Buffer;
  readonly data: Buffer;
}

export type Frame =
  | { readonly kind: 'control'; readonly frame: ControlFrame }
  | { readonly kind: 'batch'; readonly messages: RuntimeMessage[] }
  | { readonly kind: 'chunk'; readonly chunk: ChunkFrame };

/**
 * Test hooks of the codec layer (not a socket mock): a test corrupts chunk data on its way out to prove that the
 * target's checksum check rejects it. Process-global; tests reset it in afterEach.
 */
export const codecTestHooks: { mutateChunkData?: (id: string, index: number, data: Buffer) => Buffer | undefined } = {};

function header(kind: number, bodyBytes: number): Buffer {
  const buf = Buffer.allocUnsafe(3 + bodyBytes);
  buf[0] = FRAME_MAGIC;
  buf[1] = FRAME_VERSION;
  buf[2] = kind;
  return buf;
}

export function encodeControl(frame: ControlFrame): Buffer {
  const json = JSON.stringify(frame);
  const len = Buffer.byteLength(json);
  const buf = header(FrameKind.Control, len);
  buf.write(json, 3, 'utf8');
  return buf;
}

/**
 * Runtime messages are plain MessagePack (no records, no structured clone): each encoded message stands alone, so a
 * batch is just their concatenation and a message's size is known when it is queued. Application values inside them
 * are already bytes (runtime/codec.ts) and travel as `bin`.
 */
const wire = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

/** One runtime message as it goes into a batch (encoded at send: the wire sees the value at send time). */
export function encodeMessage(message: RuntimeMessage): Buffer {
  return wire.pack(message);
}

/** Bytes a batch frame of these already-encoded messages takes (3 header bytes + the messages). */
export function batchFrameBytes(partBytes: number, _parts: number): number {
  return 3 + partBytes;
}

/** Coalesced runtime messages (DESIGN.md: one ws frame per tick holds many messages). `parts` from encodeMessage. */
export function encodeBatch(parts: readonly Uint8Array[]): Buffer {
  let total = 0;
  for (const p of parts) total += p.length;
  const buf = header(FrameKind.Batch, total);
  let o = 3;
  for (const p of parts) {
    buf.set(p, o);
    o += p.length;
  }
  return buf;
}

export function encodeChunk(chunk: ChunkFrame): Buffer {
  const id = Buffer.from(chunk.id, 'utf8');
  if (id.length < 1 || id.length > MAX_PAYLOAD_ID_BYTES) throw new RangeError(`payload id must be 1..${MAX_PAYLOAD_ID_BYTES} UTF-8 bytes`);
  const data = codecTestHooks.mutateChunkData?.(chunk.id, chunk.index, chunk.data) ?? chunk.data;
  const buf = header(FrameKind.Chunk, CHUNK_FIXED - 3 + id.length + data.length);
  let o = 3;
  buf[o++] = id.length;
  id.copy(buf, o);
  o += id.length;
  buf.writeUInt32BE(chunk.index, o);
  buf.writeUInt32BE(chunk.count, o + 4);
  buf.writeUIntBE(chunk.total, o + 8, 6);
  chunk.sha256.copy(buf, o + 14);
  data.copy(buf, o + 14 + SHA256_BYTES);
  return buf;
}

/** Validates one received frame. Throws FrameError; never returns a partially checked value. */
export function decodeFrame(buf: Buffer, maxFrameBytes: number): Frame {
  if (buf.length > maxFrameBytes) throw new FrameError(`frame of ${buf.length} bytes exceeds maxFrameBytes ${maxFrameBytes}`);
  if (buf.length < 3) throw new FrameError('frame shorter than its header');
  if (buf[0] !== FRAME_MAGIC) throw new FrameError('bad frame magic');
  if (buf[1] !== FRAME_VERSION) throw new FrameError(`unsupported frame version ${buf[1]}`);
  switch (buf[2]) {
    case FrameKind.Control: {
      const parsed = ControlFrameSchema.safeParse(parseJson(buf));
      if (!parsed.success) throw new FrameError(`invalid control frame: ${parsed.error.issues[0]?.message ?? 'schema'}`);
      return { kind: 'control', frame: parsed.data };
    }
    case FrameKind.Batch:
      return { kind: 'batch', messages: checkBatch(parseMessages(buf)) };
    case FrameKind.Chunk:
      return { kind: 'chunk', chunk: decodeChunk(buf) };
    default:
      throw new FrameError(`unknown frame kind ${buf[2]}`);
  }
}

function parseJson(buf: Buffer): unknown {
  const text = buf.toString('utf8', 3);
  try {
    return JSON.parse(text);
  } catch {
    throw new FrameError('frame body is not JSON');
  }
}

function parseMessages(buf: Buffer): unknown[] {
  if (buf.length === 3) throw new FrameError('batch frame must hold at least one message');
  try {
    // Truncated or trailing partial values throw; each complete value is checked by checkBatch.
    return wire.unpackMultiple(buf.subarray(3)) as unknown[];
  } catch {
    throw new FrameError('batch frame body is not a sequence of MessagePack values');
  }
}

/** A strict decoder instead of zod for the hot path: 10k messages per frame must not cost a schema walk each. */
function checkBatch(value: unknown): RuntimeMessage[] {
  if (!Array.isArray(value) || value.length === 0) throw new FrameError('batch frame must hold at least one message');
  for (const m of value) {
    if (typeof m !== 'object' || m === null || Object.getPrototypeOf(m) !== Object.prototype || typeof (m as { t?: unknown }).t !== 'string') {
      throw new FrameError('batch entry must be an object with a string "t"');
    }
  }
  return value as RuntimeMessage[];
}

function decodeChunk(buf: Buffer): ChunkFrame {
  if (buf.length < CHUNK_FIXED + 1) throw new FrameError('chunk frame shorter than its header');
  const idLen = buf[3]!;
  if (idLen < 1 || idLen > MAX_PAYLOAD_ID_BYTES) throw new FrameError('bad payload id length');
  if (buf.length < CHUNK_FIXED + idLen) throw new FrameError('chunk frame truncated');
  const idBytes = buf.subarray(4, 4 + idLen);
  const id = idBytes.toString('utf8');
  if (!Buffer.from(id, 'utf8').equals(idBytes)) throw new FrameError('payload id is not UTF-8');
  let o = 4 + idLen;
  const index = buf.readUInt32BE(o);
  const count = buf.readUInt32BE(o + 4);
  const total = buf.readUIntBE(o + 8, 6);
  const sha256 = buf.subarray(o + 14, o + 14 + SHA256_BYTES);
  o += 14 + SHA256_BYTES;
  const data = buf.subarray(o);
  if (count < 1 || index >= count) throw new FrameError('chunk index out of range');
  if (data.length > total) throw new FrameError('chunk larger than its payload');
  if (total === 0 ? count !== 1 : data.length === 0 || count > total) throw new FrameError('incoherent chunk count');
  return { id, index, count, total, sha256, data };
}
