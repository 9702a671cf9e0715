/**
 * Logical Multicast end to end, on both stacks: a stream of multicasts to member Spots on several hosts while one
 * of those hosts relocates — every member gets every message exactly once, in send order, at whichever node owns
 * it when the message arrives; membership belongs to the Spot (it survives the move, it is visible from every host,
 * and a moved Spot can leave from its new owner); an Instance Spot member is placed by the multicast itself.
 */
import { defineSpot, preserveState, RelocationOutcome, type FrameworkRuntime } from '../../runtime';
import { CHANNEL_TYPES, ownerOf, waitForLog, type MemberMessage, type Received } from '../support/channels';
import { PM } from '../support/s15-states';
import { eventually, makeStack, STACKS, type Stack } from '../support/stack';

/** An Instance Spot member (created on demand by its first message): joins from its handler, logs what it gets. */
const Shard = defineSpot<{ got: Received[] }>({
  type: 'Shard',
  kind: 'instance',
  relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString('utf8')) as { got: Received[] } }),
  create: () => ({ got: [] }),
  receive: (state, message: MemberMessage, ctx) => {
    if ('n' in message) return void state.got.push({ n: message.n, at: ctx.nodeId });
    if (message.op === 'join') return ctx.channels.join(message.channel).then(() => 'joined');
    if (message.op === 'log') return state.got;
    return undefined;
  },
});

const TYPES = [...CHANNEL_TYPES, Shard];

describe.each(STACKS)('%s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(() => stack.close());
  const host = (nodeId: string, applicationVersion = 1) => stack.host({ nodeId, applicationVersion, types: TYPES });

  test('multicasts to members on several hosts while one host relocates: each member gets each message exactly once, in order', async () => {
    const source = await host('source');
    const target = await host('target');
    const other = await host('other', 2); // another version: neither a target nor moved
    const sender = await host('sender', 2);
    await source.createSpot('Member', 'm-source-1');
    await source.createSpot('Member', 'm-source-2');
    await source.request({ spot: 'shard-1', type: 'Shard' }, { op: 'join', channel: 'room' }); // placed on the source
    await other.createSpot('Member', 'm-other');
    await target.createSpot('Member', 'm-target');
    for (const spot of ['m-source-1', 'm-source-2', 'm-other', 'm-target']) await sender.request({ spot }, { op: 'join', channel: 'room' });
    expect(await ownerOf(sender, { spot: 'shard-1' })).toBe('source');
    const members = ['m-source-1', 'm-source-2', 'shard-1', 'm-other', 'm-target'];

    const N = 120;
    let relocation: Promise<unknown> | undefined;
    for (let n = 1; n <= N; n++) {
      expect(await sender.multicast('room', { n })).toEqual({ targets: members.length });
      if (n === 20) relocation = source.relocate({ mode: PM, deadlineMs: 30_000 });
      if (n % 10 === 0) await new Promise((r) => setTimeout(r, 2)); // let the relocation interleave
    }
    expect(await relocation).toMatchObject({ outcome: RelocationOutcome.Relocated });
    for (const spot of ['m-source-1', 'm-source-2', 'shard-1']) await eventually(async () => (await ownerOf(sender, { spot })) === 'target', 10_000, `${spot} moved`);

    for (const spot of members) {
      const got = await waitForLog(sender, spot, N);
      expect(got.map((g) => g.n)).toEqual(Array.from({ length: N }, (_, i) => i + 1));
    }
    // The moved members ran some turns on the source and the rest on the target, never back.
    for (const spot of ['m-source-1', 'm-source-2', 'shard-1']) {
      const at = (await waitForLog(sender, spot, N)).map((g) => g.at);
      const switched = at.indexOf('target');
      expect(switched).toBeGreaterThan(0);
      expect(at.slice(switched).every((a) => a === 'target')).toBe(true);
    }
  }, 90_000);

  test('membership belongs to the Spot: it survives the move, every host sees it, and the moved Spot leaves from its new owner', async () => {
    const source = await host('source');
    await host('target');
    const sender = await host('sender', 2);
    await source.createSpot('Member', 'a');
    await source.createSpot('Member', 'b');
    await source.request({ spot: 'a' }, { op: 'join', channel: 'room' });
    await sender.joinChannel({ spot: 'b' }, 'room');
    expect(await stack.stores.channels.members('room')).toEqual([{ spot: 'a' }, { spot: 'b' }]);

    expect((await source.relocate({ mode: PM, deadlineMs: 30_000 })).outcome).toBe(RelocationOutcome.Relocated);
    await eventually(async () => (await ownerOf(sender, { spot: 'a' })) === 'target', 10_000, 'a moved');
    expect(await stack.stores.channels.members('room')).toEqual([{ spot: 'a' }, { spot: 'b' }]);
    expect(await sender.multicast('room', { n: 1 })).toEqual({ targets: 2 });
    expect(await waitForLog(sender, 'a', 1)).toEqual([{ n: 1, at: 'target' }]);

    // ctx.channels.leave in a turn on the new owner.
    expect(await sender.request({ spot: 'a' }, { op: 'leave', channel: 'room' })).toBe('left');
    expect(await sender.multicast('room', { n: 2 })).toEqual({ targets: 1 });
    expect(await waitForLog(sender, 'b', 2)).toEqual([{ n: 1, at: 'target' }, { n: 2, at: 'target' }]);
    expect(await waitForLog(sender, 'a', 1)).toEqual([{ n: 1, at: 'target' }]);
  }, 60_000);

  test('an Instance Spot member joined from outside is placed by the multicast itself, once', async () => {
    const a = await host('a');
    const b = await host('b');
    await a.joinChannel({ spot: 'shard-7', type: 'Shard' }, 'shards');
    expect(await a.locate({ spot: 'shard-7' })).toBeUndefined();
    expect(await b.multicast('shards', { n: 1 })).toEqual({ targets: 1 });
    expect(await b.multicast('shards', { n: 2 })).toEqual({ targets: 1 });
    const got = await waitForLog(a, 'shard-7', 2);
    expect(got.map((g) => g.n)).toEqual([1, 2]);
    expect(['a', 'b']).toContain(await ownerOf(a, { spot: 'shard-7' }));
  }, 30_000);

  test('bad input names the field and changes nothing', async () => {
    const h: FrameworkRuntime = await host('h');
    await expect(h.multicast('room', { f: () => 1 })).rejects.toMatchObject({ name: 'ArgumentError', field: 'message.f' });
    await expect(h.joinChannel({ actor: 'x' } as never, 'room')).rejects.toMatchObject({ name: 'ArgumentError', field: 'spot' });
    await expect(h.joinChannel({ spot: 'x' }, '')).rejects.toMatchObject({ name: 'ArgumentError', field: 'channel' });
    await h.createSpot('Member', 'm');
    await expect(h.request({ spot: 'm' }, { op: 'join', channel: '' })).rejects.toThrow(/channel/);
    expect(await stack.stores.channels.members('room')).toEqual([]);
  }, 30_000);
});
