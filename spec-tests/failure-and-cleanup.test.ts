/**
 * Spec 05 §17 "Failure and cleanup" (§11, §13, §14, §15, §16): one test per item, public API only. The items
 * that need an injected store or transport failure live in spec-tests/faults/failure-and-cleanup.test.ts.
 * The relocation scenarios run on both stacks (memory + in-process, Redis + ws).
 */
import {
  defineActor,
  defineSpot,
  FrameworkRuntimeState,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  RequestError,
  TERMINATION_CHANGED,
  TerminationOutcome,
  TerminationReason,
  type FrameworkRuntime,
  type ObjectRef,
  type RuntimeStatus,
} from '../runtime';
import { json, outcome, sleep, unitEvents } from './support/hosts';
import { installTestMetrics } from './support/metrics';
import { PM, reaches } from './support/s15-states';
import { eventually, FAST_TIMING, makeStack, STACKS, type Stack } from './support/stack';
import { ALL_TYPES } from './support/workload';

const RU = RelocationMode.RollingUpdate;

/** Handler runs, counted per request id in the Actor's own (moving) state. */
interface Tally {
  counts: Record<string, number>;
}
type TallyMessage = { op: 'req'; id: string } | { op: 'counts' } | { op: 'where' } | { op: 'slow'; ms: number; tag: string };

/** Set by the 'slow' handler when its turn starts and ends (one process: the test sees it directly). */
const slowTurns: { started: string[]; ended: string[] } = { started: [], ended: [] };

const Tallied = defineActor<Tally>({
  type: 'Tallied',
  relocation: json<Tally>(),
  create: () => ({ counts: {} }),
  receive: (state, message: TallyMessage, ctx) => {
    switch (message.op) {
      case 'req':
        state.counts[message.id] = (state.counts[message.id] ?? 0) + 1;
        return { id: message.id, node: ctx.nodeId };
      case 'counts':
        return state.counts;
      case 'where':
        return ctx.nodeId;
      case 'slow':
        slowTurns.started.push(message.tag);
        return sleep(message.ms).then(() => {
          slowTurns.ended.push(message.tag);
          return `done:${message.tag}`;
        });
    }
  },
});

const TYPES = [...ALL_TYPES, Tallied];

describe.each(STACKS)('Failure and cleanup on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    slowTurns.started.length = 0;
    slowTurns.ended.length = 0;
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await stack.close();
  });

  test("A request's terminal result isn't duplicated across two runtimes.", async () => {
    const ACTORS = 20;
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: TYPES });
    const third = await stack.host({ nodeId: 'third', applicationVersion: 1, types: TYPES });
    const target = await stack.host({ nodeId: 'target', applicationVersion: 2, types: TYPES });
    const refs: ObjectRef[] = [];
    for (let i = 0; i < ACTORS; i++) {
      await source.createActor('Tallied', `t-${i}`);
      refs.push({ actor: `t-${i}` });
    }
    await reaches(third, refs[0]!, 'source');

    // Requests from the third host and from the source itself, in flight before, during and right after the move.
    const settled = new Map<string, ReturnType<typeof outcome<unknown>>>();
    let next = 0;
    const fire = (from: FrameworkRuntime, ref: ObjectRef & { actor: string }) => {
      const id = `${from.nodeId}-${next++}`;
      settled.set(id, outcome(from.request(ref, { op: 'req', id }, { timeoutMs: 15_000 })));
    };
    let stop = false;
    const traffic = (async () => {
      while (!stop) {
        for (const ref of refs as (ObjectRef & { actor: string })[]) {
          fire(third, ref);
          fire(source, ref);
        }
        await sleep(3);
      }
    })();
    await sleep(30);
    const result = await source.relocate({ mode: RU, targetApplicationVersion: 2, deadlineMs: 20_000 });
    expect(result).toEqual({ mode: RU, targetApplicationVersion: 2, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
    await sleep(30);
    stop = true;
    await traffic;
    expect(settled.size).toBeGreaterThanOrEqual(200); // hundreds of requests were in flight around the move

    await eventually(() => [...settled.values()].every((e) => e.settled > 0), 15_000, 'every request settled');
    await sleep(100); // a duplicate terminal would arrive after the first one
    const problems: string[] = [];
    for (const [id, e] of settled) {
      if (e.settled !== 1) problems.push(`${id} settled ${e.settled} times`);
      if (e.error) problems.push(`${id} failed: ${String(e.error)}`);
      else if ((e.value as { id: string }).id !== id) problems.push(`${id} got the answer of ${(e.value as { id: string }).id}`);
    }
    // The handler ran exactly once per request, counted in the state that moved with each Actor.
    const ran = new Map<string, number>();
    for (const ref of refs) {
      const counts = (await third.request(ref, { op: 'counts' }, { timeoutMs: 5000 })) as Record<string, number>;
      for (const [id, n] of Object.entries(counts)) ran.set(id, (ran.get(id) ?? 0) + n);
    }
    for (const id of settled.keys()) if (ran.get(id) !== 1) problems.push(`${id}: handler ran ${ran.get(id) ?? 0} times`);
    expect(ran.size).toBe(settled.size);
    expect(problems).toEqual([]);
    // Both runtimes answered some of them: the terminal really crossed the move.
    const nodes = new Set([...settled.values()].map((e) => (e.value as { node: string }).node));
    expect(nodes).toEqual(new Set(['source', 'target']));
    for (const ref of refs) expect((await source.locate(ref))?.nodeId).toBe('target');
    void target;
  }, 40_000);

  test("If the same target runtime fails after owner commit, it doesn't roll back to the source or automatically pick a different target.", async () => {
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: TYPES });
    const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: TYPES, weight: 10 });
    // A second eligible node: same version, Serving, compatible, Ready — only its weight is lower.
    const second = await stack.host({ nodeId: 'second', applicationVersion: 1, types: TYPES, weight: 1 });
    const secondEvents = unitEvents(second);
    const targetEvents = unitEvents(target);
    const refs: ObjectRef[] = [];
    for (let i = 0; i < 5; i++) {
      await source.createActor('Counter', `c-${i}`);
      refs.push({ actor: `c-${i}` });
    }
    await source.createSpot('Room', 'room-1');
    await source.createActor('Player', 'member-1', { spot: 'room-1' });
    refs.push({ spot: 'room-1' }, { actor: 'member-1' });
    await reaches(second, refs[0]!, 'source');
    // The source's own connections to both nodes are Ready (both are real candidates, §5 order 5).
    await second.createActor('Counter', 'probe-second');
    await target.createActor('Counter', 'probe-target');
    await reaches(source, { actor: 'probe-second' }, 'second');
    await reaches(source, { actor: 'probe-target' }, 'target');

    const relocated = await source.relocate({ mode: PM, deadlineMs: 15_000 });
    expect(relocated).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
    expect(source.diagnostics().lastSelection?.peer).toBe(2); // both were eligible; the target won on weight
    // Owner commit (S2) of every unit on the target, then dispatch opens.
    const inv = source.diagnostics().lastInventory!;
    const units = inv.perActorShells + inv.actors + inv.spotWideAggregates + inv.instanceSpots;
    await eventually(() => targetEvents.filter((e) => e.state === 'opened').length === units, 10_000, 'target opened every unit');
    for (const ref of refs) expect((await source.locate(ref))?.nodeId).toBe('target');
    const committed = new Map<string, number>();
    for (const ref of refs) {
      const r = await stack.stores.location.get('actor' in ref ? { kind: 'actor', id: ref.actor } : { kind: 'spot', id: ref.spot });
      committed.set(JSON.stringify(ref), r!.authorityGeneration);
    }

    // The target runtime goes away after owner commit.
    expect(await target.shutdown({ deadlineMs: 5000 })).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });

    // The Location Store never names the source again: the target's own cleanup removed the records it held.
    for (const ref of refs) {
      const record = await stack.stores.location.get('actor' in ref ? { kind: 'actor', id: ref.actor } : { kind: 'spot', id: ref.spot });
      if (record) expect(record.owner.nodeId).toBe('target');
    }
    // Nobody serves them now: not the source (no roll back), not the second eligible node (no new target).
    for (const ref of refs.slice(0, 3)) {
      for (const from of [source, second]) {
        const outcome = await from.request(ref, { op: 'where' }, { timeoutMs: 5000 }).then(
          (node) => `served by ${String(node)}`,
          (error: unknown) => (error instanceof RequestError ? error.kind : String(error)),
        );
        expect(['not-found', 'unavailable']).toContain(outcome);
      }
    }
    await sleep(FAST_TIMING.relocationCutoverWaitTimeoutMs * 2);
    for (const ref of refs) {
      const record = await stack.stores.location.get('actor' in ref ? { kind: 'actor', id: ref.actor } : { kind: 'spot', id: ref.spot });
      expect(record === undefined || record.owner.nodeId === 'target').toBe(true);
      if (record) expect(record.authorityGeneration).toBe(committed.get(JSON.stringify(ref)));
    }
    expect(secondEvents).toEqual([]); // the second node never received a unit
    expect(second.diagnostics().units.targetInFlight).toBe(0);
    // The source stays Relocated with its first result; it did not re-host or start another operation.
    expect(source.status.state).toBe(FrameworkRuntimeState.Relocated);
    expect(source.status.lastRelocation).toEqual(relocated);
    expect(source.diagnostics().units.sourceInFlight).toBe(0);
    expect(source.diagnostics().operation).toBeUndefined();
    expect(await source.relocate({ mode: PM })).toEqual(relocated);
  }, 40_000);

  test('Lease keeps renewing until the barrier finishes, and an accepted request completes exactly once.', async () => {
    const LEASE_MS = 300;
    const host = await stack.host({ nodeId: 'draining', applicationVersion: 1, types: TYPES, timing: { ...FAST_TIMING, leaseMs: LEASE_MS } });
    const peer = await stack.host({ nodeId: 'peer', applicationVersion: 1, types: TYPES });
    await host.createActor('Tallied', 'slow-1');
    await reaches(peer, { actor: 'slow-1' }, 'draining');
    const mine = <D extends { nodeId: string; lifecycleGeneration: number }>(list: D[]) =>
      list.find((d) => d.nodeId === host.nodeId && d.lifecycleGeneration === host.lifecycleGeneration);

    // An accepted request whose handler takes several lease periods.
    let terminals = 0;
    let terminal: { value?: unknown; error?: unknown } = {};
    const accepted = peer.request({ actor: 'slow-1' }, { op: 'slow', ms: LEASE_MS * 5, tag: 'accepted' }, { timeoutMs: 10_000 }).then(
      (value) => void (terminals++, (terminal = { value })),
      (error: unknown) => void (terminals++, (terminal = { error })),
    );
    await eventually(() => slowTurns.started.includes('accepted'), 5000, 'slow turn started');
    const shutdown = host.shutdown({ deadlineMs: 10_000 });
    await eventually(() => host.status.state === FrameworkRuntimeState.Draining, 2000, 'Draining');

    // Past one whole lease period the descriptor is still listed (the lease was renewed), as Draining.
    await sleep(LEASE_MS * 2);
    expect(host.status.state).toBe(FrameworkRuntimeState.Draining);
    expect(slowTurns.ended).toEqual([]);
    expect(mine(await stack.stores.descriptors.list())?.state).toBe(FrameworkRuntimeState.Draining);
    // A new request now ends with a shutdown result; the accepted one is still pending.
    await expect(peer.request({ actor: 'slow-1' }, { op: 'where' }, { timeoutMs: 5000 })).rejects.toMatchObject({ kind: 'shutdown' });
    expect(terminals).toBe(0);

    expect(await shutdown).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
    await accepted;
    await sleep(100); // nothing else arrives for it
    expect(terminals).toBe(1);
    expect(terminal).toEqual({ value: 'done:accepted' }); // its one terminal is its reply
    expect(slowTurns.started.filter((t) => t === 'accepted')).toHaveLength(1);
    // After Stopped the descriptor and lease are gone.
    expect(host.status.state).toBe(FrameworkRuntimeState.Stopped);
    expect(mine(await stack.stores.descriptors.list())).toBeUndefined();
  }, 30_000);

  test("Topology cleanup doesn't change a different authority.", async () => {
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: TYPES });
    const target = await stack.host({ nodeId: 'target', applicationVersion: 2, types: TYPES });
    const other = await stack.host({ nodeId: 'other', applicationVersion: 1, types: TYPES });
    const moved: { kind: 'actor' | 'spot'; id: string }[] = [];
    for (let i = 0; i < 4; i++) {
      await source.createActor('Counter', `m-${i}`);
      moved.push({ kind: 'actor', id: `m-${i}` });
    }
    await source.createSpot('Room', 'room-m');
    await source.createActor('Player', 'room-m-p', { spot: 'room-m' });
    await source.createSpot('Lobby', 'lobby-m');
    await source.createActor('Player', 'lobby-m-p');
    await source.join('lobby-m-p', 'lobby-m');
    expect(await source.request({ spot: 'shard-m' }, { op: 'where' })).toBe('source');
    moved.push({ kind: 'spot', id: 'room-m' }, { kind: 'actor', id: 'room-m-p' }, { kind: 'spot', id: 'lobby-m' }, { kind: 'actor', id: 'lobby-m-p' }, { kind: 'spot', id: 'shard-m' });

    const result = await source.relocate({ mode: RU, targetApplicationVersion: 2, deadlineMs: 15_000 });
    expect(result.outcome).toBe(RelocationOutcome.Relocated);
    await eventually(async () => (await stack.stores.location.getMany(moved)).every((r) => r?.owner.nodeId === 'target'), 10_000, 'target owns all');
    const before = await stack.stores.location.getMany(moved);

    // The source's Shutdown does not touch records whose authority moved to the target.
    expect(await source.shutdown({ deadlineMs: 5000 })).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
    expect(await stack.stores.location.getMany(moved)).toEqual(before);
    for (const o of moved) expect((await target.locate(o.kind === 'actor' ? { actor: o.id } : { spot: o.id }))?.nodeId).toBe('target');
    expect(await target.request({ actor: 'm-0' }, { op: 'where' })).toBe('target');

    // A host that still holds authority removes its own records at Shutdown — but not one whose authority moved on.
    await other.createActor('Counter', 'own-1');
    await other.createActor('Counter', 'own-2');
    await other.createSpot('Room', 'own-room');
    const stolen = await stack.stores.location.get({ kind: 'actor', id: 'own-2' });
    const cas = await stack.stores.location.cas({
      object: { kind: 'actor', id: 'own-2' },
      opId: 'someone-else-took-own-2',
      expectedAuthorityGeneration: stolen!.authorityGeneration,
      owner: { nodeId: 'elsewhere', lifecycleGeneration: 7 },
    });
    expect(cas.status).toBe('applied');
    expect(await other.shutdown({ deadlineMs: 5000 })).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
    expect(await stack.stores.location.get({ kind: 'actor', id: 'own-1' })).toBeUndefined();
    expect(await stack.stores.location.get({ kind: 'spot', id: 'own-room' })).toBeUndefined();
    expect(await stack.stores.location.get({ kind: 'actor', id: 'own-2' })).toEqual(cas.record);
    // And the moved records are still exactly as the target committed them.
    expect(await stack.stores.location.getMany(moved)).toEqual(before);
  }, 40_000);
});

test('Callback failure is classified with a defined reason, and state, outcome, reason, event, and metric match the wire values.', async () => {
  const telemetry = installTestMetrics();
  const stack = await makeStack('memory+in-process');
  try {
    const Throwing = defineSpot<{ n: number }>({
      type: 'ThrowingClose',
      kind: 'user',
      relocation: json<{ n: number }>(),
      create: () => ({ n: 0 }),
      receive: (state) => ++state.n,
      onClosing: (_state, reason) => {
        throw new Error(`closing callback failed (${reason})`);
      },
    });
    const closingReasons: string[] = [];
    const Slow = defineSpot<{ n: number }>({
      type: 'SlowClose',
      kind: 'user',
      relocation: json<{ n: number }>(),
      create: () => ({ n: 0 }),
      receive: (state) => ++state.n,
      // Runs past the shutdown deadline; ends only when the cleanup signal says the deadline is over.
      onClosing: (_state, reason, ctx) =>
        new Promise<void>((resolve) => {
          closingReasons.push(reason);
          ctx.signal?.addEventListener('abort', () => resolve(), { once: true });
        }),
    });
    const types = [...TYPES, Throwing, Slow];

    const cases = [
      { node: 'throws', spot: 'ThrowingClose', deadlineMs: 5000, outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.TeardownFailed, names: ['ForceStopped', 'TeardownFailed'] },
      { node: 'late', spot: 'SlowClose', deadlineMs: 200, outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.DeadlineExceeded, names: ['ForceStopped', 'DeadlineExceeded'] },
      { node: 'clean', spot: 'Room', deadlineMs: 5000, outcome: TerminationOutcome.Stopped, reason: TerminationReason.None, names: ['Stopped', 'None'] },
    ] as const;
    // Wire values (§3): ForceStopped=1, Stopped=0; DeadlineExceeded=1, TeardownFailed=2, None=0.
    expect(cases.map((c) => [c.outcome, c.reason])).toEqual([
      [1, 2],
      [1, 1],
      [0, 0],
    ]);

    for (const c of cases) {
      const host = await stack.host({ nodeId: c.node, applicationVersion: 1, types });
      await host.createSpot(c.spot, `${c.node}-spot`);
      const events: RuntimeStatus[] = [];
      host.on(TERMINATION_CHANGED, (s) => void events.push(s));
      const result = await host.shutdown({ deadlineMs: c.deadlineMs });
      expect(result).toEqual({ outcome: c.outcome, reason: c.reason });
      expect(host.status.state).toBe(FrameworkRuntimeState.Stopped);
      expect(host.status.state).toBe(5);
      expect(host.status.isReady).toBe(false);
      expect(host.status.lastTermination).toEqual(result);
      // termination_changed carries the same terminal, once, with the Stopped state.
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ state: 5, lastTermination: { outcome: c.outcome, reason: c.reason } });
      // The stored result is returned again, unchanged.
      expect(await host.shutdown()).toEqual(result);
      // The counter's outcome/reason labels are the names of exactly these wire values.
      expect(TerminationOutcome[c.names[0]]).toBe(c.outcome);
      expect(TerminationReason[c.names[1]]).toBe(c.reason);
      expect(await telemetry.counter('zlink.runtime.host.terminations', { outcome: c.names[0], reason: c.names[1] })).toBe(1);
    }
    expect(closingReasons).toEqual(['HostShutdown']);

    const points = await telemetry.points<number>('zlink.runtime.host.terminations');
    const rows = points.map((p) => ({ outcome: p.attributes.outcome, reason: p.attributes.reason, value: p.value }));
    expect(rows.sort((a, b) => String(a.reason).localeCompare(String(b.reason)))).toEqual([
      { outcome: 'ForceStopped', reason: 'DeadlineExceeded', value: 1 },
      { outcome: 'Stopped', reason: 'None', value: 1 },
      { outcome: 'ForceStopped', reason: 'TeardownFailed', value: 1 },
    ]);
    // No IDs in labels (§16): only outcome and reason.
    for (const p of points) expect(Object.keys(p.attributes).sort()).toEqual(['outcome', 'reason']);
    expect(await telemetry.counter('zlink.runtime.host.state_transitions', { state: 'Stopped' })).toBe(3);
  } finally {
    await stack.close();
    await telemetry.shutdown();
  }
}, 30_000);
