import { createServer } from 'node:net';
import { describeTransportContract } from '../contract';
import { createWsTransport } from '.';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describeTransportContract({
  kind: 'ws',
  mesh: (name, extra) => ({ name, listen: { host: '127.0.0.1', port: 0 }, ...extra }),
  reserve: async (_self, name) => {
    const port = await freePort();
    return { mesh: { name, listen: { host: '127.0.0.1', port } }, endpoint: `ws://127.0.0.1:${port}/` };
  },
  create: createWsTransport,
});
