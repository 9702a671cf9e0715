/**
 * §4 first row ("new object creation, join, Instance placement … the work to finish first is confirmed"), §7
 * inventory, §15 admission: an admission accepted while Relocate waits for a target (§5.1 keeps admission open
 * then) and finishing only after the host entered Relocating is in the fixed inventory and moves — or was rejected —
 * never left owned by the source to be deleted by its Shutdown.
 *
 * The fault is a slow Location Store at the boundary: the claim (creation, placement) or the membership CAS (join)
 * of one named object waits until the test opens a gate, which it does once the source left Serving.
 */
import {
  createRuntime,
  FrameworkRuntimeState,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  type FrameworkRuntime,
  type Stores,
} from '../../runtime';
import { eventually, FAST_TIMING, makeStack, STACKS, type Stack } from '../support/stack';
import { ALL_TYPES } from '../support/workload';

interface Gate {
  id: string;
  /** Only the admission under test is slowed, not the setup before it. */
  armed: boolean;
  held: boolean;
  open(): void;
  opened: Promise<void>;
}

function gate(id: string): Gate {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { id, armed: false, held: false, open, opened };
}

/** The real stores, except that claim and cas of the gated object (and, once, ping) wait for their gate. */
function slowLocation(inner: Stores, g: Gate, pingGate?: Gate): Stores {
  const location = inner.location;
  const wait = async (id: string) => {
    if (id !== g.id || !g.armed) return;
    g.held = true;
    await g.opened;
  };
  return {
    provider: inner.provider,
    channels: inner.channels,
    ping: async () => {
      if (pingGate?.armed) {
        pingGate.armed = false;
        pingGate.held = true;
        await pingGate.opened;
      }
      return inner.ping();
    },
    close: () => inner.close(),
    descriptors: inner.descriptors,
    relocation: inner.relocation,
    location: Object.assign(Object.create(location) as typeof location, {
      claim: async (req: Parameters<typeof location.claim>[0]) => {
        await wait(req.object.id);
        return location.claim(req);
      },
      cas: async (req: Parameters<typeof location.cas>[0]) => {
        await wait(req.object.id);
        return location.cas(req);
      },
    }),
  };
}

type Admission = 'createActor' | 'join' | 'instancePlacement';
const ADMISSIONS: Admission[] = ['createActor', 'join', 'instancePlacement'];

describe.each(STACKS)('admissions racing the inventory on %s', (stackName) => {
  let stack: Stack;
  let source: FrameworkRuntime | undefined;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await source?.shutdown({ deadlineMs: 3000 }).catch(() => undefined);
    source = undefined;
    await stack.close();
  });

  test.each(ADMISSIONS)('%s accepted while Relocate waits for a target is moved with the inventory or rejected, never left behind', async (admission) => {
    const late = admission === 'createActor' ? 'late' : admission === 'join' ? 'joiner' : 'inst-1';
    const g = gate(late);
    source = await createRuntime({
      nodeId: 'source',
      applicationVersion: 1,
      types: ALL_TYPES,
      timing: FAST_TIMING,
      stores: slowLocation(stack.stores, g),
      meshes: stackName === 'redis+ws' ? [{ name: 'main', listen: { host: '127.0.0.1', port: 0 } }] : [{ name: 'main' }],
    });
    const src = source;
    await src.createActor('Counter', 'a0');
    await src.createSpot('Room', 'room');
    if (admission === 'join') await src.createActor('Player', 'joiner');

    // No target yet: Relocate waits for one with state and admission kept (§5.1).
    const relocation = src.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 15_000 });
    await eventually(() => (src.diagnostics().operation?.phase ?? '').includes('awaitingTarget'), 5000, 'Relocate waiting for a target');
    expect(src.status.state).toBe(FrameworkRuntimeState.Serving);

    g.armed = true;
    let admitted: Promise<unknown>;
    if (admission === 'createActor') admitted = src.createActor('Counter', late);
    else if (admission === 'join') admitted = src.join(late, 'room');
    else admitted = src.request({ spot: late, type: 'Shard' }, { op: 'seq', from: 't', n: 0 }, { timeoutMs: 10_000 });
    const outcome = admitted.then(
      () => 'accepted' as const,
      () => 'rejected' as const,
    );
    await eventually(() => g.held, 5000, 'the admission reached the store');

    const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: ALL_TYPES });
    // The admission finishes only once the source left Serving: after the inventory could have been fixed.
    await eventually(() => src.status.state !== FrameworkRuntimeState.Serving, 5000, 'source left Serving');
    g.open();

    const result = await relocation;
    expect(result).toMatchObject({ outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
    const settled = await outcome;
    expect((await src.shutdown({ deadlineMs: 3000 })).outcome).toBeDefined();

    const ref = admission === 'instancePlacement' ? { spot: late } : { actor: late };
    if (settled === 'accepted') {
      // Accepted → in the inventory → moved: it lives on the target after the source is gone (Relocated is the
      // source's cutover submit, the target's owner CAS follows, §5.1).
      await eventually(async () => (await target.locate(ref))?.nodeId === 'target', 3000, `${late} owned by the target`);
      const ledger = (await target.request(ref, { op: 'ledger' }, { timeoutMs: 2000 })) as { seen: Record<string, number[]> };
      if (admission === 'instancePlacement') expect(ledger.seen.t).toEqual([0]);
      if (admission === 'join') expect(await target.request({ spot: 'room' }, { op: 'ledger' }, { timeoutMs: 2000 })).toMatchObject({ joined: ['joiner'] });
    } else if (admission !== 'join') {
      // Rejected → nothing of it remains registered.
      expect(await target.locate(ref)).toBeUndefined();
    }
    // Everything else the source owned moved too.
    await eventually(async () => (await target.locate({ actor: 'a0' }))?.nodeId === 'target', 3000, 'a0 owned by the target');
  }, 30_000);

  test('a creation accepted during the preflight of an empty host is found once admission closed: the target is searched then and it moves', async () => {
    const g = gate('late');
    const pg = gate('ping');
    const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: ALL_TYPES });
    source = await createRuntime({
      nodeId: 'source',
      applicationVersion: 1,
      types: ALL_TYPES,
      timing: FAST_TIMING,
      stores: slowLocation(stack.stores, g, pg),
      meshes: stackName === 'redis+ws' ? [{ name: 'main', listen: { host: '127.0.0.1', port: 0 } }] : [{ name: 'main' }],
    });
    const src = source;
    g.armed = true;
    pg.armed = true;
    // The preflight of an empty host (§5.1: no target search) is at its Store check when the creation is accepted.
    const relocation = src.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 15_000 });
    await eventually(() => pg.held, 5000, 'preflight at its Store check');
    const outcome = src.createActor('Counter', 'late').then(
      () => 'accepted' as const,
      () => 'rejected' as const,
    );
    await eventually(() => g.held, 5000, 'the creation reached the store');
    pg.open();
    await eventually(() => src.status.state !== FrameworkRuntimeState.Serving, 5000, 'source left Serving');
    g.open();

    expect(await relocation).toMatchObject({ outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
    const settled = await outcome;
    await src.shutdown({ deadlineMs: 3000 });
    if (settled === 'accepted') await eventually(async () => (await target.locate({ actor: 'late' }))?.nodeId === 'target', 3000, 'late owned by the target');
    else expect(await target.locate({ actor: 'late' })).toBeUndefined();
  }, 30_000);
});
