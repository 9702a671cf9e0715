import type { Socket } from 'node:net';
import { WsLinkProvider } from './link';
import type { Link } from '../link';

const mesh = { name: 'main', listen: { host: '127.0.0.1', port: 0 } };
const MAX_FRAME = 1024 * 1024;

/** A dialled link and what its peer received, over real loopback sockets. */
async function connected() {
  const provider = new WsLinkProvider();
  const received: Buffer[] = [];
  let arrived: (() => void) | undefined;
  const endpoint = await provider.listen(mesh, MAX_FRAME, () => ({
    onOpen: () => undefined,
    onFrame: (frame) => {
      received.push(frame);
      arrived?.();
    },
    onViolation: () => undefined,
    onClose: () => undefined,
  }));
  let opened!: () => void;
  const open = new Promise<void>((resolve) => (opened = resolve));
  const link = provider.dial(mesh, endpoint, MAX_FRAME, { onOpen: () => opened(), onFrame: () => undefined, onViolation: () => undefined, onClose: () => undefined });
  await open;
  const until = (count: number) =>
    new Promise<void>((resolve) => {
      arrived = () => received.length >= count && resolve();
      arrived();
    });
  return { provider, link, received, until };
}

/** Counts the socket writes (syscalls) of a link's ws socket. */
function countWrites(link: Link): () => number {
  const socket = (link as unknown as { ws: { _socket: Socket & { _writev: (...args: unknown[]) => void; _write: (...args: unknown[]) => void } } }).ws._socket;
  let writes = 0;
  for (const method of ['_writev', '_write'] as const) {
    const original = socket[method].bind(socket);
    socket[method] = (...args: unknown[]) => {
      writes++;
      return original(...args);
    };
  }
  return () => writes;
}

test('the frames a turn sends leave in one socket write, whole and in order, and the next turn writes again', async () => {
  const { provider, link, received, until } = await connected();
  try {
    const writes = countWrites(link);
    const sent = [1, 2, 3, 4, 5].map((n) => Buffer.alloc(100 + n, n));
    for (const frame of sent) link.send(frame);
    await until(5);
    expect(writes()).toBe(1);
    expect(received).toEqual(sent);
    // A frame sent later (another turn) is not held back by the first turn's cork.
    link.send(Buffer.from('later'));
    await until(6);
    expect(writes()).toBe(2);
    expect(received[5]!.toString()).toBe('later');
  } finally {
    link.close(1000, 'done');
    await provider.close();
  }
});
