/**
 * §4 first row, §14 step 3: inbound relocation is work in progress. A host that relocates while units sent to it
 * by another host are still in flight waits for them to open (or be discarded), moves them with its own
 * inventory, and publishes SafeToShutdown only with no inbound unit in flight — so a back-to-back relocation
 * a → b → c followed by shutting down a and b loses no object.
 *
 * The only fault is a slow link: a's cutover messages are held on the wire until the test lets them go, once b's own
 * Relocate has started, so b has the units in flight then (a returns Relocated once every cutover submit reached its
 * terminal, §5.1). b's cutover-wait fallback is longer than the test, so only the cutovers open the units.
 */
import { createTransport } from '../../transport';
import type { TransportFactory } from '../../transport/types';
import { RelocationMode, RelocationOutcome, RelocationReason, TerminationOutcome, type FrameworkRuntime } from '../../runtime';
import { eventually, FAST_TIMING, makeStack, STACKS, type Stack } from '../support/stack';
import { ALL_TYPES } from '../support/workload';

/** A slow link: relocation cutovers wait on the wire until `release()`, then go in their order. */
function slowCutover() {
  let held: (() => void)[] | undefined = [];
  const factory: TransportFactory = (options) => {
    const inner = createTransport(options);
    const send: typeof inner.send = (peer, message) => {
      if (held && (message.t === 'r.cutover' || message.t === 'r.cutovers')) {
        held.push(() => inner.send(peer, message));
        return true;
      }
      return inner.send(peer, message);
    };
    return Object.assign(Object.create(inner) as typeof inner, { send });
  };
  return {
    factory,
    release() {
      const queue = held ?? [];
      held = undefined;
      for (const deliver of queue) deliver();
    },
  };
}

describe.each(STACKS)('back-to-back relocation on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await stack.close();
  });

  test('b relocates the units still inbound from a, never publishes SafeToShutdown with units in flight, and shutting down a and b loses no Actor', async () => {
    const link = slowCutover();
    const a: FrameworkRuntime = await stack.host({ nodeId: 'a', applicationVersion: 1, types: ALL_TYPES, transport: link.factory });
    const b = await stack.host({ nodeId: 'b', applicationVersion: 1, types: ALL_TYPES, timing: { ...FAST_TIMING, relocationCutoverWaitTimeoutMs: 20_000 } });
    const c = await stack.host({ nodeId: 'c', applicationVersion: 2, types: ALL_TYPES });
    for (let i = 0; i < 3; i++) {
      await a.createActor('Counter', `c${i}`);
      await a.request({ actor: `c${i}` }, { op: 'seq', from: 't', n: 0 });
    }
    // Whenever b shows SafeToShutdown, no inbound unit may be in flight on it (§14).
    const unsafe: number[] = [];
    const stopWatch = new AbortController();
    const watching = (async () => {
      for await (const s of b.observe({ signal: stopWatch.signal })) {
        const inFlight = b.diagnostics().units.targetInFlight;
        if (s.safeToShutdown && inFlight > 0) unsafe.push(inFlight);
      }
    })().catch(() => undefined);

    const first = await a.relocate({ mode: RelocationMode.PlannedMaintenance });
    expect(first).toMatchObject({ outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
    expect(b.diagnostics().units.targetInFlight).toBe(3); // the scenario: units still inbound on b
    const relocating = b.relocate({ mode: RelocationMode.RollingUpdate, targetApplicationVersion: 2 });
    await new Promise((r) => setTimeout(r, 50));
    if (b.status.safeToShutdown) unsafe.push(b.diagnostics().units.targetInFlight);
    link.release();
    const second = await relocating;
    if (b.status.safeToShutdown) unsafe.push(b.diagnostics().units.targetInFlight);
    expect(second).toMatchObject({ outcome: RelocationOutcome.Relocated, reason: RelocationReason.None, targetApplicationVersion: 2 });
    expect(b.diagnostics().lastInventory?.actors).toBe(3);

    expect((await a.shutdown({ deadlineMs: 3000 })).outcome).toBe(TerminationOutcome.Stopped);
    expect((await b.shutdown({ deadlineMs: 3000 })).outcome).toBe(TerminationOutcome.Stopped);
    stopWatch.abort();
    await watching;
    expect(unsafe).toEqual([]);

    for (let i = 0; i < 3; i++) {
      // Relocated is b's cutover submit; c's owner CAS follows (§5.1).
      await eventually(async () => (await c.locate({ actor: `c${i}` }))?.nodeId === 'c', 3000, `c${i} owned by c`);
      const ledger = (await c.request({ actor: `c${i}` }, { op: 'ledger' }, { timeoutMs: 2000 })) as { seen: Record<string, number[]> };
      expect(ledger.seen.t).toEqual([0]); // state moved twice, nothing lost or repeated
      expect(await c.request({ actor: `c${i}` }, { op: 'where' }, { timeoutMs: 2000 })).toBe('c');
    }
  }, 30_000);
});
