/** In-process transport: the shared mesh transport over memory links (hub.ts). For fast tests and one-process demos. */
import { MeshTransport } from '../mesh-transport';
import type { Transport, TransportDiagnostics, TransportOptions } from '../types';
import { MemoryLinkProvider } from './hub';

export { memoryEndpoint } from './hub';

export function createMemoryTransport(options: TransportOptions): Transport & { diagnostics(): TransportDiagnostics } {
  for (const m of options.meshes) {
    if (m.listen) throw new TypeError(`createMemoryTransport: mesh ${m.name} has a listen address; use the ws transport`);
  }
  return new MeshTransport(options, new MemoryLinkProvider(options.self));
}
