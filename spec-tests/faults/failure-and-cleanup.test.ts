/**
 * Spec 05 §17 "Failure and cleanup", the items that need an injected failure (§11, §13): a target whose Restore
 * throws, a corrupted payload chunk (checksum mismatch), a dropped cutover submit, and a Location/descriptor store
 * whose publish fails. Failures are injected only at a boundary: a wrapper around the real transport or the real
 * memoryStores(), and the transport codec's test hook. One test per item.
 */
import { createTransport } from '../../transport';
import { codecTestHooks } from '../../transport/frames';
import type { TransportFactory } from '../../transport/types';
import {
  AdmissionError,
  createRuntime,
  defineSpot,
  FrameworkRuntimeState,
  memoryStores,
  preserveState,
  RELOCATION_CHANGED,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  StoreUnavailableError,
  TERMINATION_CHANGED,
  TerminationOutcome,
  TerminationReason,
  UNIT_CHANGED,
  type FrameworkRuntime,
  type ObjectRef,
  type RuntimeStatus,
  type Stores,
  type UnitEvent,
} from '../../runtime';
import { eventually, FAST_TIMING, makeStack, STACKS, type Stack } from '../support/stack';
import { checkSequence, Counter, Player, Shard } from '../support/workload';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const PM = RelocationMode.PlannedMaintenance;

// ── a SpotWide User Spot whose target-side version can refuse Restore ─────────────────────────────────────────

interface FragileState {
  seen: Record<string, number[]>;
  nodes: string[];
  ticks: { name: string; node: string }[];
}
type FragileMessage =
  | { op: 'seq'; from: string; n: number }
  | { op: 'slow'; ms: number }
  | { op: 'timer'; name: string; dueMs: number }
  | { op: 'ledger' }
  | { op: 'where' };

/**
 * The same stable type and the same adapter name on every node (so §5 order 3 finds them compatible); only the
 * target's restore differs. `ran` records every handler turn of that node's version.
 */
function fragileType(opts: { restoreThrows: boolean; ran: string[] }) {
  return defineSpot<FragileState>({
    type: 'Fragile',
    kind: 'user',
    executionMode: 'SpotWide',
    relocation: preserveState<FragileState>({
      adapter: 'fragile-v1',
      capture: (s) => Buffer.from(JSON.stringify(s)),
      restore: (b) => {
        if (opts.restoreThrows) throw new Error('this node cannot restore Fragile state');
        return JSON.parse(b.toString('utf8')) as FragileState;
      },
    }),
    create: () => ({ seen: {}, nodes: [], ticks: [] }),
    receive: (state, message: FragileMessage, ctx) => {
      opts.ran.push(message.op);
      switch (message.op) {
        case 'seq':
          (state.seen[message.from] ??= []).push(message.n);
          if (state.nodes[state.nodes.length - 1] !== ctx.nodeId) state.nodes.push(ctx.nodeId);
          return message.n;
        case 'slow':
          return sleep(message.ms).then(() => 'slow');
        case 'timer':
          ctx.timers.schedule(message.name, { dueMs: message.dueMs });
          return true;
        case 'ledger':
          return state;
        case 'where':
          return ctx.nodeId;
      }
    },
    onTimer: (state, name, ctx) => void state.ticks.push({ name, node: ctx.nodeId }),
  });
}

/**
 * The real transport, except that the first cutover submit of the unit named by `drop.unit` fails (returns false):
 * its own `r.cutover`, or the `r.cutovers` that carries it with the other units cut over in the same step (whose
 * submits fail with it).
 */
function droppingCutover(drop: { unit?: string; dropped: number }): TransportFactory {
  return (options) => {
    const inner = createTransport(options);
    const send: typeof inner.send = (peer, message) => {
      const carries =
        (message.t === 'r.cutover' && message.u === drop.unit && !message.retransmit) || (message.t === 'r.cutovers' && (message.us as string[]).includes(drop.unit!));
      if (carries && drop.dropped === 0) {
        drop.dropped++;
        return false;
      }
      return inner.send(peer, message);
    };
    return Object.assign(Object.create(inner) as typeof inner, { send });
  };
}

function unitEvents(host: FrameworkRuntime): UnitEvent[] {
  const events: UnitEvent[] = [];
  host.on(UNIT_CHANGED, (e) => void events.push(e));
  return events;
}

async function reaches(from: FrameworkRuntime, ref: ObjectRef, owner: string): Promise<void> {
  await eventually(async () => (await from.request(ref, { op: 'where' }, { timeoutMs: 500 }).catch(() => '')) === owner, 5000, `${from.nodeId} reaches ${owner}`);
}

describe.each(STACKS)('Failure and cleanup (faults) on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    codecTestHooks.mutateChunkData = undefined;
    await stack.close();
  });

  test("Only on an explicit abort before relay-ready is accepted is the target temporary queue discarded without running and the source's original work restored to the queue. After that boundary, source isn't restored regardless of cutover-submit result.", async () => {
    const ranOnSource: string[] = [];
    const ranOnTarget: string[] = [];
    const ranOnTargetB: string[] = [];
    const drop = { unit: undefined as string | undefined, dropped: 0 };
    const source = await stack.host({
      nodeId: 'source',
      applicationVersion: 1,
      types: [Counter, Player, Shard, fragileType({ restoreThrows: false, ran: ranOnSource })],
      transport: droppingCutover(drop),
    });
    const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: [Counter, Player, Shard, fragileType({ restoreThrows: true, ran: ranOnTarget })] });
    const sourceEvents = unitEvents(source);
    const targetEvents = unitEvents(target);

    const counters: ObjectRef[] = [];
    for (let i = 0; i < 6; i++) {
      await source.createActor('Counter', `c-${i}`);
      counters.push({ actor: `c-${i}` });
    }
    expect(await source.request({ spot: 'shard-1' }, { op: 'where' })).toBe('source'); // an Instance Spot, batch 3
    await source.createSpot('Fragile', 'frag-1');
    await source.createActor('Player', 'frag-member', { spot: 'frag-1' });
    await target.createActor('Counter', 'probe-target');
    await reaches(source, { actor: 'probe-target' }, 'target');

    let n = 0;
    const seq = () => source.send({ spot: 'frag-1' }, { op: 'seq', from: 'source', n: n++ });
    for (let i = 0; i < 5; i++) seq(); // processed before the move
    expect(await source.request({ spot: 'frag-1' }, { op: 'timer', name: 'once', dueMs: 600 })).toBe(true);

    let fragUnit: string | undefined;
    let queuedBeforeSeal = 0;
    let heldAfterSeal = 0;
    const offFirst = source.on(UNIT_CHANGED, (e) => {
      if (e.side !== 'source' || e.state !== 'sealed') return;
      if (e.objects.includes('a:c-0')) drop.unit = e.unit; // this unit's one cutover submit fails
      if (e.batch === 2 && queuedBeforeSeal === 0) {
        // Keep the Fragile Spot in a long turn while batch 2 moves; what arrives meanwhile is its original queue.
        source.send({ spot: 'frag-1' }, { op: 'slow', ms: 150 });
        for (let i = 0; i < 10; i++, queuedBeforeSeal++) seq();
      }
      if (e.objects.includes('s:frag-1')) {
        fragUnit = e.unit;
        // Right after the seal: these wait in the ingress hold until the unit ends.
        queueMicrotask(() => {
          for (let i = 0; i < 10; i++, heldAfterSeal++) seq();
        });
      }
    });

    const blocked = await source.relocate({ mode: PM, deadlineMs: 15_000 });
    offFirst();
    expect(blocked).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Blocked, reason: RelocationReason.RelocationFailed });
    expect(source.status.state).toBe(FrameworkRuntimeState.Serving);
    expect(source.status.isReady).toBe(true);
    expect(queuedBeforeSeal).toBe(10);
    expect(heldAfterSeal).toBe(10);
    for (let i = 0; i < 5; i++) seq(); // new work after the host is Serving again
    const total = n;

    // The explicit failure came before relay-ready: the target discarded its temporary queue group, ran nothing,
    // and the source runs its original queue, then the held messages in arrival order, each exactly once.
    expect(sourceEvents.filter((e) => e.unit === fragUnit).map((e) => e.state)).toEqual(['sealed', 'restored']);
    expect(targetEvents.filter((e) => e.unit === fragUnit).map((e) => e.state)).toEqual(['discarded']);
    expect(ranOnTarget).toEqual([]);
    await eventually(async () => ((await source.request({ spot: 'frag-1' }, { op: 'ledger' })) as FragileState).seen.source?.length === total, 5000, 'fragile drained');
    const ledger = (await source.request({ spot: 'frag-1' }, { op: 'ledger' })) as FragileState;
    expect(checkSequence(ledger.seen.source, total)).toBeUndefined();
    expect(ledger.nodes).toEqual(['source']);
    expect(ranOnSource.filter((op) => op === 'seq')).toHaveLength(total);
    // Its timer was restored too and fires once, on the source.
    await eventually(async () => ((await source.request({ spot: 'frag-1' }, { op: 'ledger' })) as FragileState).ticks.length > 0, 5000, 'timer');
    await sleep(50);
    expect(((await source.request({ spot: 'frag-1' }, { op: 'ledger' })) as FragileState).ticks).toEqual([{ name: 'once', node: 'source' }]);
    for (const ref of [{ spot: 'frag-1' }, { actor: 'frag-member' }] as ObjectRef[]) expect((await source.locate(ref))?.nodeId).toBe('source');
    expect(await source.request({ actor: 'frag-member' }, { op: 'where' })).toBe('source');

    // Units that crossed relay-ready stay on the target — including the one whose cutover submit failed
    // (the target took it through the cutover-wait fallback). None of them was restored on the source.
    expect(drop.dropped).toBe(1);
    const dropped = sourceEvents.find((e) => e.unit === drop.unit && e.state === 'cutOver');
    expect(dropped?.submitOk).toBe(false);
    await eventually(async () => (await Promise.all([...counters, { spot: 'shard-1' }].map((r) => source.locate(r)))).every((o) => o?.nodeId === 'target'), 10_000, 'crossed units owned by the target');
    expect(targetEvents.find((e) => e.unit === drop.unit && e.state === 'committed')?.fellBack).toBe(true);
    const crossed = new Set(sourceEvents.filter((e) => e.state === 'cutOver').map((e) => e.unit));
    expect(crossed.size).toBe(counters.length + 1); // 6 Actors (batch 2) and the Instance Spot (batch 3)
    expect(sourceEvents.filter((e) => e.state === 'restored').map((e) => e.unit)).toEqual([fragUnit]);
    for (const ref of [...counters, { spot: 'shard-1' }] as ObjectRef[]) expect(await source.request(ref, { op: 'where' }, { timeoutMs: 5000 })).toBe('target');

    // Checksum mismatch (§13): the target answers with an explicit failure before relay-ready — the same path.
    const targetB = await stack.host({
      nodeId: 'target-b',
      applicationVersion: 1,
      weight: 10,
      types: [Counter, Player, Shard, fragileType({ restoreThrows: false, ran: ranOnTargetB })],
    });
    const targetBEvents = unitEvents(targetB);
    await targetB.createActor('Counter', 'probe-b');
    await reaches(source, { actor: 'probe-b' }, 'target-b');
    let corruptId: string | undefined;
    let corrupted = 0;
    // Units travel in parcels (one transport payload for the units sealed in one tick): corrupt the chunk that
    // carries this unit's bytes (its id is in the parcel in clear).
    codecTestHooks.mutateChunkData = (_id, _index, data) => {
      if (corruptId === undefined || corrupted > 0 || !data.includes(Buffer.from(corruptId))) return undefined;
      corrupted++;
      const copy = Buffer.from(data);
      copy[0] = copy[0]! ^ 0xff;
      return copy;
    };
    let held2 = 0;
    const offSecond = source.on(UNIT_CHANGED, (e) => {
      if (e.side !== 'source' || e.state !== 'sealed' || !e.objects.includes('s:frag-1')) return;
      corruptId = e.unit;
      queueMicrotask(() => {
        for (let i = 0; i < 5; i++, held2++) seq();
      });
    });
    const blocked2 = await source.relocate({ mode: PM, deadlineMs: 15_000 });
    offSecond();
    expect(blocked2).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Blocked, reason: RelocationReason.RelocationFailed });
    expect(corrupted).toBe(1);
    expect(held2).toBe(5);
    expect(source.status.state).toBe(FrameworkRuntimeState.Serving);
    // The target refused the parcel at intake (its checksum), so the source restored first and the target drops
    // the prepared unit when the source's abort arrives.
    await eventually(() => targetBEvents.some((e) => e.unit === corruptId && e.state === 'discarded'), 5000, 'target discarded the unit');
    expect(targetBEvents.filter((e) => e.unit === corruptId).map((e) => e.state)).toEqual(['discarded']);
    expect(ranOnTargetB).toEqual([]);
    const total2 = n;
    await eventually(async () => ((await source.request({ spot: 'frag-1' }, { op: 'ledger' })) as FragileState).seen.source?.length === total2, 5000, 'fragile drained again');
    const ledger2 = (await source.request({ spot: 'frag-1' }, { op: 'ledger' })) as FragileState;
    expect(checkSequence(ledger2.seen.source, total2)).toBeUndefined();
    expect(ledger2.nodes).toEqual(['source']);

    // Without a fault the same Spot moves with everything it processed, exactly once.
    codecTestHooks.mutateChunkData = undefined;
    const relocated = await source.relocate({ mode: PM, deadlineMs: 15_000 });
    expect(relocated).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
    await eventually(async () => (await source.locate({ spot: 'frag-1' }))?.nodeId === 'target-b', 10_000, 'fragile on target-b');
    const moved = (await targetB.request({ spot: 'frag-1' }, { op: 'ledger' })) as FragileState;
    expect(checkSequence(moved.seen.source, total2)).toBeUndefined();
    expect(moved.nodes).toEqual(['source']);
    expect(ranOnTarget).toEqual([]);
  }, 40_000);
});

// ── a Location/descriptor store wrapper whose publish (or ping) fails on demand ──────────────────────────────

interface StoreFaults {
  /** ping() rejects (preflight Store check). */
  ping?: boolean;
  /** publish() of a descriptor in one of these states rejects, for this node only. */
  failPublish?: Set<FrameworkRuntimeState>;
  nodeId: string;
  publishAttempts: FrameworkRuntimeState[];
}

function faultyStores(inner: Stores, faults: StoreFaults): Stores {
  const d = inner.descriptors;
  return {
    provider: inner.provider,
    location: inner.location,
    relocation: inner.relocation,
    channels: inner.channels,
    ping: () => (faults.ping ? Promise.reject(new StoreUnavailableError('injected: store unreachable')) : inner.ping()),
    close: () => inner.close(),
    descriptors: {
      nextLifecycleGeneration: (nodeId) => d.nextLifecycleGeneration(nodeId),
      acquire: (descriptor, leaseMs) => d.acquire(descriptor, leaseMs),
      renew: (lease, leaseMs) => d.renew(lease, leaseMs),
      publish: (lease, descriptor) => {
        if (descriptor.nodeId === faults.nodeId) faults.publishAttempts.push(descriptor.state);
        if (descriptor.nodeId === faults.nodeId && faults.failPublish?.has(descriptor.state))
          return Promise.reject(new StoreUnavailableError(`injected: descriptor publish (${descriptor.state}) has no confirmed result`, true));
        return d.publish(lease, descriptor);
      },
      release: (lease) => d.release(lease),
      list: () => d.list(),
    },
  };
}

/** Every status change and event, for "exactly once" checks. */
function record(host: FrameworkRuntime) {
  const relocations: RuntimeStatus[] = [];
  const terminations: RuntimeStatus[] = [];
  host.on(RELOCATION_CHANGED, (s) => void relocations.push(s));
  host.on(TERMINATION_CHANGED, (s) => void terminations.push(s));
  const before = host.status.lastRelocation;
  return {
    states: () => relocations.map((s) => s.state).filter((s, i, all) => i === 0 || all[i - 1] !== s),
    /** Distinct relocation results published, in order. */
    results: () => relocations.map((s) => s.lastRelocation).filter((r, i, all) => r !== undefined && r !== before && r !== all[i - 1]),
    terminations,
  };
}

test("Returns the specific Blocked reason, completes the terminal result exactly once, and performs bounded teardown if descriptor rollback can't be confirmed.", async () => {
  const inner = memoryStores();
  const faults: StoreFaults = { nodeId: 'source', publishAttempts: [] };
  const hosts: FrameworkRuntime[] = [];
  const timing = { ...FAST_TIMING, leaseMs: 1000 };
  const logs: { node: string; level: string; message: string }[] = [];
  const start = async (nodeId: string, stores: Stores) => {
    const log = (level: 'warn' | 'error', message: string) => void logs.push({ node: nodeId, level, message });
    const host = await createRuntime({ nodeId, applicationVersion: 1, stores, types: [Counter], timing, log });
    hosts.push(host);
    return host;
  };
  try {
    const target = await start('target', inner);
    const targetEvents = unitEvents(target);
    const blockedWith = (reason: RelocationReason) => ({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Blocked, reason });

    // 1. Store unavailable at preflight: Blocked/StoreUnavailable, never left Serving.
    const first = await start('source', faultyStores(inner, faults));
    await first.createActor('Counter', 'a-1');
    await target.createActor('Counter', 'probe');
    await reaches(first, { actor: 'probe' }, 'target');
    let rec = record(first);
    faults.ping = true;
    expect(await first.relocate({ mode: PM, deadlineMs: 5000 })).toEqual(blockedWith(RelocationReason.StoreUnavailable));
    faults.ping = false;
    expect(first.status.state).toBe(FrameworkRuntimeState.Serving);
    expect(rec.states()).toEqual([FrameworkRuntimeState.Serving]);
    expect(rec.results()).toEqual([blockedWith(RelocationReason.StoreUnavailable)]);
    expect(await first.request({ actor: 'a-1' }, { op: 'where' })).toBe('source');

    // 2. The Relocating descriptor write has no confirmed result; its rollback to Serving is confirmed:
    //    Blocked/StoreUnavailable, back to Serving, nothing moved, admission open again.
    faults.failPublish = new Set([FrameworkRuntimeState.Relocating]);
    faults.publishAttempts.length = 0;
    rec = record(first);
    expect(await first.relocate({ mode: PM, deadlineMs: 5000 })).toEqual(blockedWith(RelocationReason.StoreUnavailable));
    expect(faults.publishAttempts.slice(0, 2)).toEqual([FrameworkRuntimeState.Relocating, FrameworkRuntimeState.Serving]);
    expect(rec.states()).toEqual([FrameworkRuntimeState.Relocating, FrameworkRuntimeState.Serving]);
    expect(rec.results()).toEqual([blockedWith(RelocationReason.StoreUnavailable)]);
    expect(first.status.state).toBe(FrameworkRuntimeState.Serving);
    expect((await inner.descriptors.list()).find((x) => x.nodeId === 'source')?.state).toBe(FrameworkRuntimeState.Serving);
    expect((await first.locate({ actor: 'a-1' }))?.nodeId).toBe('source');
    expect(await first.request({ actor: 'a-1' }, { op: 'where' })).toBe('source');
    await first.createActor('Counter', 'a-2');
    expect(targetEvents).toEqual([]);
    expect(rec.terminations).toEqual([]);
    expect(await first.shutdown({ deadlineMs: 5000 })).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });

    // 3. Neither the Relocating write nor its rollback can be confirmed: Blocked/StoreUnavailable once, no new work,
    //    bounded cleanup, and the host ends Stopped with ForceStopped/TeardownFailed.
    const doomedFaults: StoreFaults = { nodeId: 'doomed', publishAttempts: [] };
    const doomed = await start('doomed', faultyStores(inner, doomedFaults));
    await doomed.createActor('Counter', 'd-1');
    await doomed.createActor('Counter', 'd-2');
    await reaches(doomed, { actor: 'probe' }, 'target');
    rec = record(doomed);
    doomedFaults.failPublish = new Set([FrameworkRuntimeState.Relocating, FrameworkRuntimeState.Serving]); // armed once Serving
    doomedFaults.publishAttempts.length = 0;
    const result = await doomed.relocate({ mode: PM, deadlineMs: 5000 });
    expect(result).toEqual(blockedWith(RelocationReason.StoreUnavailable));
    expect(doomedFaults.publishAttempts.slice(0, 2)).toEqual([FrameworkRuntimeState.Relocating, FrameworkRuntimeState.Serving]);
    // No new work is accepted: the host does not go back to Serving.
    expect(doomed.status.state).not.toBe(FrameworkRuntimeState.Serving);
    await expect(doomed.createActor('Counter', 'd-3')).rejects.toBeInstanceOf(AdmissionError);
    // Bounded teardown: Stopped, ForceStopped/TeardownFailed, without anyone calling Shutdown.
    await eventually(() => doomed.status.state === FrameworkRuntimeState.Stopped, 10_000, 'bounded teardown');
    const teardown = { outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.TeardownFailed };
    expect(doomed.status.lastTermination).toEqual(teardown);
    expect(await doomed.shutdown()).toEqual(teardown);
    // Each terminal exactly once: one relocation result (the Blocked one, kept), one termination result.
    await sleep(50);
    expect(rec.results()).toEqual([blockedWith(RelocationReason.StoreUnavailable)]);
    expect(doomed.status.lastRelocation).toEqual(result);
    expect(rec.terminations).toHaveLength(1);
    expect(rec.terminations[0]).toMatchObject({ state: FrameworkRuntimeState.Stopped, lastTermination: teardown });
    expect(rec.states()).toEqual([FrameworkRuntimeState.Relocating, FrameworkRuntimeState.Draining, FrameworkRuntimeState.Stopped]);
    expect(doomed.status.isReady).toBe(false);
    // Nothing moved: no target unit ran, and no record names the target.
    expect(targetEvents).toEqual([]);
    for (const id of ['d-1', 'd-2']) expect((await inner.location.get({ kind: 'actor', id }))?.owner.nodeId).not.toBe('target');
    expect((await inner.descriptors.list()).map((x) => x.nodeId).sort()).toEqual(['target']);
    expect(logs.filter((l) => l.node === 'doomed' && l.level === 'error').map((l) => l.message)).toContain('descriptor rollback to Serving could not be confirmed');
  } finally {
    await Promise.all(hosts.map((h) => h.shutdown({ deadlineMs: 2000 }).catch(() => undefined)));
    await inner.close();
  }
}, 30_000);
