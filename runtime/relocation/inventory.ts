/**
 * §7: the inventory, read once right before the host enters Relocating. Every Actor appears exactly once:
 * Entry Spot Actors and PerActor members as Actor units, SpotWide members only inside their aggregate.
 * The Entry Spot itself is not a unit.
 */
import { randomBytes } from 'node:crypto';
import type { Hosted, ObjectServer } from '../objects';
import { spotKey } from '../keys';
import type { UnitKind } from './protocol';

export interface UnitPlan {
  /** Non-zero 128-bit id (§10.3), 32 hex digits; also the payload id. */
  readonly id: string;
  readonly kind: UnitKind;
  readonly batch: 1 | 2 | 3;
  /** The Actor, or the Spot of a shell / aggregate / Instance Spot. */
  readonly root: Hosted;
  /** SpotWide aggregate members (empty otherwise). */
  readonly members: readonly Hosted[];
}

export interface Inventory {
  readonly batches: readonly [readonly UnitPlan[], readonly UnitPlan[], readonly UnitPlan[]];
  readonly objectCount: number;
}

/** Random bytes for ids, drawn 4 KiB at a time (one randomBytes call per unit cost ~2 µs; 100k units at once). */
let pool = Buffer.alloc(0);
let poolAt = 0;

export function newUnitId(): string {
  for (;;) {
    if (poolAt + 16 > pool.length) {
      pool = randomBytes(4096);
      poolAt = 0;
    }
    const id = pool.toString('hex', poolAt, (poolAt += 16));
    if (!/^0+$/.test(id)) return id;
  }
}

/** The members of every unit but a SpotWide aggregate: one shared empty list, not one per unit (100k at once). */
const NO_MEMBERS: readonly Hosted[] = Object.freeze([]);

export function fixInventory(objects: ObjectServer): Inventory {
  const shells: UnitPlan[] = [];
  const actors: UnitPlan[] = [];
  const aggregates: UnitPlan[] = [];
  let objectCount = 0;
  const membersOf = new Map<string, Hosted[]>();
  for (const o of objects.values()) {
    objectCount++;
    if (o.kind === 'actor') {
      const spot = o.spotId !== undefined ? objects.get(spotKey(o.spotId)) : undefined;
      if (spot?.mode === 'SpotWide') {
        let list = membersOf.get(spot.key);
        if (!list) membersOf.set(spot.key, (list = []));
        list.push(o);
      } else actors.push({ id: newUnitId(), kind: 'actor', batch: 2, root: o, members: NO_MEMBERS });
    }
  }
  for (const o of objects.values()) {
    if (o.kind !== 'spot') continue;
    if (o.mode === 'PerActor') shells.push({ id: newUnitId(), kind: 'perActorShell', batch: 1, root: o, members: NO_MEMBERS });
    else if (o.mode === 'SpotWide') aggregates.push({ id: newUnitId(), kind: 'spotWide', batch: 3, root: o, members: membersOf.get(o.key) ?? [] });
    else if (o.mode === 'instance') aggregates.push({ id: newUnitId(), kind: 'instance', batch: 3, root: o, members: NO_MEMBERS });
  }
  return { batches: [shells, actors, aggregates], objectCount };
}

/** Every object a unit moves, root first. */
export function unitObjects(plan: UnitPlan): Hosted[] {
  return plan.members.length ? [plan.root, ...plan.members] : [plan.root];
}
