/**
 * §5 target selection, in exactly its order:
 *   1 version (PlannedMaintenance: the source's; RollingUpdate: exactly the requested one)
 *   2 not the source, Serving
 *   3 factory / stable type / policy / adapter compatible
 *   4 remaining capacity, and a different maintenance wave when the source has one
 *   5 RID and lifecycle generation match in the same-moment descriptor list and Core peer table,
 *     the peer Admitted and Ready on every mesh
 * Weight orders only the candidates left after all five (highest weight, then most free capacity, then RID).
 */
import type { NodeDescriptor, NodeRef, TypeCapability } from '../../stores/types';
import { FrameworkRuntimeState } from '../../vocabulary';
import { compatible } from './compatibility';

export interface SelectionInput {
  readonly source: NodeRef & { readonly maintenanceWave?: string };
  readonly targetApplicationVersion: number;
  /** Capabilities of every type the inventory uses. */
  readonly requiredTypes: readonly TypeCapability[];
  /** Objects that would move (for the capacity check). */
  readonly objectCount: number;
  readonly descriptors: readonly NodeDescriptor[];
  /** Core peer table check of §5 order 5. */
  readonly isReadyOnEveryMesh: (peer: NodeRef) => boolean;
}

export type SelectionStep = 'version' | 'serving' | 'compatibility' | 'capacity' | 'peer';

export interface SelectionResult {
  readonly target?: NodeDescriptor;
  /** How many descriptors survived each step: diagnostics for "why is there no target". */
  readonly survivors: Readonly<Record<SelectionStep, number>>;
}

export function selectTarget(input: SelectionInput): SelectionResult {
  let list = input.descriptors.filter((d) => d.applicationVersion === input.targetApplicationVersion);
  const version = list.length;
  list = list.filter((d) => d.nodeId !== input.source.nodeId && d.state === FrameworkRuntimeState.Serving);
  const serving = list.length;
  list = list.filter((d) => input.requiredTypes.every((req) => compatible(req, d.types.find((t) => t.type === req.type))));
  const compat = list.length;
  list = list.filter(
    (d) =>
      d.capacity - d.load >= input.objectCount &&
      (input.source.maintenanceWave === undefined || d.maintenanceWave !== input.source.maintenanceWave),
  );
  const capacity = list.length;
  list = list.filter((d) => input.isReadyOnEveryMesh({ nodeId: d.nodeId, lifecycleGeneration: d.lifecycleGeneration }));
  const peer = list.length;
  const ranked = [...list].sort(
    (a, b) => b.weight - a.weight || b.capacity - b.load - (a.capacity - a.load) || a.nodeId.localeCompare(b.nodeId),
  );
  return { target: ranked[0], survivors: { version, serving, compatibility: compat, capacity, peer } };
}
