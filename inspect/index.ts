/**
 * `zlink/inspect` (API.md): a local live inspector page for the hosts' machines.
 *
 *   const inspector = await createInspector({ port: 0 });
 *   const host = await createRuntime({ ..., inspect: inspector.inspect });
 *   inspector.watch(host);          // optional: S0–S4 of sampled units from the host's unit events
 *   console.log(inspector.url);     // open it in a browser; nothing leaves the machine
 *
 * Hosts in other processes: `connectInspector({ url: inspector.url })` there, and its `inspect` / `watch` likewise.
 */
export { createInspector, DEFAULT_INSPECTOR_OPTIONS, type Inspector, type InspectorOptions, type WatchableHost } from './server';
export { connectInspector, type InspectorFeed, type InspectorFeedOptions } from './feed';
export type {
  ActorSample,
  DiagramEdge,
  DiagramState,
  InspectorMessage,
  InspectorView,
  MachineDiagram,
  MachineView,
  NodeView,
  UnitCounts,
  UnitSample,
} from './types';
