/** wss://: a self-signed certificate generated at test time with openssl (skipped, with a note, without it). */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../contract';
import type { RuntimeMessage } from '../types';
import { createWsTransport } from '.';

function selfSigned(): { key: Buffer; cert: Buffer } | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'zlink-tls-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem')], { stdio: 'ignore' });
    return { key: readFileSync(join(dir, 'k.pem')), cert: readFileSync(join(dir, 'c.pem')) };
  } catch {
    return undefined; // no openssl: wss is then covered only by reading ws/link.ts
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const material = selfSigned();
const maybe = material ? it : it.skip;

describe('ws transport over TLS', () => {
  maybe('two nodes reach Ready over wss:// with a self-signed mesh certificate; an untrusting client does not', async () => {
    const got: RuntimeMessage[] = [];
    const mk = (nodeId: string, tls: object) =>
      createWsTransport({
        self: { nodeId, lifecycleGeneration: 1, applicationVersion: 1 },
        meshes: [{ name: 'main', listen: { host: '127.0.0.1', port: 0 }, tls, sharedKey: 'k' }],
        timing: { reconnectMinMs: 20, reconnectMaxMs: 100, closeGraceMs: 200 },
        handlers: { onMessage: (_f, m) => got.push(m), onPayload: () => undefined },
      });
    const a = mk('a', material!);
    const b = mk('b', material!);
    const stranger = mk('c', { key: material!.key, cert: material!.cert, ca: Buffer.from('') });
    try {
      const ea = await a.start();
      await b.start();
      await stranger.start();
      expect(ea.main).toMatch(/^wss:\/\/127\.0\.0\.1:\d+\/$/);
      b.registerManualPeer('main', ea.main!);
      stranger.registerManualPeer('main', ea.main!);
      const aRef = { nodeId: 'a', lifecycleGeneration: 1 };
      await waitFor(() => b.isReadyOnEveryMesh(aRef), 'wss Ready');
      b.send(aRef, { t: 'over-tls' });
      await waitFor(() => got.length === 1, 'message over wss');
      await new Promise((r) => setTimeout(r, 150));
      expect(stranger.peers()).toEqual([]); // certificate not trusted: never connected
    } finally {
      await Promise.all([a.close(), b.close(), stranger.close()]);
    }
  });
});
