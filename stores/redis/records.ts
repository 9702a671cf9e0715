/**
 * The JSON values stored at record keys, as the Lua scripts read and write them (cjson), and their conversion to
 * OwnerRecord. A key holds a live record (s = 'L'), a tombstone keeping the generations of a removed object
 * (s = 'R', §12), or a forward (s = 'F') left where a record moved from when its SpotWide membership changed.
 */
import type { ObjectKind, OwnerRecord } from '../types';

export interface LiveValue {
  readonly s: 'L';
  readonly k: ObjectKind;
  readonly id: string;
  readonly t: string;
  readonly n: string;
  readonly g: number;
  readonly og: number;
  readonly ag: number;
  readonly sp?: string;
  readonly sw?: boolean;
}

export interface TombstoneValue {
  readonly s: 'R';
  readonly k: ObjectKind;
  readonly id: string;
  readonly og: number;
  readonly ag: number;
}

export interface ForwardValue {
  readonly s: 'F';
  /** Key the record lives at now; `v` is its value as written by the move, for roll-forward. */
  readonly to: string;
  readonly ag: number;
  readonly v: LiveValue | TombstoneValue;
}

export type SlotValue = LiveValue | TombstoneValue | ForwardValue;

/** A script's reply for one owner operation. */
export interface OwnerReply {
  readonly status: 'applied' | 'created' | 'exists' | 'conflict' | 'missing' | 'moved' | 'data-lost';
  readonly v?: SlotValue;
  /** applied/created with a move: where the record must be installed; moved: where it went. */
  readonly to?: string;
}

export function toRecord(value: LiveValue): OwnerRecord {
  const record = {
    kind: value.k,
    id: value.id,
    type: value.t,
    owner: { nodeId: value.n, lifecycleGeneration: value.g },
    objectGeneration: value.og,
    authorityGeneration: value.ag,
  };
  // Spreads only for the rare membership fields: a record without them is one plain literal (casMany: one per entry).
  if (value.sp === undefined && !value.sw) return record;
  return { ...record, ...(value.sp !== undefined && { spot: value.sp }), ...(value.sw && { spotWide: true }) };
}

export function liveRecord(value: SlotValue | undefined): OwnerRecord | undefined {
  return value?.s === 'L' ? toRecord(value) : undefined;
}
