/**
 * §5 order 3 and §4 "unit compatibility": a target must offer, for every stable type the units use, the same
 * kind, relocation policy, state adapter and (User Spots) execution mode.
 */
import type { TypeCapability } from '../../stores/types';
import type { ObjectDefinition } from '../definitions';

export function describeType(def: ObjectDefinition): TypeCapability {
  return {
    type: def.type,
    kind: def.kind,
    policy: def.relocation.kind,
    ...(def.relocation.kind === 'preserve' ? { adapter: def.relocation.adapter } : {}),
    ...(def.kind === 'user' ? { executionMode: def.executionMode } : {}),
  };
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
