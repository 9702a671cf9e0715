/**
 * Application types for scenario tests. Every object records, per sender, the sequence numbers it processed,
 * so a test can prove exactly-once and per-sender order across a relocation.
 */
import { defineActor, defineSpot, preserveState, type ObjectContext } from '../../runtime';

export interface Ledger {
  /** sender → processed sequence numbers, in processing order. */
  seen: Record<string, number[]>;
  ticks: { name: string; node: string }[];
  nodes: string[];
  topic?: string;
}

const json = <S>() =>
  preserveState<S>({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString('utf8')) as S });

export type WorkMessage =
  | { op: 'seq'; from: string; n: number }
  | { op: 'ledger' }
  | { op: 'timer'; name: string; dueMs: number; periodMs?: number }
  | { op: 'where' };

function handle(state: Ledger, message: WorkMessage, ctx: ObjectContext<Ledger>): unknown {
  switch (message.op) {
    case 'seq':
      (state.seen[message.from] ??= []).push(message.n);
      if (state.nodes[state.nodes.length - 1] !== ctx.nodeId) state.nodes.push(ctx.nodeId);
      return message.n;
    case 'ledger':
      return state;
    case 'timer':
      ctx.timers.schedule(message.name, { dueMs: message.dueMs, ...(message.periodMs ? { periodMs: message.periodMs } : {}) });
      return true;
    case 'where':
      return ctx.nodeId;
  }
}

const fresh = (): Ledger => ({ seen: {}, ticks: [], nodes: [] });

export const Counter = defineActor<Ledger>({
  type: 'Counter',
  relocation: json<Ledger>(),
  create: fresh,
  receive: handle,
  onTimer: (state, name, ctx) => void state.ticks.push({ name, node: ctx.nodeId }),
});

export const Player = defineActor<Ledger>({
  type: 'Player',
  relocation: json<Ledger>(),
  create: fresh,
  receive: handle,
  onTimer: (state, name, ctx) => void state.ticks.push({ name, node: ctx.nodeId }),
});

export interface RoomState extends Ledger {
  joined: string[];
  closing: string[];
  readyCompleted: string[];
}

const room = (): RoomState => ({ ...fresh(), joined: [], closing: [], readyCompleted: [] });

export const Room = defineSpot<RoomState>({
  type: 'Room',
  kind: 'user',
  executionMode: 'SpotWide',
  relocation: json<RoomState>(),
  create: room,
  receive: handle as never,
  onTimer: (state, name, ctx) => void state.ticks.push({ name, node: ctx.nodeId }),
  onJoinedActor: (state, actorId) => void state.joined.push(actorId),
  onClosing: (state, reason) => void state.closing.push(reason),
});

export const Lobby = defineSpot<RoomState>({
  type: 'Lobby',
  kind: 'user',
  executionMode: 'PerActor',
  relocation: json<RoomState>(),
  create: room,
  receive: handle as never,
  onJoinedActor: (state, actorId) => void state.joined.push(actorId),
  onClosing: (state, reason) => void state.closing.push(reason),
});

export const Shard = defineSpot<Ledger>({
  type: 'Shard',
  kind: 'instance',
  relocation: json<Ledger>(),
  create: fresh,
  receive: handle as never,
  onTimer: (state, name, ctx) => void state.ticks.push({ name, node: ctx.nodeId }),
});

export const ALL_TYPES = [Counter, Player, Room, Lobby, Shard];

/** Asserts exactly once and in order for one sender: 0..count-1. */
export function checkSequence(seen: number[] | undefined, count: number): string | undefined {
  const got = seen ?? [];
  if (got.length !== count) return `expected ${count} messages, got ${got.length}`;
  for (let i = 0; i < count; i++) if (got[i] !== i) return `position ${i}: expected ${i}, got ${got[i]}`;
  return undefined;
}
