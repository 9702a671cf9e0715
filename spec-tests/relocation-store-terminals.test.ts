/**
 * §1.1 / §9: the Relocation Store keeps the terminal result of a pending request that completes after
 * relocation — a request that moved inside a unit (saved work or the relay batch) — and nothing for requests
 * that never moved. The store is the real one; a thin wrapper only records which terminals were written.
 */
import { defineActor, preserveState, RelocationMode, type RequestTerminal, type Stores } from '../runtime';
import { eventually, makeStack, stacksWithCluster } from './support/stack';

let release: (() => void) | undefined;
const Slow = defineActor<{ n: number }>({
  type: 'Slow',
  relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) }),
  create: () => ({ n: 0 }),
  receive: async (state, m: { op: 'hold' } | { op: 'add' }, ctx) => {
    if (m.op === 'hold') await new Promise<void>((r) => (release = r));
    else state.n++;
    return { n: state.n, node: ctx.nodeId };
  },
});

function recordTerminals(stores: Stores): { id: string; terminal: RequestTerminal }[] {
  const written: { id: string; terminal: RequestTerminal }[] = [];
  const original = stores.relocation.recordRequestTerminal.bind(stores.relocation);
  stores.relocation.recordRequestTerminal = (id, terminal, ttl) => {
    written.push({ id, terminal });
    return original(id, terminal, ttl);
  };
  return written;
}

describe.each(stacksWithCluster())('Relocation Store request terminals on %s', (stackName) => {
  test('a request that completes after relocation leaves exactly its terminal; one that never moved leaves none', async () => {
    const stack = await makeStack(stackName);
    const written = recordTerminals(stack.stores);
    try {
      const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: [Slow] });
      await stack.host({ nodeId: 'target', applicationVersion: 1, types: [Slow] });
      await source.createActor('Slow', 's1');
      expect(await source.request({ actor: 's1' }, { op: 'add' })).toEqual({ n: 1, node: 'source' });
      expect(written).toEqual([]);
      // The hold keeps the lane busy, so the next request is unexecuted work at the seal and moves.
      const held = source.request({ actor: 's1' }, { op: 'hold' });
      const moved = source.request({ actor: 's1' }, { op: 'add' });
      const relocation = source.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 10_000 });
      await eventually(() => release !== undefined && (source.diagnostics().units.sourceByState['safePoint'] ?? 0) === 1, 5000, 'unit waiting for the turn to end');
      release!();
      expect(await held).toEqual({ n: 1, node: 'source' });
      expect((await relocation).outcome).toBe(0);
      expect(await moved).toEqual({ n: 2, node: 'target' });
      await eventually(() => written.length === 1, 5000, 'terminal written');
      expect(written[0]!.terminal).toEqual({ ok: true, value: { n: 2, node: 'target' } });
      expect(await stack.stores.relocation.getRequestTerminal(written[0]!.id)).toEqual({ ok: true, value: { n: 2, node: 'target' } });
    } finally {
      release = undefined;
      await stack.close();
    }
  }, 30_000);
});
