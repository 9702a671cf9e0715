/**
 * Spec 05 §17 "SpotWide/PerActor handoff": one test per item (§7, §10.2–§10.5, §12), each on every stack
 * (memory, Redis, and Redis Cluster, where the SpotWide aggregate script runs in its Spot's hash slot).
 * Public API plus unit events; the Location Store is observed through a thin wrapper around the real store,
 * and the last item drives the target host's coordinator with a duplicated relocation request.
 */
import { randomUUID } from 'node:crypto';
import {
  defineActor,
  defineSpot,
  FrameworkRuntimeState,
  preserveState,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  UNIT_CHANGED,
  type FrameworkRuntime,
  type NodeRef,
  type ObjectContext,
  type ObjectRef,
  type SpotContext,
  type UnitEvent,
} from '../runtime';
import type { Host } from '../runtime/host';
import { describeType } from '../runtime/relocation/compatibility';
import { encodePayload, PAYLOAD_VERSION } from '../runtime/relocation/payload';
import { RELOCATION_MESSAGE } from '../runtime/relocation/protocol';
import type { Envelope } from '../runtime/envelope';
import { encodeValue } from '../runtime/codec';
import { eventually, FAST_TIMING, makeStack, stacksWithCluster, type Stack } from './support/stack';
import { checkSequence } from './support/workload';

const PM = RelocationMode.PlannedMaintenance;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ── application types of this file ──────────────────────────────────────────────────────────

interface Ledger {
  /** sender → processed sequence numbers, in processing order. */
  seen: Record<string, number[]>;
  ticks: { name: string; node: string }[];
  nodes: string[];
}

type Msg =
  | { op: 'seq'; from: string; n: number }
  | { op: 'ledger' }
  | { op: 'timer'; name: string; dueMs: number }
  | { op: 'where' }
  | { op: 'spot' }
  | { op: 'hold'; gate: string }
  | { op: 'defer'; gate: string };

/** Gates a test opens to end a long async turn. */
const gates = new Map<string, { promise: Promise<void>; open: () => void }>();
function gate(name: string): { promise: Promise<void>; open: () => void } {
  let g = gates.get(name);
  if (!g) {
    let open!: () => void;
    const promise = new Promise<void>((r) => (open = r));
    gates.set(name, (g = { promise, open }));
  }
  return g;
}

/** Every application turn that ran, in run order, across the hosts of this process. */
const journal: { obj: string; node: string; what: string }[] = [];

/** Adapter and membership callback calls, by type. */
const calls: Record<string, number> = {};
const count = (what: string) => void (calls[what] = (calls[what] ?? 0) + 1);
const resetCalls = () => {
  for (const k of Object.keys(calls)) delete calls[k];
};

function handle(state: Ledger, m: Msg, ctx: ObjectContext<Ledger>): unknown {
  switch (m.op) {
    case 'seq':
      (state.seen[m.from] ??= []).push(m.n);
      if (state.nodes[state.nodes.length - 1] !== ctx.nodeId) state.nodes.push(ctx.nodeId);
      journal.push({ obj: ctx.id, node: ctx.nodeId, what: `${m.from}#${m.n}` });
      return m.n;
    case 'ledger':
      return state;
    case 'timer':
      ctx.timers.schedule(m.name, { dueMs: m.dueMs });
      return true;
    case 'where':
      return ctx.nodeId;
    case 'spot':
      return ctx.spotId ?? null;
    case 'hold':
      return gate(m.gate).promise.then(() => ctx.nodeId);
    case 'defer':
      // §7: the end of this turn is the safe point a prepared relocation seals at.
      (ctx as SpotContext<Ledger>).relocationReady().defer();
      return gate(m.gate).promise.then(() => ctx.nodeId);
  }
}

const fresh = (): Ledger => ({ seen: {}, ticks: [], nodes: [] });
const counted = (type: string) =>
  preserveState<Ledger>({
    capture: (s) => (count(`${type}.capture`), Buffer.from(JSON.stringify(s))),
    restore: (b) => (count(`${type}.restore`), JSON.parse(b.toString('utf8')) as Ledger),
  });
const onTimer = (state: Ledger, name: string, ctx: ObjectContext<Ledger>) => {
  state.ticks.push({ name, node: ctx.nodeId });
  journal.push({ obj: ctx.id, node: ctx.nodeId, what: `tick:${name}` });
};
const membership = (type: string) => ({
  onActorJoin: () => count(`${type}.onActorJoin`),
  onJoinedActor: () => count(`${type}.onJoinedActor`),
  onLeaveActor: () => count(`${type}.onLeaveActor`),
});

const Player = defineActor<Ledger>({ type: 'Player', relocation: counted('Player'), create: fresh, receive: handle, onTimer });
const Room = defineSpot<Ledger>({
  type: 'Room',
  kind: 'user',
  executionMode: 'SpotWide',
  relocation: counted('Room'),
  create: fresh,
  receive: handle as never,
  onTimer: onTimer as never,
  ...membership('Room'),
});
const Lobby = defineSpot<Ledger>({
  type: 'Lobby',
  kind: 'user',
  executionMode: 'PerActor',
  relocation: counted('Lobby'),
  create: fresh,
  receive: handle as never,
  ...membership('Lobby'),
});
const SignaledRoom = defineSpot<Ledger>({
  type: 'SignaledRoom',
  kind: 'user',
  executionMode: 'SpotWide',
  readiness: 'ApplicationSignaled',
  relocation: counted('SignaledRoom'),
  create: fresh,
  receive: handle as never,
  onRelocationReadyCompleted: (_state, outcome, ctx) => void journal.push({ obj: ctx.id, node: ctx.nodeId, what: `ready:${outcome}` }),
});
const Shard = defineSpot<Ledger>({ type: 'Shard', kind: 'instance', relocation: counted('Shard'), create: fresh, receive: handle as never, onTimer: onTimer as never });
const TYPES = [Player, Room, Lobby, SignaledRoom, Shard];

// ── helpers ─────────────────────────────────────────────────────────────────────────────────

const ledger = (host: FrameworkRuntime, ref: ObjectRef) => host.request(ref, { op: 'ledger' }, { timeoutMs: 5000 }) as Promise<Ledger>;
const seq = (from: string, n: number): Msg => ({ op: 'seq', from, n });

/** Records every unit event of `host` from now on. */
function unitEvents(host: FrameworkRuntime): UnitEvent[] {
  const events: UnitEvent[] = [];
  host.on(UNIT_CHANGED, (e) => events.push(e));
  return events;
}

async function pair(stack: Stack, timing: Partial<typeof FAST_TIMING> = {}): Promise<{ source: FrameworkRuntime; target: FrameworkRuntime }> {
  const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: TYPES, timing: { ...FAST_TIMING, ...timing } });
  const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: TYPES, timing: { ...FAST_TIMING, ...timing } });
  return { source, target };
}

const relocated = { mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None };

/** Waits until the source has a unit waiting for its current turn (or application safe point) to end. */
const atSafePoint = (host: FrameworkRuntime, units = 1) =>
  eventually(() => (host.diagnostics().units.sourceByState.safePoint ?? 0) >= units, 5000, 'unit waiting at its safe point');

afterEach(() => {
  for (const g of gates.values()) g.open();
  gates.clear();
  journal.length = 0;
  resetCalls();
});

describe.each(stacksWithCluster())('§17 SpotWide/PerActor handoff on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await stack.close();
  });

  test('A SpotWide User Spot aggregate commits at once and moves queue, timer, and pending tick together.', async () => {
    const MEMBERS = 2500;
    // Observe the Location Store at the aggregate commit: the staged pages and every record right before and after.
    const location = stack.stores.location;
    const commits: { pages: number; before: (string | undefined)[]; after: (string | undefined)[] }[] = [];
    let stagedPages = 0;
    const stage = location.stageAggregate.bind(location);
    const commit = location.commitAggregate.bind(location);
    location.stageAggregate = async (request) => {
      const header = await stage(request);
      stagedPages = header.pageChecksums.length;
      return header;
    };
    const ids = [{ kind: 'spot' as const, id: 'big' }, ...Array.from({ length: MEMBERS }, (_, i) => ({ kind: 'actor' as const, id: `big-${i}` }))];
    location.commitAggregate = async (request) => {
      const before = (await location.getMany(ids)).map((r) => r?.owner.nodeId);
      const result = await commit(request);
      const after = (await location.getMany(ids)).map((r) => r?.owner.nodeId);
      commits.push({ pages: stagedPages, before, after });
      return result;
    };

    const { source, target } = await pair(stack);
    const targetEvents = unitEvents(target);
    await source.createSpot('Room', 'big');
    for (let i = 0; i < MEMBERS; i += 250)
      await Promise.all(ids.slice(1 + i, 1 + i + 250).map((o) => source.createActor('Player', o.id, { spot: 'big' })));

    // A registration that fires only after the move, and one that fires while a long turn holds the lane:
    // its tick sits in the queue at the seal, behind the turn, with two queued messages.
    await source.request({ spot: 'big' }, { op: 'timer', name: 'later', dueMs: 1000 });
    await source.request({ spot: 'big' }, { op: 'timer', name: 'early', dueMs: 20 });
    source.send({ spot: 'big' }, { op: 'hold', gate: 'big' });
    await sleep(80); // 'early' is due at 20 ms: its tick is queued behind the running turn
    source.send({ spot: 'big' }, seq('queued', 0));
    source.send({ actor: 'big-7' }, seq('queued', 0));

    const relocation = source.relocate({ mode: PM, deadlineMs: 20_000 });
    await atSafePoint(source);
    gate('big').open();
    expect(await relocation).toEqual(relocated);

    // Relocated is the source's cutover-submit terminal; the target's commit follows on its own.
    await eventually(() => targetEvents.some((e) => e.state === 'opened'), 10_000, 'target opened the aggregate');
    // One commit, over at least three pages, flipped the spot and all 2,500 members at once.
    expect(commits).toHaveLength(1);
    expect(commits[0]!.pages).toBeGreaterThanOrEqual(3);
    expect(commits[0]!.before.every((owner) => owner === 'source')).toBe(true);
    expect(commits[0]!.after.every((owner) => owner === 'target')).toBe(true);
    const committed = targetEvents.filter((e) => e.state === 'committed');
    expect(committed).toHaveLength(1);
    expect(committed[0]!.kind).toBe('spotWide');
    expect(new Set(committed[0]!.objects)).toEqual(new Set(['s:big', ...ids.slice(1).map((o) => `a:${o.id}`)]));
    for (const i of [0, 1249, 2499]) expect((await source.locate({ actor: `big-${i}` }))?.nodeId).toBe('target');

    // The queued messages and the pending tick ran once, on the target; the later registration fires there once.
    await eventually(async () => (await ledger(target, { spot: 'big' })).ticks.length === 2, 5000, 'both ticks on the target');
    const spot = await ledger(target, { spot: 'big' });
    expect(spot.ticks).toEqual([
      { name: 'early', node: 'target' },
      { name: 'later', node: 'target' },
    ]);
    expect(spot.seen).toEqual({ queued: [0] });
    // The pending tick ran from the moved queue, in its place before the queued message (not re-armed after it).
    expect(journal.filter((j) => j.obj === 'big').map((j) => `${j.what}@${j.node}`)).toEqual(['tick:early@target', 'queued#0@target', 'tick:later@target']);
    expect(spot.nodes).toEqual(['target']);
    const member = await ledger(target, { actor: 'big-7' });
    expect(member.seen).toEqual({ queued: [0] });
    expect(member.nodes).toEqual(['target']);
    await sleep(100);
    expect((await ledger(target, { spot: 'big' })).ticks).toHaveLength(2);
  }, 60_000);

  test("The target dispatcher registers the Spot and every member Actor in the same relocation temporary queue group while preserving each record's actual target.", async () => {
    const { source, target } = await pair(stack);
    const sourceEvents = unitEvents(source);
    const targetEvents = unitEvents(target);
    const objects: ObjectRef[] = [{ spot: 'grp' }, { actor: 'g0' }, { actor: 'g1' }, { actor: 'g2' }];
    const name = (ref: ObjectRef) => ('spot' in ref ? ref.spot : ref.actor);
    await source.createSpot('Room', 'grp');
    for (const ref of objects.slice(1)) await source.createActor('Player', name(ref), { spot: 'grp' });
    /** Three messages to every object from one phase; the sender name carries the object it is addressed to. */
    const sendPhase = (host: FrameworkRuntime, phase: string) => {
      for (let n = 0; n < 3; n++) for (const ref of objects) host.send(ref, seq(`${phase}>${name(ref)}`, n));
    };
    sendPhase(source, 'before');

    // Saved work: queued behind a long turn at the seal.
    source.send({ spot: 'grp' }, { op: 'hold', gate: 'grp' });
    sendPhase(source, 'saved');
    // Ingress hold on the source (after the seal), and the target's temporary queue: what the source follows to
    // the target after its cutover, before the target's CAS opens dispatch.
    source.on(UNIT_CHANGED, (e) => e.side === 'source' && e.state === 'sealed' && sendPhase(source, 'held'));
    source.on(UNIT_CHANGED, (e) => e.side === 'source' && e.state === 'cutOver' && sendPhase(source, 'staged'));

    const relocation = source.relocate({ mode: PM, deadlineMs: 10_000 });
    await atSafePoint(source);
    gate('grp').open();
    expect(await relocation).toEqual(relocated);
    sendPhase(source, 'after');

    // One unit, one temporary queue group covering the spot and every member.
    const ready = targetEvents.filter((e) => e.state === 'relayReady');
    expect(ready).toHaveLength(1);
    expect(new Set(ready[0]!.objects)).toEqual(new Set(['s:grp', 'a:g0', 'a:g1', 'a:g2']));
    expect(sourceEvents.filter((e) => e.state === 'sealed').map((e) => e.kind)).toEqual(['spotWide']);

    const phases = ['before', 'saved', 'held', 'staged', 'after'];
    for (const ref of objects) {
      await eventually(async () => checkSequence((await ledger(target, ref)).seen[`after>${name(ref)}`], 3) === undefined, 5000, `last phase at ${name(ref)}`);
      const state = await ledger(target, ref);
      // Every record reached the object it was addressed to, exactly once and in order.
      expect(Object.keys(state.seen).sort()).toEqual(phases.map((p) => `${p}>${name(ref)}`).sort());
      for (const p of phases) expect(state.seen[`${p}>${name(ref)}`]).toEqual([0, 1, 2]);
      expect(state.nodes).toEqual(['source', 'target']);
      // Per object, the phases ran in the order saved → held → staged → after.
      const order = journal.filter((j) => j.obj === name(ref) && j.node === 'target').map((j) => j.what.split('>')[0]);
      expect(order.filter((p, i) => i === 0 || order[i - 1] !== p)).toEqual(['saved', 'held', 'staged', 'after']);
    }
  }, 30_000);

  test("After every Restore and aggregate commit, the target moves saved work, pre-boundary relay, and remaining temporary work into the real queues in order, switches to the regular route, then completes OnRelocationReadyCompleted and opens dispatch. No participant's application work runs before that switch.", async () => {
    const { source, target } = await pair(stack);
    const targetEvents = unitEvents(target);
    await source.createSpot('SignaledRoom', 'sig');
    for (const id of ['s0', 's1']) await source.createActor('Player', id, { spot: 'sig' });
    const to: ObjectRef[] = [{ spot: 'sig' }, { actor: 's0' }, { actor: 's1' }];
    const sendAll = (host: FrameworkRuntime, phase: string) => {
      for (let n = 0; n < 2; n++) for (const ref of to) host.send(ref, seq(phase, n));
    };
    source.on(UNIT_CHANGED, (e) => {
      if (e.side !== 'source') return;
      if (e.state === 'sealed') sendAll(source, 'relay'); // held on the source, relayed before the cutover
      if (e.state === 'cutOver') sendAll(source, 'later'); // Message Follow → the target's temporary queue
    });
    let committedAt = -1;
    target.on(UNIT_CHANGED, (e) => {
      if (e.state === 'committed') committedAt = journal.length;
    });

    const relocation = source.relocate({ mode: PM, deadlineMs: 10_000 });
    await atSafePoint(source);
    // ApplicationSignaled: the relocation waits for the turn that calls relocationReady().defer().
    source.send({ spot: 'sig' }, { op: 'defer', gate: 'sig' });
    sendAll(source, 'saved'); // queued behind the deferring turn: saved work of the payload
    await sleep(20);
    expect(source.status.state).toBe(FrameworkRuntimeState.Relocating);
    gate('sig').open();
    expect(await relocation).toEqual(relocated);
    await eventually(() => journal.filter((j) => j.node === 'target').length === 1 + 3 * 3 * 2, 5000, 'every message on the target');

    const onTarget = journal.filter((j) => j.node === 'target');
    // OnRelocationReadyCompleted(Relocated) is the first turn on the target, after the commit; no participant ran before.
    expect(onTarget[0]).toEqual({ obj: 'sig', node: 'target', what: 'ready:Relocated' });
    expect(journal.indexOf(onTarget[0]!)).toBeGreaterThanOrEqual(committedAt);
    expect(committedAt).toBeGreaterThanOrEqual(0);
    expect(journal.some((j) => j.what === 'ready:Continued')).toBe(false);
    expect(journal.filter((j) => j.what.startsWith('ready:'))).toHaveLength(1);
    expect(targetEvents.map((e) => e.state)).toEqual(['relayReady', 'committed', 'opened']);
    // Per participant: saved work, then the pre-boundary relay, then the remaining temporary work.
    for (const ref of to) {
      const id = 'spot' in ref ? ref.spot : ref.actor;
      expect(onTarget.filter((j) => j.obj === id && !j.what.startsWith('ready:')).map((j) => j.what)).toEqual([
        'saved#0',
        'saved#1',
        'relay#0',
        'relay#1',
        'later#0',
        'later#1',
      ]);
    }
    expect(journal.filter((j) => j.node === 'source').map((j) => j.what)).toEqual([]);
  }, 30_000);

  test("A Message Follow route is removed after MessageFollowDuration independently of command 44 application. An Instance Spot isn't secretly re-created.", async () => {
    const FOLLOW_MS = 400;
    const { source, target } = await pair(stack, { messageFollowDurationMs: FOLLOW_MS });
    // A sender on a third node (a higher version, so never the PlannedMaintenance target) caches the old routes.
    const peer = await stack.host({ nodeId: 'peer', applicationVersion: 2, types: TYPES, timing: { ...FAST_TIMING, messageFollowDurationMs: FOLLOW_MS } });
    const sourceEvents = unitEvents(source);
    expect(await source.request({ spot: 'shard-1' }, { op: 'where' })).toBe('source'); // created by its first message
    const created = await stack.stores.relocation.getInstanceCreation('shard-1');
    expect(created?.owner.nodeId).toBe('source');
    await source.createActor('Player', 'c1');
    const refs: ObjectRef[] = [{ spot: 'shard-1' }, { actor: 'c1' }];
    let n = 0;
    const round = () => {
      for (const ref of refs) peer.send(ref, seq('peer', n));
      n++;
    };
    await eventually(async () => (await peer.request({ actor: 'c1' }, { op: 'where' }, { timeoutMs: 500 }).catch(() => '')) === 'source', 5000, 'peer reaches c1');
    expect(await peer.request({ spot: 'shard-1' }, { op: 'where' })).toBe('source');
    for (let i = 0; i < 3; i++) round();

    expect(await source.relocate({ mode: PM, deadlineMs: 10_000 })).toEqual(relocated);
    // Host relocation moves the one existing Instance Spot; it creates none.
    expect(source.diagnostics().lastInventory).toMatchObject({ instanceSpots: 1, actors: 1, objects: 2 });
    expect(source.diagnostics().followRoutes).toBe(2);
    for (let i = 0; i < 3; i++) round(); // the peer's cached route: forwarded by Message Follow

    await eventually(() => sourceEvents.filter((e) => e.state === 'followEnded').length === 2, 5000, 'both follow routes ended');
    expect(source.diagnostics().followRoutes).toBe(0);
    for (const ended of sourceEvents.filter((e) => e.state === 'followEnded')) {
      const cut = sourceEvents.find((e) => e.state === 'cutOver' && e.unit === ended.unit)!;
      expect(ended.point).toBe('S4');
      // Source clock only: S4 is MessageFollowDuration after S1, whatever the target did meanwhile.
      expect(ended.at - cut.at).toBeGreaterThanOrEqual(FOLLOW_MS);
    }
    // After S4 the old route still works for the peer: the source bounces, the peer re-resolves to the target.
    for (let i = 0; i < 3; i++) round();
    for (const ref of refs) {
      await eventually(async () => checkSequence((await ledger(peer, ref)).seen.peer, n) === undefined, 5000, `ledger of ${JSON.stringify(ref)}`);
      const state = await ledger(peer, ref);
      expect(state.nodes).toEqual(['source', 'target']); // one continuous ledger: state moved, not re-created
      expect((await source.locate(ref))?.nodeId).toBe('target');
    }
    // A message through the source never creates the Spot there again; the creation record is the first one.
    expect(await source.request({ spot: 'shard-1' }, { op: 'where' })).toBe('target');
    expect(await peer.request({ spot: 'shard-1' }, { op: 'where' })).toBe('target');
    expect((await source.locate({ spot: 'shard-1' }))?.nodeId).toBe('target');
    expect(await stack.stores.relocation.getInstanceCreation('shard-1')).toEqual(created);
    expect(calls['Shard.capture']).toBe(1);
    expect(calls['Shard.restore']).toBe(1);
    void target;
  }, 30_000);

  test("Entry Spot and PerActor User Spot move only Actors independently and don't call a Spot adapter or membership callback.", async () => {
    const { source, target } = await pair(stack);
    const events = unitEvents(source);
    for (const id of ['e0', 'e1']) await source.createActor('Player', id);
    await source.createSpot('Lobby', 'lob');
    await source.createActor('Player', 'l0', { spot: 'lob' });
    for (const id of ['l1', 'l2']) {
      await source.createActor('Player', id);
      await source.join(id, 'lob');
    }
    for (const id of ['e0', 'l1']) await source.request({ actor: id }, seq('before', 0));
    expect(calls['Lobby.onJoinedActor']).toBe(3); // application joins do call the callbacks
    resetCalls();

    expect(await source.relocate({ mode: PM, deadlineMs: 10_000 })).toEqual(relocated);

    // No Spot adapter and no membership callback ran for the move, on either side.
    expect(calls['Lobby.capture'] ?? 0).toBe(0);
    expect(calls['Lobby.restore'] ?? 0).toBe(0);
    for (const cb of ['onActorJoin', 'onJoinedActor', 'onLeaveActor']) expect(calls[`Lobby.${cb}`] ?? 0).toBe(0);
    // Each Actor used its own adapter, once per side.
    expect(calls['Player.capture']).toBe(5);
    expect(calls['Player.restore']).toBe(5);

    // The shell alone in batch 1; every Actor (Entry and PerActor member) its own unit in batch 2.
    const sealed = events.filter((e) => e.state === 'sealed');
    expect(sealed.filter((e) => e.batch === 1).map((e) => [e.kind, e.objects])).toEqual([['perActorShell', ['s:lob']]]);
    const actorUnits = sealed.filter((e) => e.batch === 2);
    expect(actorUnits.every((e) => e.kind === 'actor' && e.objects.length === 1)).toBe(true);
    expect(actorUnits.map((e) => e.objects[0]).sort()).toEqual(['a:e0', 'a:e1', 'a:l0', 'a:l1', 'a:l2']);
    expect(new Set(actorUnits.map((e) => e.unit)).size).toBe(5);
    expect(sealed.some((e) => e.kind === 'spotWide')).toBe(false);

    // Membership is unchanged on the target: members still belong to the Spot, Entry Actors to the Entry Spot.
    for (const id of ['l0', 'l1', 'l2']) expect(await target.request({ actor: id }, { op: 'spot' })).toBe('lob');
    for (const id of ['e0', 'e1']) expect(await target.request({ actor: id }, { op: 'spot' })).toBeNull();
    expect((await ledger(target, { actor: 'l1' })).seen).toEqual({ before: [0] });
    expect((await source.locate({ spot: 'lob' }))?.nodeId).toBe('target');
  }, 30_000);

  test("After the Spot authority transition, ToSpot/Create/Join use the target, and ToActor uses each Actor's current owner.", async () => {
    const { source, target } = await pair(stack);
    const peer = await stack.host({ nodeId: 'peer', applicationVersion: 2, types: TYPES });
    const targetEvents = unitEvents(target);
    await source.createSpot('Lobby', 'lob');
    for (const id of ['m0', 'm1', 'm2']) await source.createActor('Player', id, { spot: 'lob' });
    await eventually(async () => (await peer.request({ actor: 'm1' }, { op: 'where' }, { timeoutMs: 500 }).catch(() => '')) === 'source', 5000, 'peer reaches m1');
    source.send({ actor: 'm0' }, { op: 'hold', gate: 'm0' }); // m0 stays on the source until the gate opens

    // Between batch 1 and batch 2 (the shell's cutover): ToActor runs on the source, ToSpot follows to the target.
    let between: Promise<unknown> | undefined;
    source.on(UNIT_CHANGED, (e) => {
      if (e.side !== 'source' || e.kind !== 'perActorShell' || e.state !== 'cutOver') return;
      between = source.request({ actor: 'm1' }, { op: 'where' });
      source.send({ spot: 'lob' }, seq('between', 0));
    });
    const relocation = source.relocate({ mode: PM, deadlineMs: 15_000 });
    const opened = (key: string) => targetEvents.some((e) => e.state === 'opened' && e.objects.includes(key));
    await eventually(() => opened('s:lob') && opened('a:m1') && opened('a:m2'), 5000, 'shell, m1 and m2 open on the target');
    expect(await between).toBe('source');
    expect(source.status.state).toBe(FrameworkRuntimeState.Relocating); // m0 has not moved yet

    // ToSpot, Create and Join use the target.
    expect((await source.locate({ spot: 'lob' }))?.nodeId).toBe('target');
    expect(await peer.request({ spot: 'lob' }, { op: 'where' })).toBe('target');
    expect(await source.request({ spot: 'lob' }, { op: 'where' })).toBe('target');
    await target.createActor('Player', 'late-1', { spot: 'lob' });
    await target.createActor('Player', 'late-2');
    await target.join('late-2', 'lob');
    for (const id of ['late-1', 'late-2']) {
      expect(await peer.request({ actor: id }, { op: 'spot' })).toBe('lob');
      expect((await peer.locate({ actor: id }))?.nodeId).toBe('target');
    }
    await expect(source.createActor('Player', 'late-3', { spot: 'lob' })).rejects.toMatchObject({ name: 'AdmissionError' });

    // ToActor: each Actor's current owner.
    expect((await peer.locate({ actor: 'm0' }))?.nodeId).toBe('source');
    expect((await peer.locate({ actor: 'm1' }))?.nodeId).toBe('target');
    expect(await peer.request({ actor: 'm1' }, { op: 'where' })).toBe('target');
    const m0 = peer.request({ actor: 'm0' }, { op: 'where' }); // queued behind m0's turn, at its owner
    gate('m0').open();
    expect(await relocation).toEqual(relocated);
    expect(await m0).toBe('target'); // moved with m0's queue and answered by its new owner
    expect(await peer.request({ actor: 'm0' }, { op: 'where' })).toBe('target');
    expect((await ledger(target, { spot: 'lob' })).seen).toEqual({ between: [0] });
    expect((await ledger(target, { spot: 'lob' })).nodes).toEqual(['target']);
  }, 30_000);

  test("Spot and Actor relocation temporary queues are registered independently. The order of transferred existing work, temporary work, and direct work after the transition is preserved, and resending the same relocation request doesn't create the temporary queue and Restore twice.", async () => {
    const { source, target } = await pair(stack);
    const peer = await stack.host({ nodeId: 'peer', applicationVersion: 2, types: TYPES });
    const targetEvents = unitEvents(target);
    await source.createSpot('Lobby', 'ord');
    const members = ['o0', 'o1', 'o2'];
    for (const id of members) await source.createActor('Player', id, { spot: 'ord' });
    const refs: ObjectRef[] = [{ spot: 'ord' }, ...members.map((actor) => ({ actor }))];
    await eventually(async () => (await peer.request({ actor: 'o0' }, { op: 'where' }, { timeoutMs: 500 }).catch(() => '')) === 'source', 5000, 'peer reaches o0');

    // Continuous traffic from the peer across the whole move: existing work, temporary work, then direct work.
    let rounds = 0;
    let stop = false;
    const traffic = (async () => {
      while (!stop) {
        for (const ref of refs) peer.send(ref, seq('peer', rounds));
        rounds++;
        await sleep(3);
      }
    })();
    await sleep(30);
    source.send({ actor: 'o1' }, { op: 'hold', gate: 'o1' }); // o1's queue grows behind a turn: existing work at its seal
    const relocation = source.relocate({ mode: PM, deadlineMs: 10_000 });
    await atSafePoint(source);
    await sleep(20);
    gate('o1').open();
    expect(await relocation).toEqual(relocated);
    await sleep(50);
    stop = true;
    await traffic;

    // One temporary queue per unit: the Spot shell's and each Actor's, each registered and opened on its own.
    const ready = targetEvents.filter((e) => e.state === 'relayReady');
    expect(ready.map((e) => [...e.objects]).sort()).toEqual([['a:o0'], ['a:o1'], ['a:o2'], ['s:ord']]);
    expect(new Set(ready.map((e) => e.unit)).size).toBe(4);
    expect(targetEvents.filter((e) => e.state === 'opened')).toHaveLength(4);

    for (const ref of members.map((actor) => ({ actor }))) {
      await eventually(async () => checkSequence((await ledger(peer, ref)).seen.peer, rounds) === undefined, 5000, `order at ${ref.actor}`);
      expect((await ledger(peer, ref)).nodes).toEqual(['source', 'target']);
    }
    // The shell moves queue authority, not Spot fields: the target's instance holds a gap-free suffix ending last.
    const lobby = (await ledger(peer, { spot: 'ord' })).seen.peer ?? [];
    expect(lobby.length).toBeGreaterThan(0);
    expect(checkSequence(lobby.map((x) => x - lobby[0]!), rounds - lobby[0]!)).toBeUndefined();

    // Resending the same relocation request (prepare and payload) to the target: one temporary queue, one Restore.
    const host = target as unknown as Host;
    const from: NodeRef = { nodeId: 'ghost', lifecycleGeneration: 1 };
    const { record } = await stack.stores.location.claim({ object: { kind: 'actor', id: 'dup' }, type: 'Player', owner: from, opId: randomUUID() });
    const u = randomUUID().replace(/-/g, '');
    const prepare = { t: RELOCATION_MESSAGE.prepare, units: [{ u, kind: 'actor', keys: ['a:dup'], ty: [0] }], types: [describeType(Player)] };
    const inFlightBefore = target.diagnostics().units.targetInFlight;
    host.relocation.onControl(from, prepare);
    host.relocation.onControl(from, prepare);
    expect(host.relocation.inboundObjects).toBe(1);
    expect(target.diagnostics().units.targetInFlight).toBe(inFlightBefore + 1);
    const env = (n: number, sender: string): Envelope => ({ id: randomUUID(), to: 'a:dup', gen: record.objectGeneration, body: encodeValue(seq(sender, n), 'message'), from });
    host.router.dispatch(env(0, 'staged'), true); // followed by the source: into the one temporary queue
    const bytes = encodePayload({
      v: PAYLOAD_VERSION,
      unit: u,
      kind: 'actor',
      objects: [
        {
          key: 'a:dup',
          type: 'Player',
          gen: record.objectGeneration,
          auth: record.authorityGeneration,
          mode: 'entry',
          state: Buffer.from(JSON.stringify({ seen: { saved: [0] }, ticks: [], nodes: ['ghost'] })),
          timers: [],
        },
      ],
      queue: [{ k: 'msg', to: 'a:dup', env: env(1, 'saved') }],
    });
    resetCalls();
    host.relocation.onPayload(from, u, { ok: true, bytes });
    host.relocation.onPayload(from, u, { ok: true, bytes });
    // Each payload is taken in a turn of its own (relocation/target/inbound.ts): both are in after two turns.
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(calls['Player.restore']).toBe(1);
    const cutover = { t: RELOCATION_MESSAGE.cutover, u, relay: [env(0, 'relay')] };
    host.relocation.onControl(from, cutover);
    host.relocation.onControl(from, { ...cutover, retransmit: true });
    await eventually(() => targetEvents.some((e) => e.unit === u && e.state === 'opened'), 5000, 'duplicated unit opened');
    target.send({ actor: 'dup' }, seq('direct', 0));
    host.relocation.onControl(from, { ...cutover, retransmit: true }); // late, after dispatch opened: nothing twice
    await eventually(async () => ((await ledger(target, { actor: 'dup' })).seen.direct ?? []).length === 1, 5000, 'direct work on dup');
    await sleep(50);
    expect(targetEvents.filter((e) => e.unit === u).map((e) => e.state)).toEqual(['relayReady', 'committed', 'opened']);
    expect(calls['Player.restore']).toBe(1);
    const dup = await ledger(target, { actor: 'dup' });
    expect(dup.seen).toEqual({ saved: [0, 1], relay: [0], staged: [0], direct: [0] });
    expect(journal.filter((j) => j.obj === 'dup').map((j) => j.what)).toEqual(['saved#1', 'relay#0', 'staged#0', 'direct#0']);
    expect((await target.locate({ actor: 'dup' }))?.nodeId).toBe('target');
    expect(host.relocation.inboundObjects).toBe(0);
  }, 30_000);
});
