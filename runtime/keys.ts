import type { ObjectId } from '../stores/types';
import type { ObjectRef } from './context';
import { ArgumentError } from './errors';

/** Compact map key of one object: `a:<id>` for Actors, `s:<id>` for Spots. */
export type ObjectKey = string;

export const actorKey = (id: string): ObjectKey => `a:${id}`;
export const spotKey = (id: string): ObjectKey => `s:${id}`;

export function keyOf(id: ObjectId): ObjectKey {
  return id.kind === 'actor' ? actorKey(id.id) : spotKey(id.id);
}

export function idOf(key: ObjectKey): ObjectId {
  return { kind: key.charCodeAt(0) === 97 /* a */ ? 'actor' : 'spot', id: key.slice(2) };
}

export function refOf(key: ObjectKey): ObjectRef {
  return key.charCodeAt(0) === 97 ? { actor: key.slice(2) } : { spot: key.slice(2) };
}

const ID_MAX = 512;

export function checkId(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0) throw new ArgumentError(field, 'must be a non-empty string');
  if (value.length > ID_MAX) throw new ArgumentError(field, `must be at most ${ID_MAX} characters`);
  return value;
}

/** Validates an ObjectRef given to send/request/locate and returns its key. */
export function keyOfRef(ref: unknown, field = 'to'): ObjectKey {
  if (typeof ref !== 'object' || ref === null) throw new ArgumentError(field, 'must be { actor: id } or { spot: id }');
  const r = ref as { actor?: unknown; spot?: unknown; type?: unknown };
  if (r.actor !== undefined && r.spot !== undefined) throw new ArgumentError(field, 'names both actor and spot; give one');
  if (r.actor !== undefined) return actorKey(checkId(r.actor, `${field}.actor`));
  if (r.spot !== undefined) {
    if (r.type !== undefined) checkId(r.type, `${field}.type`);
    return spotKey(checkId(r.spot, `${field}.spot`));
  }
  throw new ArgumentError(field, 'must be { actor: id } or { spot: id }');
}

export const nodeKey = (node: { nodeId: string; lifecycleGeneration: number }): string =>
  `${node.nodeId}#${node.lifecycleGeneration}`;

export const sameNode = (
  a: { nodeId: string; lifecycleGeneration: number } | undefined,
  b: { nodeId: string; lifecycleGeneration: number } | undefined,
): boolean => !!a && !!b && a.nodeId === b.nodeId && a.lifecycleGeneration === b.lifecycleGeneration;
