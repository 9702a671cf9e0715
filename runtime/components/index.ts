/**
 * The host's components, in the order the host builds, drains and closes them. Each component lives in its own
 * folder beside this file and adds its factory here.
 */
import type { ResolvedRuntimeOptions } from '../options';
import type { ComponentPorts, HostComponent } from './component';
import { createClientServer } from './client-server';
import { createFanout } from './fanout/fanout';
import { createMulticast } from './multicast/multicast';
import { createSessionsComponent } from './sessions';

export type { ComponentPorts, HostComponent, ComponentFactory } from './component';
export { componentOf, componentMessageType, COMPONENT_MESSAGE_PREFIX } from './component';

export function createComponents(options: ResolvedRuntimeOptions, ports: ComponentPorts): HostComponent[] {
  return [createSessionsComponent(options, ports), createClientServer(options, ports), createFanout(ports, options.meshes[0]!.name), createMulticast(ports)];
}
