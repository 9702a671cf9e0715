/**
 * The application of `npm run demo`: Entry Actors with a periodic timer, SpotWide rooms with member Actors, PerActor
 * lobbies with joined Actors, and Instance Spots. Every object records the traffic sequence numbers it processed, in
 * processing order, so the demo can count lost, duplicated and reordered messages after the move.
 */
import { defineActor, defineSpot, preserveState, type ObjectRef } from '../../runtime';

export interface Sizes {
  readonly actors: number;
  readonly rooms: number;
  readonly roomMembers: number;
  readonly lobbies: number;
  readonly lobbyMembers: number;
  readonly shards: number;
}

export interface Ledger {
  /** Traffic sequence numbers, in processing order (one sender). */
  seen: number[];
  ticks: number;
}

export type DemoMessage = { op: 't'; q: number } | { op: 'report' } | { op: 'arm'; dueMs: number; periodMs: number } | { op: 'where' };

/** Timer turns per node in this process (a moved timer fires on the target). */
export const timerFires = new Map<string, number>();

const json = preserveState<Ledger>({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString('utf8')) as Ledger });
const fresh = (): Ledger => ({ seen: [], ticks: 0 });

function receive(state: Ledger, m: DemoMessage, ctx: { nodeId: string; timers: { schedule(name: string, spec: { dueMs: number; periodMs?: number }): void } }): unknown {
  switch (m.op) {
    case 't':
      state.seen.push(m.q);
      return undefined;
    case 'report':
      return state.seen;
    case 'arm':
      ctx.timers.schedule('tick', { dueMs: m.dueMs, periodMs: m.periodMs });
      return undefined;
    case 'where':
      return ctx.nodeId;
  }
}

const onTimer = (state: Ledger, _name: string, ctx: { nodeId: string }) => {
  state.ticks++;
  timerFires.set(ctx.nodeId, (timerFires.get(ctx.nodeId) ?? 0) + 1);
};

export const EntryActor = defineActor<Ledger>({ type: 'DemoEntry', relocation: json, create: fresh, receive, onTimer });
export const Member = defineActor<Ledger>({ type: 'DemoMember', relocation: json, create: fresh, receive });
export const Room = defineSpot<Ledger>({ type: 'DemoRoom', kind: 'user', executionMode: 'SpotWide', relocation: json, create: fresh, receive });
export const Lobby = defineSpot<Ledger>({ type: 'DemoLobby', kind: 'user', executionMode: 'PerActor', relocation: json, create: fresh, receive });
export const Shard = defineSpot<Ledger>({ type: 'DemoShard', kind: 'instance', relocation: json, create: fresh, receive });
export const DEMO_TYPES = [EntryActor, Member, Room, Lobby, Shard];

export const ids = {
  actor: (i: number) => `e-${i}`,
  room: (r: number) => `room-${r}`,
  roomMember: (r: number, m: number) => `rm-${r}-${m}`,
  lobby: (l: number) => `lobby-${l}`,
  lobbyMember: (l: number, m: number) => `lm-${l}-${m}`,
  shard: (s: number) => `shard-${s}`,
};

/**
 * What the spare host's traffic addresses: every object except the PerActor lobbies themselves (§10.2: a PerActor
 * shell moves queue authority, not Spot fields, so its ledger would start over on the target by design).
 */
export function trafficRefs(s: Sizes): ObjectRef[] {
  const refs: ObjectRef[] = [];
  for (let i = 0; i < s.actors; i++) refs.push({ actor: ids.actor(i) });
  for (let r = 0; r < s.rooms; r++) {
    refs.push({ spot: ids.room(r) });
    for (let m = 0; m < s.roomMembers; m++) refs.push({ actor: ids.roomMember(r, m) });
  }
  for (let l = 0; l < s.lobbies; l++) for (let m = 0; m < s.lobbyMembers; m++) refs.push({ actor: ids.lobbyMember(l, m) });
  for (let i = 0; i < s.shards; i++) refs.push({ spot: ids.shard(i), type: Shard.type });
  return refs;
}

/** Relocation units by kind this workload makes (§7 inventory): what the progress bar counts to. */
export function expectedUnits(s: Sizes): Record<string, number> {
  return { actor: s.actors + s.lobbies * s.lobbyMembers, spotWide: s.rooms, perActorShell: s.lobbies, instance: s.shards };
}
