/**
 * §5 order 3 and §4 "unit compatibility": a target must offer, for every stable type the units use, the same
 * kind, relocation policy, state adapter and (User Spots) execution mode.
 */
import type { TypeCapability } from '../../stores/types';
import type { ObjectDefinition } from '../definitions';

/** Definitions are immutable: one capability object per definition (asked once per unit in a 100k move). */
const capabilities = new WeakMap<ObjectDefinition, TypeCapability>();

export function describeType(def: ObjectDefinition): TypeCapability {
  let capability = capabilities.get(def);
  if (!capability) {
    capability = Object.freeze({
      type: def.type,
      kind: def.kind,
      policy: def.relocation.kind,
      ...(def.relocation.kind === 'preserve' ? { adapter: def.relocation.adapter } : {}),
      ...(def.kind === 'user' ? { executionMode: def.executionMode } : {}),
    });
    capabilities.set(def, capability);
  }
  return capability;
}

export function describeTypes(defs: readonly ObjectDefinition[]): TypeCapability[] {
  return defs.map(describeType);
}

export function compatible(source: TypeCapability, target: TypeCapability | undefined): boolean {
  return (
    !!target &&
    target.kind === source.kind &&
    target.policy === source.policy &&
    (source.policy !== 'preserve' || target.adapter === source.adapter) &&
    target.executionMode === source.executionMode
  );
}
