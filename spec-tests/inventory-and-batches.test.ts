/**
 * Spec 05 §17 "Inventory and batches": one test per item (§7, §10, §12). The fixed inventory is read from
 * diagnostics().lastInventory, the units and their order from the source's unit events (zlink.relocation.unit_changed).
 * Every scenario runs on every stack (memory + in-process, Redis + ws, Redis Cluster + ws).
 */
import {
  defineActor,
  preserveState,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  UNIT_CHANGED,
  type FrameworkRuntime,
  type ObjectRef,
  type UnitEvent,
} from '../runtime';
import { eventually, FAST_TIMING, makeStack, stacksWithCluster, type Stack } from './support/stack';
import { ALL_TYPES, checkSequence, type Ledger } from './support/workload';

const PM = RelocationMode.PlannedMaintenance;
const RELOCATED = { mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None };

/** An Actor whose 'hang' turn runs until the test opens the gate: its unit cannot reach its safe point before. */
let openGate: () => void = () => undefined;
let gateRunning = false;
const Gate = defineActor<{ n: number }>({
  type: 'Gate',
  relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) as { n: number } }),
  create: () => ({ n: 0 }),
  receive: (state, message: { op: 'hang' | 'where' }, ctx) => {
    if (message.op === 'where') return ctx.nodeId;
    gateRunning = true;
    return new Promise((resolve) => (openGate = () => resolve(++state.n)));
  },
});

/** An Actor with a few KiB of state, so a small payload budget holds only some units at once. */
interface PaddedState {
  pad: string;
  seen: Record<string, number[]>;
}
const Padded = defineActor<PaddedState>({
  type: 'Padded',
  relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) as PaddedState }),
  create: () => ({ pad: 'x'.repeat(4096), seen: {} }),
  receive: (state, message: { op: 'seq'; from: string; n: number } | { op: 'ledger' } | { op: 'where' }, ctx) => {
    if (message.op === 'seq') return void (state.seen[message.from] ??= []).push(message.n);
    if (message.op === 'where') return ctx.nodeId;
    return state.seen;
  },
});

const TYPES = [...ALL_TYPES, Gate, Padded];

function record(host: FrameworkRuntime, side: 'source' | 'target'): UnitEvent[] {
  const events: UnitEvent[] = [];
  host.on(UNIT_CHANGED, (e) => void (e.side === side && events.push(e)));
  return events;
}

async function allOwnedBy(host: FrameworkRuntime, refs: ObjectRef[], nodeId: string): Promise<void> {
  await eventually(async () => (await Promise.all(refs.map((r) => host.locate(r)))).every((o) => o?.nodeId === nodeId), 10_000, `every owner record names ${nodeId}`);
}

/** Largest number of units of `batch` that were sealed and not yet cut over at the same time. */
function maxOverlap(events: UnitEvent[], batch: number): number {
  let live = 0;
  let max = 0;
  for (const e of events) {
    if (e.batch !== batch) continue;
    if (e.state === 'sealed') max = Math.max(max, ++live);
    else if (e.state === 'cutOver') live--;
  }
  return max;
}

describe.each(stacksWithCluster())('Inventory and batches on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await stack.close();
  });

  test('Entry Spot Actors, PerActor shells and member Actors, SpotWide aggregates, Instance Spots, and standalone Actors each appear exactly once, while the Entry Spot instance is excluded.', async () => {
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: TYPES });
    const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: TYPES });
    const keys: string[] = [];
    for (let i = 0; i < 4; i++) {
      await source.createActor('Counter', `entry-${i}`);
      keys.push(`a:entry-${i}`);
    }
    await source.createSpot('Lobby', 'lobby'); // PerActor
    keys.push('s:lobby');
    for (let i = 0; i < 3; i++) {
      await source.createActor('Player', `lobby-${i}`);
      await source.join(`lobby-${i}`, 'lobby');
      keys.push(`a:lobby-${i}`);
    }
    await source.createSpot('Room', 'room'); // SpotWide with members
    await source.createSpot('Room', 'empty-room'); // SpotWide without members
    keys.push('s:room', 's:empty-room');
    for (let i = 0; i < 5; i++) await source.createActor('Player', `room-${i}`, { spot: 'room' });
    keys.push(...[0, 1, 2, 3].map((i) => `a:room-${i}`));
    // A standalone Actor: it left the Room's membership, so it moves on its own, not inside the aggregate.
    await source.leave('room-4');
    keys.push('a:room-4');
    for (let i = 0; i < 2; i++) {
      await source.request({ spot: `shard-${i}` }, { op: 'where' }); // Instance Spots, created by a first message
      keys.push(`s:shard-${i}`);
    }
    const sourceEvents = record(source, 'source');
    const targetEvents = record(target, 'target');

    expect(await source.relocate({ mode: PM, deadlineMs: 10_000 })).toEqual(RELOCATED);

    expect(source.diagnostics().lastInventory).toEqual({
      objects: 17,
      perActorShells: 1, // lobby
      actors: 8, // 4 Entry Spot Actors, 3 PerActor members, 1 standalone
      spotWideAggregates: 2, // room (4 members), empty-room
      instanceSpots: 2,
      spotWideMembers: 4,
    });
    const sealed = sourceEvents.filter((e) => e.state === 'sealed');
    expect(sealed).toHaveLength(1 + 8 + 4);
    // Every object is in exactly one unit; nothing else (no Entry Spot instance) is.
    const listed = sealed.flatMap((e) => e.objects);
    expect([...listed].sort()).toEqual([...keys].sort());
    expect(new Set(listed).size).toBe(listed.length);
    const byUnit = (key: string) => sealed.find((e) => e.objects.includes(key))!;
    expect(byUnit('s:lobby')).toMatchObject({ kind: 'perActorShell', batch: 1, objects: ['s:lobby'] });
    for (const k of ['a:entry-0', 'a:lobby-0', 'a:room-4']) expect(byUnit(k)).toMatchObject({ kind: 'actor', batch: 2, objects: [k] });
    expect(byUnit('s:room')).toMatchObject({ kind: 'spotWide', batch: 3 });
    expect([...byUnit('s:room').objects].sort()).toEqual(['a:room-0', 'a:room-1', 'a:room-2', 'a:room-3', 's:room']);
    expect(byUnit('s:empty-room')).toMatchObject({ kind: 'spotWide', objects: ['s:empty-room'] });
    expect(byUnit('s:shard-1')).toMatchObject({ kind: 'instance', batch: 3, objects: ['s:shard-1'] });
    // Each unit cut over once, and the target opened each once.
    expect(sourceEvents.filter((e) => e.state === 'cutOver').map((e) => e.unit).sort()).toEqual(sealed.map((e) => e.unit).sort());
    await eventually(() => targetEvents.filter((e) => e.state === 'opened').length === sealed.length, 5000, 'every unit opened');
    expect(new Set(targetEvents.filter((e) => e.state === 'opened').map((e) => e.unit)).size).toBe(sealed.length);
    const refs = keys.map((k): ObjectRef => (k[0] === 'a' ? { actor: k.slice(2) } : { spot: k.slice(2) }));
    await allOwnedBy(source, refs, 'target');
  }, 30_000);

  test('The PerActor shell, Actor, and aggregate batch order and its dependencies are kept, and only independent units in the same batch start concurrently.', async () => {
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: TYPES });
    const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: TYPES });
    await source.createSpot('Lobby', 'lobby');
    for (let i = 0; i < 3; i++) {
      await source.createActor('Player', `lobby-${i}`);
      await source.join(`lobby-${i}`, 'lobby');
    }
    for (let i = 0; i < 4; i++) await source.createActor('Counter', `entry-${i}`);
    await source.createActor('Gate', 'gate');
    await source.createSpot('Room', 'room');
    for (let i = 0; i < 2; i++) await source.createActor('Player', `room-${i}`, { spot: 'room' });
    for (let i = 0; i < 2; i++) await source.request({ spot: `shard-${i}` }, { op: 'where' });
    const events = record(source, 'source');

    const gateTurn = source.request({ actor: 'gate' }, { op: 'hang' }, { timeoutMs: 20_000 });
    await eventually(() => gateRunning, 2000, 'gate turn running');
    const relocation = source.relocate({ mode: PM, deadlineMs: 20_000 });

    // Batch 2 runs its independent Actor units while the gate's unit still waits for its current turn to end…
    const isBatch2Actor = (e: UnitEvent) => e.batch === 2 && !e.objects.includes('a:gate');
    await eventually(() => events.filter((e) => isBatch2Actor(e) && e.state === 'cutOver').length === 7, 5000, 'batch 2 without the gate');
    // …and batch 3 does not start before every unit of batch 2 reached its terminal.
    await new Promise((r) => setTimeout(r, 100));
    expect(events.filter((e) => e.objects.includes('a:gate'))).toEqual([]);
    expect(events.filter((e) => e.batch === 3)).toEqual([]);
    expect(source.diagnostics().blockers).toContainEqual({ object: 'a:gate', reason: 'waiting for the current turn or application safe point' });

    openGate();
    expect(await gateTurn).toBe(1); // the turn ended on the source, then the Actor moved
    expect(await relocation).toEqual(RELOCATED);

    // Order: every unit of batch b reached its cutover terminal (S1) before any unit of batch b+1 was sealed (S0).
    const index = (pred: (e: UnitEvent) => boolean) => events.map((e, i) => (pred(e) ? i : -1)).filter((i) => i >= 0);
    for (const b of [1, 2]) {
      const lastEnd = Math.max(...index((e) => e.batch === b && e.state === 'cutOver'));
      const firstStart = Math.min(...index((e) => e.batch === b + 1 && e.state === 'sealed'));
      expect([b, lastEnd < firstStart]).toEqual([b, true]);
    }
    expect(index((e) => e.batch === 1 && e.state === 'sealed')).toHaveLength(1);
    expect(index((e) => e.batch === 2 && e.state === 'sealed')).toHaveLength(8); // 3 PerActor members, 4 Entry, gate
    expect(index((e) => e.batch === 3 && e.state === 'sealed')).toHaveLength(3); // room (+2 members), 2 shards
    // Units of one batch run at the same time; a SpotWide member never is a unit of its own.
    expect(maxOverlap(events, 2)).toBeGreaterThan(1);
    expect(maxOverlap(events, 3)).toBeGreaterThan(1);
    expect(events.filter((e) => e.batch !== 3 && e.objects.some((k) => k.startsWith('a:room-')))).toEqual([]);
    expect(await target.request({ actor: 'gate' }, { op: 'where' })).toBe('target');
    expect(await source.request({ actor: 'lobby-2' }, { op: 'where' })).toBe('target');
  }, 30_000);

  test('No relocation-specific cap on unit count, participant count, or relay record count is required. Reaching the in-flight payload budget appears only as waiting before the seal, and doesn\'t fail a unit that already started.', async () => {
    const ACTORS = 1_000;
    const MEMBERS = 1_100; // more than one 1,024-entry target-list page
    const BUDGET = 64 * 1024; // ~15 units of 4 KiB state at once; the aggregate alone is larger than the whole budget
    const BURST = 30_000; // held for the aggregate's Spot alone: ~5 MB of relay, more than one transport frame holds
    // A cutover wait long enough for the target to parse a relay batch of that size (the fallback is not under test).
    const timing = { ...FAST_TIMING, relocationCutoverWaitTimeoutMs: 5000 };
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: TYPES, inFlightPayloadBudgetBytes: BUDGET, timing });
    const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: TYPES, inFlightPayloadBudgetBytes: BUDGET, timing });
    const targetEvents = record(target, 'target');
    const actors = Array.from({ length: ACTORS }, (_, i) => `p-${i}`);
    const members = Array.from({ length: MEMBERS }, (_, i) => `m-${i}`);
    for (let i = 0; i < ACTORS; i += 100) await Promise.all(actors.slice(i, i + 100).map((id) => source.createActor('Padded', id)));
    await source.createSpot('Room', 'big-room');
    for (let i = 0; i < MEMBERS; i += 100) await Promise.all(members.slice(i, i + 100).map((id) => source.createActor('Player', id, { spot: 'big-room' })));

    // Messages sent to an object once its unit is sealed are held and relayed before the cutover (§12): three per
    // Actor and 3,300 for the aggregate's members, and 30,000 for its Spot: tens of thousands of relay records.
    const events: UnitEvent[] = [];
    let maxWaitingForBudget = 0;
    let maxLive = 0;
    let sent = 0;
    source.on(UNIT_CHANGED, (e) => {
      if (e.side !== 'source') return;
      events.push(e);
      if (e.state !== 'sealed') return;
      // The seal is applied when this event fires: these wait in the ingress hold and go in the relay batch.
      if (e.kind === 'spotWide') for (let n = 0; n < BURST; n++) source.send({ spot: 'big-room' }, { op: 'seq', from: 'burst', n });
      const units = source.diagnostics({ limit: 0 }).units;
      maxWaitingForBudget = Math.max(maxWaitingForBudget, units.sourceByState.budget ?? 0);
      maxLive = Math.max(maxLive, units.sourceInFlight);
      setImmediate(() => {
        for (const key of e.objects) {
          if (!key.startsWith('a:')) continue;
          for (let n = 0; n < 3; n++) {
            source.send({ actor: key.slice(2) }, { op: 'seq', from: 'held', n });
            sent++;
          }
        }
      });
    });

    expect(await source.relocate({ mode: PM, deadlineMs: 60_000 })).toEqual(RELOCATED);
    expect(source.diagnostics().lastInventory).toMatchObject({ actors: ACTORS, spotWideAggregates: 1, spotWideMembers: MEMBERS });
    // Every unit of batch 2 was live at once (no cap on concurrent units), most of them waiting for budget before
    // their seal; every unit that started ended in its cutover — none failed, none was restored.
    expect(maxLive).toBe(ACTORS);
    expect(maxWaitingForBudget).toBeGreaterThan(0);
    expect(events.filter((e) => e.state === 'sealed')).toHaveLength(ACTORS + 1);
    expect(events.filter((e) => e.state === 'cutOver' && e.submitOk)).toHaveLength(ACTORS + 1);
    expect(events.filter((e) => e.state === 'restored' || e.state === 'notStarted')).toEqual([]);
    expect(sent).toBe(3 * (ACTORS + MEMBERS));

    // Each held message was processed exactly once, in order, on the target.
    const problems: string[] = [];
    const ledgers = await Promise.all([
      ...actors.map(async (id) => [id, ((await target.request({ actor: id }, { op: 'ledger' }, { timeoutMs: 10_000 })) as PaddedState['seen']).held] as const),
      ...members.map(async (id) => [id, ((await target.request({ actor: id }, { op: 'ledger' }, { timeoutMs: 10_000 })) as Ledger).seen.held] as const),
    ]);
    for (const [id, seen] of ledgers) {
      const problem = checkSequence(seen, 3);
      if (problem) problems.push(`${id}: ${problem}`);
    }
    const room = (await target.request({ spot: 'big-room' }, { op: 'ledger' }, { timeoutMs: 10_000 })) as Ledger;
    const roomProblem = checkSequence(room.seen.burst, BURST);
    if (roomProblem) problems.push(`big-room: ${roomProblem}`);
    expect(problems).toEqual([]);
    // Every batch arrived as a cutover (none took the fallback), and every unit opened once.
    expect(targetEvents.filter((e) => e.state === 'committed' && e.fellBack)).toEqual([]);
    expect(targetEvents.filter((e) => e.state === 'opened')).toHaveLength(ACTORS + 1);
    await allOwnedBy(source, [{ spot: 'big-room' }, { actor: 'm-1099' }, { actor: 'p-0' }, { actor: 'p-999' }], 'target');
    expect(await target.request({ actor: 'm-1099' }, { op: 'where' })).toBe('target');
  }, 60_000);
});
