/**
 * DESIGN.md "Values and delivery": local delivery is asynchronous and in order — a handler's local send only
 * enqueues, and the receiver runs in its own turn later, never inside the sender's turn (no re-entrancy), exactly
 * as if the receiver lived on another host.
 */
import { defineActor, recreateOnRelocation, type ObjectContext } from '../../runtime';
import { eventually, makeStack, STACKS } from '../support/stack';

const log: string[] = [];

type Msg = { op: 'relay'; to: string; n: number } | { op: 'note'; n: number } | { op: 'ask'; to: string } | { op: 'get' };

const Node = defineActor<{ seen: number[] }>({
  type: 'Node',
  relocation: recreateOnRelocation(),
  create: () => ({ seen: [] }),
  receive: async (state, m: Msg, ctx: ObjectContext<{ seen: number[] }>) => {
    if (m.op === 'relay') {
      log.push(`${ctx.id} start ${m.n}`);
      ctx.send({ actor: m.to }, { op: 'note', n: m.n });
      log.push(`${ctx.id} end ${m.n}`);
      return undefined;
    }
    if (m.op === 'note') {
      log.push(`${ctx.id} note ${m.n}`);
      state.seen.push(m.n);
      return undefined;
    }
    // A handler awaiting a local request: the receiver runs in its own turn, the sender's lane just waits.
    if (m.op === 'ask') return ctx.request({ actor: m.to }, { op: 'get' });
    return [...state.seen];
  },
});

describe.each(STACKS)('local delivery on %s', (stackName) => {
  test("a handler's local send runs the receiver in its own later turn, in order", async () => {
    const stack = await makeStack(stackName);
    try {
      const host = await stack.host({ nodeId: 'solo', applicationVersion: 1, types: [Node] });
      await host.createActor('Node', 'a');
      await host.createActor('Node', 'b');
      log.length = 0;

      host.send({ actor: 'a' }, { op: 'relay', to: 'b', n: 1 });
      expect(log).toEqual([]); // not run inside the caller's call either
      await eventually(() => log.length === 3, 2000, 'the relay and its note');
      expect(log).toEqual(['a start 1', 'a end 1', 'b note 1']);

      for (let n = 2; n <= 50; n++) host.send({ actor: 'a' }, { op: 'relay', to: 'b', n });
      expect(await host.request({ actor: 'a' }, { op: 'ask', to: 'b' }, { timeoutMs: 5000 })).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
      // No turn of b ever started between a turn of a's start and end.
      for (let i = 0; i < log.length; i++) if (log[i]!.startsWith('a start')) expect(log[i + 1]).toMatch(/^a end/);
    } finally {
      await stack.close();
    }
  });
});
