/**
 * Instance Spot Close (API.md `host.closeSpot`, spec 05 §12): "An Instance Spot's Close and relocation are ordered
 * within the same authority commit. If Closing comes first, close finishes and it isn't moved. If relocation comes
 * first, a late Close is a moving result and isn't automatically resubmitted."
 *
 * Both orders on both stacks, made deterministic without sleeps: a handler that waits on a gate holds a turn (so a
 * unit waits for its safe point, or a batch waits before the Instance Spots' batch 3), and the source's transport
 * holds the target's relay-ready reply (so the unit stays sealed while the close arrives).
 */
import {
  AdmissionError,
  ArgumentError,
  FrameworkRuntimeState,
  RelocationOutcome,
  RelocationReason,
  RequestError,
  TerminationOutcome,
} from '../runtime';
import { gate, ran } from './support/close-types';
import { heldInbound } from './support/held-transport';
import { installTestMetrics } from './support/metrics';
import { holdRelocating, PM, probeStack, reaches, rejection } from './support/s15-states';
import { eventually, FAST_TIMING, STACKS } from './support/stack';
import { settle, unitEvents } from './support/hosts';

const metrics = installTestMetrics();
afterAll(() => metrics.shutdown());

describe.each(STACKS)('Instance Spot Close on %s', (stackName) => {
  const { stack, host } = probeStack(stackName);
  const record = (id: string) => stack.stores.location.get({ kind: 'spot', id });

  /** Hosts `source`, owning the Instance Spot shard-1 (count 1), and `target`, which reaches it there; the unit events of both. */
  async function shardOnSource() {
    const source = await host('source');
    const target = await host('target');
    const sourceUnits = unitEvents(source);
    const targetUnits = unitEvents(target);
    expect(await source.request({ spot: 'shard-1' }, { op: 'add' })).toBe(1);
    await reaches(target, { spot: 'shard-1' }, 'source');
    return { source, target, sourceUnits, targetUnits };
  }

  test('closeSpot closes an Instance Spot on its owner: onClosing(Closed) after the current handler, its queue ends, a later message creates a new generation', async () => {
    const owner = await host('owner');
    const caller = await host('caller');
    expect(await owner.request({ spot: 'shard-1' }, { op: 'add' })).toBe(1);
    const first = await record('shard-1');
    expect(first?.owner.nodeId).toBe('owner');
    expect(await stack.stores.relocation.getInstanceCreation('shard-1')).toMatchObject({ objectGeneration: first!.objectGeneration, owner: { nodeId: 'owner' } });
    await reaches(caller, { spot: 'shard-1' }, 'owner');

    // A turn that waits on application I/O; behind it two requests and a one-way message, then the close.
    const held = settle(caller.request({ spot: 'shard-1' }, { op: 'hold', gate: 'io' }));
    await eventually(() => ran.includes('hold:shard-1@owner'), 5000, 'the held turn');
    const queued = [settle(caller.request({ spot: 'shard-1' }, { op: 'add' })), settle(caller.request({ spot: 'shard-1' }, { op: 'add' }))];
    caller.send({ spot: 'shard-1' }, { op: 'add' });
    const undeliverableBefore = await metrics.counter('zlink.runtime.message.undeliverable', { cause: 'closed' });
    const closed = settle(caller.closeSpot({ spot: 'shard-1' }));

    // The queue ends at once (the handler still runs): requests with RequestError 'closed'; what arrives now too.
    await eventually(() => queued.every((q) => q.done), 5000, 'queued requests ended');
    for (const q of queued) {
      expect(q.error).toBeInstanceOf(RequestError);
      expect((q.error as RequestError).kind).toBe('closed');
    }
    const late = await rejection(caller.request({ spot: 'shard-1' }, { op: 'get' }));
    expect((late as RequestError).kind).toBe('closed');
    // The one-way message was not dropped silently: counted (and logged) as undeliverable, cause `closed`.
    await eventually(async () => (await metrics.counter('zlink.runtime.message.undeliverable', { cause: 'closed' })) === undeliverableBefore + 1, 5000, 'one-way counted');
    expect(closed.done).toBe(false);
    expect(ran.filter((r) => r.startsWith('closing'))).toEqual([]);
    expect((await record('shard-1'))?.owner.nodeId).toBe('owner');

    // The current handler ends; then onClosing(Closed) — with the state it left (the queued adds never ran).
    gate('io').open();
    await held.promise;
    expect(held.value).toBe('released');
    await closed.promise;
    expect(closed.error).toBeUndefined();
    expect(ran).toEqual(['hold:shard-1@owner', 'held:shard-1@owner', 'closing:shard-1:Closed:1@owner']);
    // Owner record and creation record are gone.
    expect(await record('shard-1')).toBeUndefined();
    expect(await caller.locate({ spot: 'shard-1' })).toBeUndefined();
    expect(await stack.stores.relocation.getInstanceCreation('shard-1')).toBeUndefined();

    // A later message creates a new instance (on demand) with a new ObjectGeneration and a fresh state.
    expect(await caller.request({ spot: 'shard-1' }, { op: 'add' })).toBe(1);
    const second = await record('shard-1');
    expect(second!.objectGeneration).toBeGreaterThan(first!.objectGeneration);
    expect(await stack.stores.relocation.getInstanceCreation('shard-1')).toMatchObject({ objectGeneration: second!.objectGeneration });
    // The old owner answers for the new instance through the Location Store like any caller.
    expect(await owner.request({ spot: 'shard-1' }, { op: 'get' })).toBe(1);
    // A close of a Spot with no handler running completes at once.
    await owner.closeSpot({ spot: 'shard-1', type: 'Shard' });
    expect(ran.at(-1)).toBe(`closing:shard-1:Closed:1@${second!.owner.nodeId}`);
    expect(await record('shard-1')).toBeUndefined();
  }, 30_000);

  test('closeSpot names the field for a wrong ref, an unknown id or a Spot that is not an Instance Spot; nothing changes', async () => {
    const owner = await host('owner');
    const caller = await host('caller');
    await owner.createSpot('Hall', 'hall');
    await owner.createActor('Probe', 'probe');
    await reaches(caller, { spot: 'hall' }, 'owner');
    const cases: [string, () => Promise<void>][] = [
      ['ref', () => caller.closeSpot(null as never)],
      ['ref.actor', () => caller.closeSpot({ actor: 'probe' } as never)],
      ['ref.spot', () => caller.closeSpot({ spot: '' })],
      ['ref.type', () => caller.closeSpot({ spot: 'shard-1', type: 'Hall' })],
      ['ref.type', () => caller.closeSpot({ spot: 'shard-1', type: 'Nope' })],
      ['options.timeoutMs', () => caller.closeSpot({ spot: 'shard-1' }, { timeoutMs: 0 })],
      // No owner record: nothing is created by a close (it never places).
      ['ref.spot', () => caller.closeSpot({ spot: 'never-created' })],
      // A User Spot, answered by its owner.
      ['ref.spot', () => caller.closeSpot({ spot: 'hall' })],
    ];
    for (const [field, call] of cases) {
      const error = await rejection(call());
      expect([field, error]).toEqual([field, expect.any(ArgumentError)]);
      expect((error as ArgumentError).field).toBe(field);
    }
    expect(((await rejection(caller.closeSpot({ spot: 'hall' }))) as Error).message).toContain('not an Instance Spot');
    expect(await record('never-created')).toBeUndefined();
    expect(await caller.request({ spot: 'hall' }, { op: 'add' })).toBe(1);
    expect(await caller.request({ actor: 'probe' }, { op: 'where' })).toBe('owner');
  }, 30_000);

  test('Close first, before the relocation unit started: closed on the source and not moved; the relocation goes on', async () => {
    const { source, target, sourceUnits, targetUnits } = await shardOnSource();
    // Batch 2 (an Actor) waits for its blocker's turn to end: batch 3 (Instance Spots) has not started.
    const relocating = await holdRelocating(source, 'batch2');
    expect(source.diagnostics().units.sourceByState['safePoint']).toBe(1);
    expect(source.status.state).toBe(FrameworkRuntimeState.Relocating);

    await target.closeSpot({ spot: 'shard-1' });
    expect(ran).toContain('closing:shard-1:Closed:1@source');
    expect(await record('shard-1')).toBeUndefined();

    expect(await relocating.release()).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
    // The closed Spot was carried by no unit: the blocker moved, the Spot did not.
    expect(sourceUnits.filter((e) => e.objects.includes('s:shard-1'))).toEqual([]);
    expect(targetUnits.filter((e) => e.objects.includes('s:shard-1'))).toEqual([]);
    // (Relocated is the source's result; the target's owner CAS follows it, §13.)
    await eventually(async () => (await target.locate({ actor: 'blocker-batch2' }))?.nodeId === 'target', 5000, 'target owns the blocker');
    expect(await record('shard-1')).toBeUndefined();
    // A later message creates a new instance, here on the target (the Relocated source places none, §15).
    expect(await source.request({ spot: 'shard-1' }, { op: 'get' })).toBe(0);
    expect((await record('shard-1'))?.owner.nodeId).toBe('target');
  }, 30_000);

  test('Close first, while the unit waits for its safe point: the unit ends closed, the close finishes, the Spot is not moved', async () => {
    const { source, target, sourceUnits, targetUnits } = await shardOnSource();
    // The Spot's own turn is running: its unit is prepared on the target and waits for the turn to end.
    const turn = settle(target.request({ spot: 'shard-1' }, { op: 'hold', gate: 'turn' }));
    await eventually(() => ran.includes('hold:shard-1@source'), 5000, 'turn running');
    const relocation = settle(source.relocate({ mode: PM, deadlineMs: 20_000 }));
    await eventually(() => (source.diagnostics().units.sourceByState['safePoint'] ?? 0) === 1, 5000, 'unit at its safe point');

    const closing = settle(target.closeSpot({ spot: 'shard-1' }));
    await eventually(() => sourceUnits.some((e) => e.state === 'closed'), 5000, 'unit closed first');
    // The close waits for the running turn; so does the relocation (Relocated means nothing runs here any more).
    expect(closing.done).toBe(false);
    expect(source.status.state).toBe(FrameworkRuntimeState.Relocating);
    expect(source.diagnostics().blockers).toContainEqual({ object: 's:shard-1', reason: expect.stringContaining('closeSpot') });
    gate('turn').open();
    await closing.promise;
    await relocation.promise;
    expect(closing.error).toBeUndefined();
    expect(turn.value).toBe('released');
    expect(ran).toEqual(['hold:shard-1@source', 'held:shard-1@source', 'closing:shard-1:Closed:1@source']);
    expect(relocation.value).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
    const shard = sourceUnits.filter((e) => e.objects.includes('s:shard-1')).map((e) => e.state);
    expect(shard).toEqual(['closed']);
    // The target opened nothing for it: its temporary queue was given back.
    expect(targetUnits.filter((e) => e.objects.includes('s:shard-1') && ['committed', 'opened'].includes(e.state))).toEqual([]);
    expect(await record('shard-1')).toBeUndefined();
    expect(await target.request({ spot: 'shard-1' }, { op: 'get' })).toBe(0);
  }, 30_000);

  test('Relocation first (the unit sealed): a late close ends moving and is not resubmitted; the Spot moves with its state', async () => {
    // The target's relay-ready reply is held at the source: the unit stays sealed until the test releases it.
    const gateReady = heldInbound((m) => m.t === 'r.ready');
    const source = await host('source', 1, { transport: gateReady.factory, timing: { ...FAST_TIMING, relocationCutoverWaitTimeoutMs: 20_000 } });
    const target = await host('target', 1, { timing: { ...FAST_TIMING, relocationCutoverWaitTimeoutMs: 20_000 } });
    const sourceUnits = unitEvents(source);
    expect(await source.request({ spot: 'shard-1' }, { op: 'add' })).toBe(1);
    await reaches(target, { spot: 'shard-1' }, 'source');
    const relocation = settle(source.relocate({ mode: PM, deadlineMs: 20_000 }));
    await eventually(() => sourceUnits.some((e) => e.state === 'sealed'), 5000, 'unit sealed');
    await eventually(() => gateReady.held > 0, 5000, 'relay-ready held');

    for (const closer of [source, target]) {
      const error = await rejection(closer.closeSpot({ spot: 'shard-1' }));
      expect(error).toBeInstanceOf(RequestError);
      expect((error as RequestError).kind).toBe('moving');
      expect((error as Error).message).toContain('not resubmitted');
    }
    expect(ran.filter((r) => r.startsWith('closing'))).toEqual([]);

    gateReady.release();
    await relocation.promise;
    expect(relocation.value).toMatchObject({ outcome: RelocationOutcome.Relocated });
    await eventually(async () => (await record('shard-1'))?.owner.nodeId === 'target', 5000, 'target owns shard-1');
    // Not resubmitted: the Spot kept its state and lives on the target.
    expect(ran.filter((r) => r.startsWith('closing:shard-1:Closed'))).toEqual([]);
    expect(await target.request({ spot: 'shard-1' }, { op: 'get' })).toBe(1);
    // While the source still follows, a close through it is a moving result too (§12: relocation came first).
    const viaSource = await rejection(source.closeSpot({ spot: 'shard-1' }));
    expect((viaSource as RequestError).kind).toBe('moving');
    // Called again at the new owner, the close applies there.
    await target.closeSpot({ spot: 'shard-1' });
    expect(ran).toContain('closing:shard-1:Closed:1@target');
    expect(await record('shard-1')).toBeUndefined();
  }, 30_000);

  test('closeSpot is refused with a shutdown result once the caller host is Draining', async () => {
    const owner = await host('owner');
    expect(await owner.request({ spot: 'shard-1' }, { op: 'add' })).toBe(1);
    const hold = settle(owner.request({ spot: 'shard-1' }, { op: 'hold', gate: 'drain' }));
    await eventually(() => ran.includes('hold:shard-1@owner'), 5000, 'turn running');
    const stopping = settle(owner.shutdown({ deadlineMs: 10_000 }));
    await eventually(() => owner.status.state === FrameworkRuntimeState.Draining, 5000, 'Draining');
    const error = await rejection(owner.closeSpot({ spot: 'shard-1' }));
    expect((error as RequestError).kind).toBe('shutdown');
    expect(error).not.toBeInstanceOf(AdmissionError);
    gate('drain').open();
    await stopping.promise;
    await hold.promise;
    expect(stopping.value).toMatchObject({ outcome: TerminationOutcome.Stopped });
    // HostShutdown closed it, not Closed; its records went with the host.
    expect(ran.filter((r) => r.startsWith('closing'))).toEqual(['closing:shard-1:HostShutdown:1@owner']);
    expect(await record('shard-1')).toBeUndefined();
    expect(await stack.stores.relocation.getInstanceCreation('shard-1')).toBeUndefined();
  }, 30_000);
});
