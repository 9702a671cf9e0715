/**
 * Issue [5/10] item 3: a second createRuntime with the nodeId of a live host is refused with NodeIdInUseError,
 * and the refusal changes nothing for the live host — its owner lease, descriptor, state and objects stay, it keeps
 * answering, and a later Relocate from it still ends Relocated. A run that ended without releasing its lease (a
 * crash: its timers never fire again) blocks its nodeId only until that lease expires; then the same nodeId starts.
 * Both stacks: memory stores + in-process transport, Redis + ws.
 */
import { FrameworkRuntimeState, NodeIdInUseError, RelocationMode, RelocationOutcome, SimulatedClock, type FrameworkRuntime } from '../../runtime';
import { Counter } from '../support/hosts';
import { eventually, FAST_TIMING, makeStack, STACKS, type Stack } from '../support/stack';

const refusal = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (host) => {
      void (host as FrameworkRuntime).shutdown().catch(() => undefined);
      throw new Error('the duplicate start was accepted');
    },
    (error: unknown) => error,
  );

const mine = async (stack: Stack, nodeId: string) => (await stack.stores.descriptors.list()).filter((d) => d.nodeId === nodeId);

describe.each(STACKS)('duplicate nodeId on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await stack.close();
  });

  test('a second start with a live host’s nodeId is refused and the live host keeps serving, answering and relocating', async () => {
    const a = await stack.host({ nodeId: 'node-a', applicationVersion: 1, types: [Counter] });
    const b = await stack.host({ nodeId: 'node-b', applicationVersion: 1, types: [Counter] });
    await a.createActor('Counter', 'counter-1');
    expect(await a.request({ actor: 'counter-1' }, { op: 'add', by: 2 })).toBe(2);
    const descriptorBefore = await mine(stack, 'node-a');
    expect(descriptorBefore).toHaveLength(1);
    const ownerBefore = await a.locate({ actor: 'counter-1' });

    const error = await refusal(stack.host({ nodeId: 'node-a', applicationVersion: 1, types: [Counter] }));
    expect(error).toBeInstanceOf(NodeIdInUseError);
    const inUse = error as NodeIdInUseError;
    expect(inUse.name).toBe('NodeIdInUseError');
    expect(inUse.nodeId).toBe('node-a');
    expect(inUse.leaseExpiresInMs).toBeGreaterThan(0);
    expect(inUse.leaseExpiresInMs).toBeLessThanOrEqual(FAST_TIMING.leaseMs);
    expect(inUse.message).toContain("'node-a'");
    expect(inUse.message).toMatch(/expires in \d+ ms/);

    // Nothing changed for a, also after its next renewals (every leaseMs/3): lease, descriptor, state, objects.
    await new Promise((r) => setTimeout(r, FAST_TIMING.leaseMs / 2));
    expect(a.status.state).toBe(FrameworkRuntimeState.Serving);
    expect(await mine(stack, 'node-a')).toEqual(descriptorBefore);
    expect(await a.locate({ actor: 'counter-1' })).toEqual(ownerBefore);
    expect(ownerBefore).toEqual({ nodeId: 'node-a', lifecycleGeneration: a.lifecycleGeneration });
    expect(await a.request({ actor: 'counter-1' }, { op: 'add', by: 1 })).toBe(3);
    expect(await b.request({ actor: 'counter-1' }, { op: 'where' })).toBe('node-a');

    // A later Relocate from a still works: the actor and its state move to b.
    const result = await a.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 10_000 });
    expect(result.outcome).toBe(RelocationOutcome.Relocated);
    expect(await b.request({ actor: 'counter-1' }, { op: 'get' })).toBe(3);
    expect(await b.request({ actor: 'counter-1' }, { op: 'where' })).toBe('node-b');
    expect(a.status.state).toBe(FrameworkRuntimeState.Relocated);
  }, 30_000);

  test('after a crash-like end (no renewal, no release) the same nodeId starts once the old lease expired', async () => {
    const leaseMs = 400;
    // The crashed run: its clock never moves again, so it never renews (and never releases) its owner lease,
    // which the store then lets expire on real time — what a killed process leaves behind.
    const frozen = new SimulatedClock();
    const crashedLog: { level: string; fields: Record<string, unknown>; msg?: string }[] = [];
    const at = (level: string) => (fields: Record<string, unknown>, msg?: string) => void crashedLog.push({ level, fields, msg });
    const crashed = await stack.host({
      nodeId: 'node-c',
      applicationVersion: 1,
      types: [Counter],
      clock: frozen,
      timing: { ...FAST_TIMING, leaseMs },
      logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
    });
    expect(crashed.status.state).toBe(FrameworkRuntimeState.Serving);

    const early = await refusal(stack.host({ nodeId: 'node-c', applicationVersion: 1, types: [Counter], timing: { ...FAST_TIMING, leaseMs } }));
    expect(early).toBeInstanceOf(NodeIdInUseError);
    const waitMs = (early as NodeIdInUseError).leaseExpiresInMs;
    expect(waitMs).toBeGreaterThan(0);
    expect(waitMs).toBeLessThanOrEqual(leaseMs);

    await new Promise((r) => setTimeout(r, waitMs + 50));
    const restarted = await stack.host({ nodeId: 'node-c', applicationVersion: 1, types: [Counter], timing: { ...FAST_TIMING, leaseMs } });
    expect(restarted.status.state).toBe(FrameworkRuntimeState.Serving);
    expect(restarted.lifecycleGeneration).toBeGreaterThan(crashed.lifecycleGeneration);
    expect((await mine(stack, 'node-c')).map((d) => d.lifecycleGeneration)).toEqual([restarted.lifecycleGeneration]);
    await restarted.createActor('Counter', 'counter-2');
    expect(await restarted.request({ actor: 'counter-2' }, { op: 'add' })).toBe(1);
    // The restarted run keeps its lease past the old one's lifetime (it renews on its own clock).
    await new Promise((r) => setTimeout(r, leaseMs * 2));
    expect(restarted.status.state).toBe(FrameworkRuntimeState.Serving);

    // Let the crashed run's timers fire so stack.close() can end it: it finds its lease gone and goes to Error.
    frozen.increment(leaseMs);
    await eventually(() => crashed.status.state === FrameworkRuntimeState.Error, 5000, 'the stale run to notice its lease is gone');
    expect(crashedLog).toContainEqual({
      level: 'error',
      fields: { nodeId: 'node-c', lifecycleGeneration: crashed.lifecycleGeneration },
      msg: expect.stringContaining('owner lease was lost'),
    });
    expect((await mine(stack, 'node-c')).map((d) => d.lifecycleGeneration)).toEqual([restarted.lifecycleGeneration]);
  }, 30_000);
});
