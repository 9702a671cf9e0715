/** ClientServer: servers under a ChannelName, select-one and Node direct clients, manual client endpoints (§1.1, §4, §15). */
import type { ResolvedRuntimeOptions } from '../../options';
import type { ComponentPorts } from '../component';
import { ClientServer } from './client-server';

export { ClientServer, type ClientServerOptions } from './client-server';
export { CLIENT_SERVER } from './protocol';
export type { CallOptions, ServeHandler, ServeInfo, ServeOptions, ServerRegistration } from './types';

export function createClientServer(options: ResolvedRuntimeOptions, ports: ComponentPorts): ClientServer {
  return new ClientServer(ports, {
    primaryMesh: options.meshes[0]!.name,
    // The same bound the router gives a message waiting for its peer's connection.
    connectWaitMs: Math.max(1000, options.timing.leaseMs),
  });
}
