import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { FrameError } from './errors';
import { decodeFrame, encodeBatch, encodeChunk, encodeControl, encodeMessage, FRAME_MAGIC, FRAME_VERSION, FrameKind, type ControlFrame } from './frames';

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
    expect(decodeFrame(encodeBatch(msgs.map(encodeMessage)), MAX)).toEqual({ kind: 'batch', messages: msgs });
    const data = Buffer.from('hello world');
    const sha256 = createHash('sha256').update(data).digest();
    const f = decodeFrame(encodeChunk({ id: 'pay-ü', index: 0, count: 1, total: data.length, sha256, data }), MAX);
    expect(f.kind).toBe('chunk');
    if (f.kind === 'chunk') expect([f.chunk.id, f.chunk.data.toString(), f.chunk.sha256.equals(sha256)]).toEqual(['pay-ü', 'hello world', true]);
  });

  it('batch frames carry byte fields (encoded bodies) as raw bytes, not base64 or {type,data} JSON', () => {
    const body = Buffer.alloc(1000, 0xee);
    const frame = encodeBatch([encodeMessage({ t: 'msg', env: { id: 'x', body } })]);
    expect(frame.length).toBeLessThan(1000 + 40);
    expect(frame.includes(body)).toBe(true);
    const f = decodeFrame(frame, MAX);
    if (f.kind !== 'batch') throw new Error('not a batch');
    const got = (f.messages[0] as unknown as { env: { body: Uint8Array } }).env.body;
    expect(got).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(got).equals(body)).toBe(true);
  });

  it('a batch is the concatenation of its encoded messages, each standing alone', () => {
    const parts = [encodeMessage({ t: 'a' }), encodeMessage({ t: 'b', n: [1, 2] })];
    const frame = encodeBatch(parts);
    expect(frame.length).toBe(3 + parts[0]!.length + parts[1]!.length);
    expect(decodeFrame(frame, MAX)).toEqual({ kind: 'batch', messages: [{ t: 'a' }, { t: 'b', n: [1, 2] }] });
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
    ['empty batch', Buffer.from([FRAME_MAGIC, FRAME_VERSION, FrameKind.Batch])],
    ['batch entry without t', encodeBatch([encodeMessage({ x: 1 } as never)])],
    ['batch entry that is not an object', encodeBatch([encodeMessage({ t: 'a' }), Buffer.from([0x05])])],
    ['batch entry with a non-string t', encodeBatch([encodeMessage({ t: 5 } as never)])],
    ['batch with a truncated message', encodeBatch([encodeMessage({ t: 'a', s: 'long string here' })]).subarray(0, 12)],
    ['batch of an old JSON frame', Buffer.concat([Buffer.from([FRAME_MAGIC, FRAME_VERSION, FrameKind.Batch]), Buffer.from('[{"t":"a"}]')])],
    ['version 1 (JSON batches)', Buffer.concat([Buffer.from([FRAME_MAGIC, 1, FrameKind.Batch]), Buffer.from('[{"t":"a"}]')])],
    ['reserved MessagePack byte', Buffer.from([FRAME_MAGIC, FRAME_VERSION, FrameKind.Batch, 0xc1])],
    ['truncated chunk', encodeChunk({ id: 'p', index: 0, count: 1, total: 3, sha256: Buffer.alloc(32), data: Buffer.from('abc') }).subarray(0, 20)],
    ['chunk index >= count', encodeChunk({ id: 'p', index: 2, count: 2, total: 3, sha256: Buffer.alloc(32), data: Buffer.from('abc') })],
    ['chunk longer than payload', encodeChunk({ id: 'p', index: 0, count: 1, total: 2, sha256: Buffer.alloc(32), data: Buffer.from('abc') })],
  ];
  it.each(bad)('rejects %s with FrameError', (_name, buf) => {
    expect(() => decodeFrame(buf, MAX)).toThrow(FrameError);
  });

  it('rejects frames above maxFrameBytes', () => {
    expect(() => decodeFrame(encodeBatch([encodeMessage({ t: 'x', pad: 'y'.repeat(100) })]), 50)).toThrow(/maxFrameBytes/);
  });

  it('any byte string either decodes or throws FrameError (never another exception)', () => {
    const valid = [encodeControl({ k: 'ready' }), encodeBatch([encodeMessage({ t: 'a', b: Buffer.from([1, 2]), n: { m: [1, 'x'] } })]), encodeChunk({ id: 'p', index: 0, count: 1, total: 1, sha256: Buffer.alloc(32), data: Buffer.from('z') })];
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
