/** WebSocket transport: the shared mesh transport over ws links (link.ts). */
import { MeshTransport } from '../mesh-transport';
import type { Transport, TransportDiagnostics, TransportOptions } from '../types';
import { WsLinkProvider } from './link';

export function createWsTransport(options: TransportOptions): Transport & { diagnostics(): TransportDiagnostics } {
  for (const m of options.meshes) {
    if (!m.listen) throw new TypeError(`createWsTransport: mesh ${m.name} needs listen: { host, port } (port 0 = any)`);
  }
  return new MeshTransport(options, new WsLinkProvider());
}
