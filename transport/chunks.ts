/**
 * Chunking and reassembly of relocation payloads (DESIGN.md unit handoff: "chunks with checksum"). Pure: no socket,
 * no timers. The sender splits a Buffer into chunk frames carrying the sha256 of the whole payload; the target
 * reassembles the chunks of one connection (they arrive in order) and verifies the digest before anyone sees the
 * bytes. A checksum mismatch or truncation is a failed payload (onPayload ok:false), not a protocol error; a chunk
 * that contradicts the header of its payload, or skips an index, is a protocol error (FrameError).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { FrameError } from './errors';
import type { ChunkFrame } from './frames';

export interface SplitPayload {
  readonly count: number;
  readonly sha256: Buffer;
  chunk(index: number): ChunkFrame;
}

export function splitPayload(id: string, bytes: Buffer, chunkBytes: number): SplitPayload {
  const sha256 = createHash('sha256').update(bytes).digest();
  const count = Math.max(1, Math.ceil(bytes.length / chunkBytes));
  return {
    count,
    sha256,
    chunk: (index) => ({
      id,
      index,
      count,
      total: bytes.length,
      sha256,
      data: bytes.subarray(index * chunkBytes, Math.min(bytes.length, (index + 1) * chunkBytes)),
    }),
  };
}

export type PayloadResult = { ok: true; bytes: Buffer } | { ok: false; error: Error };

interface Partial {
  readonly count: number;
  readonly total: number;
  readonly sha256: Buffer;
  readonly parts: Buffer[];
  received: number;
}

/** Most payloads one connection may have half-received at once; an honest sender is bounded by its budget. */
export const MAX_PARTIAL_PAYLOADS = 4096;

export class PayloadIntegrityError extends Error {
  override readonly name = 'PayloadIntegrityError';
}

export class Reassembler {
  private readonly partial = new Map<string, Partial>();

  get inProgress(): number {
    return this.partial.size;
  }

  /** undefined while chunks are missing; the result once the last chunk arrived. */
  accept(chunk: ChunkFrame): PayloadResult | undefined {
    let p = this.partial.get(chunk.id);
    if (!p) {
      if (chunk.index !== 0) throw new FrameError(`chunk ${chunk.index} of payload ${chunk.id} arrived without chunk 0`);
      if (this.partial.size >= MAX_PARTIAL_PAYLOADS) throw new FrameError('too many payloads in progress on one connection');
      p = { count: chunk.count, total: chunk.total, sha256: Buffer.from(chunk.sha256), parts: [], received: 0 };
      this.partial.set(chunk.id, p);
    } else if (chunk.index !== p.parts.length || chunk.count !== p.count || chunk.total !== p.total || !chunk.sha256.equals(p.sha256)) {
      this.partial.delete(chunk.id);
      throw new FrameError(`chunk ${chunk.index} of payload ${chunk.id} contradicts its header or order`);
    }
    // Copy: the frame buffer may be pooled by the socket layer; a payload outlives its frames.
    p.parts.push(Buffer.from(chunk.data));
    p.received += chunk.data.length;
    if (p.received > p.total) {
      this.partial.delete(chunk.id);
      return { ok: false, error: new PayloadIntegrityError(`payload ${chunk.id} is longer than its declared ${p.total} bytes`) };
    }
    if (p.parts.length < p.count) return undefined;
    this.partial.delete(chunk.id);
    if (p.received !== p.total) {
      return { ok: false, error: new PayloadIntegrityError(`payload ${chunk.id} truncated: ${p.received} of ${p.total} bytes`) };
    }
    const bytes = p.parts.length === 1 ? p.parts[0]! : Buffer.concat(p.parts, p.total);
    const digest = createHash('sha256').update(bytes).digest();
    if (!timingSafeEqual(digest, p.sha256)) {
      return { ok: false, error: new PayloadIntegrityError(`payload ${chunk.id} failed its sha256 check`) };
    }
    return { ok: true, bytes };
  }

  /** The sender abandoned the payload. true when something was in progress. */
  cancel(id: string): boolean {
    return this.partial.delete(id);
  }

  /** Connection lost: every half-received payload is truncated. Returns their ids. */
  abandonAll(): string[] {
    const ids = [...this.partial.keys()];
    this.partial.clear();
    return ids;
  }
}
