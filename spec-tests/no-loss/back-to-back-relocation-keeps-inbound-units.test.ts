/**
 * §4 first row, §14 step 3: inbound relocation is work in progress. A host that relocates while units sent to it
 * by another host are still in flight waits for them to open (or be discarded), moves them with its own
 * inventory, and publishes SafeToShutdown only with no inbound unit in flight — so a back-to-back relocation
 * a → b → c followed by shutting down a and b loses no object.
 *
 * The only fault is a slow link: a's cutover messages reach b 300 ms late, so b still has the units in flight
 * when its own Relocate starts (a returns Relocated once every cutover submit reached its terminal, §5.1).
 */
import { createTransport } from '../../transport';
import type { TransportFactory } from '../../transport/types';
import { RelocationMode, RelocationOutcome, RelocationReason, TerminationOutcome, type FrameworkRuntime } from '../../runtime';
import { eventually, makeStack, STACKS, type Stack } from '../support/stack';
import { ALL_TYPES } from '../support/workload';

/** The real transport, except that relocation cutovers leave `delayMs` late (a slow link, not a loss). */
function slowCutover(delayMs: number): TransportFactory {
  return (options) => {
    const inner = createTransport(options);
    const send: typeof inner.send = (peer, message) => {
      if (message.t !== 'r.cutover') return inner.send(peer, message);
      setTimeout(() => inner.send(peer, message), delayMs);
      return true;
    };
    return Object.assign(Object.create(inner) as typeof inner, { send });
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
    const a: FrameworkRuntime = await stack.host({ nodeId: 'a', applicationVersion: 1, types: ALL_TYPES, transport: slowCutover(300) });
    const b = await stack.host({ nodeId: 'b', applicationVersion: 1, types: ALL_TYPES });
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
    const second = await b.relocate({ mode: RelocationMode.RollingUpdate, targetApplicationVersion: 2 });
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
