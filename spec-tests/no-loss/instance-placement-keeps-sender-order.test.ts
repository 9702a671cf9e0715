/**
 * Sends to an Instance Spot that does not exist yet: the first one places it (§15 Instance Spot placement), and
 * the ones sent while that placement is in flight wait for it — none is routed to the placing node as if it were
 * a peer (they were lost), none overtakes the first. Both stacks, from the placing host and from another host.
 */
import { defineSpot, preserveState } from '../../runtime';
import { eventually, makeStack, STACKS, type Stack } from '../support/stack';

const Shard = defineSpot<{ got: number[] }>({
  type: 'Shard',
  kind: 'instance',
  relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString('utf8')) as { got: number[] } }),
  create: () => ({ got: [] }),
  receive: (state, message: { n: number } | { op: 'log' }) => {
    if ('op' in message) return state.got;
    state.got.push(message.n);
    return undefined;
  },
});

describe.each(STACKS)('%s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(() => stack.close());

  test('messages sent while an Instance Spot is being placed are delivered once, in send order', async () => {
    const a = await stack.host({ nodeId: 'a', applicationVersion: 1, types: [Shard] });
    const b = await stack.host({ nodeId: 'b', applicationVersion: 1, types: [Shard] });
    for (const [sender, spot] of [
      [a, 'placed-by-a'],
      [b, 'placed-by-b'],
    ] as const) {
      for (let n = 1; n <= 20; n++) sender.send({ spot, type: 'Shard' }, { n });
      let got: number[] = [];
      await eventually(async () => (got = (await a.request({ spot, type: 'Shard' }, { op: 'log' })) as number[]).length >= 20, 10_000, `${spot} got 20`);
      expect(got).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    }
  }, 30_000);
});
