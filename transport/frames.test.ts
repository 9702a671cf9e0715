import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { FrameError } from './errors';
import { decodeFrame, encodeBatch, encodeChunk, encodeControl, FRAME_MAGIC, FRAME_VERSION, FrameKind, type ControlFrame } from './frames';

const MAX = 1024 * 1024;
const nonce = 'ab'.repeat(32);

describe('frame codec', () => {
  it('round-trips control, batch and chunk frames', () => {
    const controls: ControlFrame[] = [
      { k: 'challenge', mesh: 'main', nodeId: 'a', gen: 3, app: 1, nonce },
      { k: 'hello', mesh: 'main', nodeId: 'b', gen: 1, app: 2, nonce, proof: nonce },
      { k: 'admit' },
      { k: 'ready' },
      { k: 'draining' },
      { k: 'ack', id: 'p', ok: false, error: 'sha256' },
      { k: 'cancel', id: 'p' },
    ];
    for (const c of controls) expect(decodeFrame(encodeControl(c), MAX)).toEqual({ kind: 'control', frame: c });
    const msgs = [{ t: 'x', n: 1 }, { t: 'y', nested: { a: [1, 2] } }];
    expect(decodeFrame(encodeBatch(msgs.map((m) => JSON.stringify(m))), MAX)).toEqual({ kind: 'batch', messages: msgs });
    const data = Buffer.from('hello world');
    const sha256 = createHash('sha256').update(data).digest();
    const f = decodeFrame(encodeChunk({ id: 'pay-ü', index: 0, count: 1, total: data.length, sha256, data }), MAX);
    expect(f.kind).toBe('chunk');
    if (f.kind === 'chunk') expect([f.chunk.id, f.chunk.data.toString(), f.chunk.sha256.equals(sha256)]).toEqual(['pay-ü', 'hello world', true]);
  });

  it('chunk data is raw bytes behind a binary header, not base64 JSON', () => {
    const data = Buffer.alloc(1000, 0xee);
    const buf = encodeChunk({ id: 'p', index: 0, count: 1, total: 1000, sha256: Buffer.alloc(32), data });
    expect(buf.length).toBe(3 + 1 + 1 + 4 + 4 + 6 + 32 + 1000);
    expect(buf.subarray(buf.length - 1000).equals(data)).toBe(true);
  });

  const bad: [string, Buffer][] = [
    ['empty', Buffer.alloc(0)],
    ['bad magic', Buffer.from([0x00, FRAME_VERSION, FrameKind.Control, 0x7b, 0x7d])],
    ['unknown version', Buffer.from([FRAME_MAGIC, 9, FrameKind.Control, 0x7b, 0x7d])],
    ['unknown kind', Buffer.from([FRAME_MAGIC, FRAME_VERSION, 42])],
    ['not JSON', Buffer.concat([Buffer.from([FRAME_MAGIC, FRAME_VERSION, FrameKind.Control]), Buffer.from('{nope')])],
    ['unknown control', Buffer.concat([Buffer.from([FRAME_MAGIC, FRAME_VERSION, FrameKind.Control]), Buffer.from('{"k":"boom"}')])],
    ['extra key', Buffer.concat([Buffer.from([FRAME_MAGIC, FRAME_VERSION, FrameKind.Control]), Buffer.from('{"k":"ready","x":1}')])],
    ['wrong type', Buffer.concat([Buffer.from([FRAME_MAGIC, FRAME_VERSION, FrameKind.Control]), Buffer.from('{"k":"ack","id":"p","ok":"yes"}')])],
    ['empty batch', Buffer.concat([Buffer.from([FRAME_MAGIC, FRAME_VERSION, FrameKind.Batch]), Buffer.from('[]')])],
    ['batch entry without t', Buffer.concat([Buffer.from([FRAME_MAGIC, FRAME_VERSION, FrameKind.Batch]), Buffer.from('[{"x":1}]')])],
    ['truncated chunk', encodeChunk({ id: 'p', index: 0, count: 1, total: 3, sha256: Buffer.alloc(32), data: Buffer.from('abc') }).subarray(0, 20)],
    ['chunk index >= count', encodeChunk({ id: 'p', index: 2, count: 2, total: 3, sha256: Buffer.alloc(32), data: Buffer.from('abc') })],
    ['chunk longer than payload', encodeChunk({ id: 'p', index: 0, count: 1, total: 2, sha256: Buffer.alloc(32), data: Buffer.from('abc') })],
  ];
  it.each(bad)('rejects %s with FrameError', (_name, buf) => {
    expect(() => decodeFrame(buf, MAX)).toThrow(FrameError);
  });

  it('rejects frames above maxFrameBytes', () => {
    expect(() => decodeFrame(encodeBatch([JSON.stringify({ t: 'x', pad: 'y'.repeat(100) })]), 50)).toThrow(/maxFrameBytes/);
  });

  it('any byte string either decodes or throws FrameError (never another exception)', () => {
    const valid = [encodeControl({ k: 'ready' }), encodeBatch(['{"t":"a"}']), encodeChunk({ id: 'p', index: 0, count: 1, total: 1, sha256: Buffer.alloc(32), data: Buffer.from('z') })];
    const mutated = fc.tuple(fc.constantFrom(...valid), fc.nat(), fc.integer({ min: 0, max: 255 }), fc.nat()).map(([b, i, v, cut]) => {
      const copy = Buffer.from(b);
      copy[i % copy.length] = v;
      return copy.subarray(0, 1 + (cut % copy.length));
    });
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 200 }).map((u) => Buffer.from(u)), mutated), (buf) => {
        try {
          decodeFrame(buf, MAX);
        } catch (err) {
          expect(err).toBeInstanceOf(FrameError);
        }
      }),
      { numRuns: 3000 },
    );
  });
});
