/**
 * Transport entry: createTransport picks ws for meshes with `listen` and the in-process transport for meshes
 * without. All meshes of one node use one kind (a node cannot both listen on sockets and live only in-process).
 */
import { createMemoryTransport } from './memory';
import type { Transport, TransportDiagnostics, TransportOptions } from './types';
import { createWsTransport } from './ws';

export function createTransport(options: TransportOptions): Transport & { diagnostics(): TransportDiagnostics } {
  const withListen = options.meshes.filter((m) => m.listen !== undefined).length;
  if (withListen > 0 && withListen < options.meshes.length) {
    throw new TypeError(
      'createTransport: either every mesh has listen: { host, port } (ws) or none has (in-process); mixed: ' +
        options.meshes.map((m) => `${m.name}=${m.listen ? 'ws' : 'memory'}`).join(', '),
    );
  }
  return withListen > 0 ? createWsTransport(options) : createMemoryTransport(options);
}

export { createMemoryTransport, memoryEndpoint } from './memory';
export { createWsTransport } from './ws';
export { TRANSPORT_DEFAULTS, CloseCode } from './constants';
export { TransportClosedError, PeerUnavailableError, PayloadRejectedError, FrameError } from './errors';
export * from './types';
