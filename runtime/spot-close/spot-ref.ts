/** The ref closeSpot takes (API.md: `host.closeSpot({ spot: 'shard-9' })`), checked at the call. */
import type { ObjectDefinition } from '../definitions';
import { ArgumentError } from '../errors';
import { checkId, spotKey, type ObjectKey } from '../keys';

/** An Instance Spot by its Spot ID; `type`, like on other ObjectRefs, names its Instance Spot type. */
export type SpotRef = { readonly spot: string; readonly type?: string };

/** Validates `ref` and returns the Spot's key; nothing is sent for a ref that fails. */
export function spotRefKey(ref: unknown, types: ReadonlyMap<string, ObjectDefinition>): ObjectKey {
  if (typeof ref !== 'object' || ref === null) throw new ArgumentError('ref', 'must be { spot: id } (the Instance Spot to close)');
  const r = ref as { spot?: unknown; actor?: unknown; type?: unknown };
  if (r.actor !== undefined) throw new ArgumentError('ref.actor', 'closeSpot closes an Instance Spot, not an Actor: give { spot: id }');
  const id = checkId(r.spot, 'ref.spot');
  if (r.type !== undefined) {
    const type = checkId(r.type, 'ref.type');
    const def = types.get(type);
    if (!def) throw new ArgumentError('ref.type', `no type '${type}' is registered on this host`);
    if (def.kind !== 'instance') throw new ArgumentError('ref.type', `'${type}' is not an Instance Spot type: closeSpot closes Instance Spots only`);
  }
  return spotKey(id);
}
