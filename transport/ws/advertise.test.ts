import { createWsTransport } from '.';

const handlers = { onMessage: () => undefined, onPayload: () => undefined };
const self = { nodeId: 'n', lifecycleGeneration: 1, applicationVersion: 1 };

test('a ws mesh on an unspecified address without advertise is refused before it binds', async () => {
  const transport = createWsTransport({ self, handlers, meshes: [{ name: 'main', listen: { host: '0.0.0.0', port: 0 } }] });
  await expect(transport.start()).rejects.toThrow(/unspecified address '0\.0\.0\.0'.*set advertise/);
  await transport.close();
});

test('with advertise the transport publishes it (bound port filled in) while listening on every interface', async () => {
  const transport = createWsTransport({ self, handlers, meshes: [{ name: 'main', listen: { host: '0.0.0.0', port: 0 }, advertise: '127.0.0.1' }] });
  try {
    const endpoints = await transport.start();
    expect(endpoints['main']).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/$/);
  } finally {
    await transport.close();
  }
});
