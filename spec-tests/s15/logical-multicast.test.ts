/**
 * §15 "Logical Multicast", one test per cell, on both stacks (public API only):
 *   Relocating — excluded from the new target snapshot; already-accepted submissions are kept.
 *   Relocated  — excluded from the new target snapshot.
 *   Draining   — closes new admission; only already-accepted submissions are processed.
 *
 * "Excluded from the new target snapshot" as decided in docs/concepts.md "Logical Multicast": a snapshot names
 * member Spots, never hosts, so a relocating host is never a destination of a new multicast — each member is
 * reached at its current owner (a moving Spot through hold/relay and Message Follow) — and the relocating host
 * admits no new member of its own (a join there is refused).
 */
import {
  AdmissionError,
  FrameworkRuntimeState,
  RelocationOutcome,
  RemoteHandlerError,
  TerminationOutcome,
  type ChannelMember,
  type Stores,
} from '../../runtime';
import { CHANNEL_TYPES, gate, log, ownerOf, publishedState, waitForLog } from '../support/channels';
import { closer, settle, sleep } from '../support/hosts';
import { holdAtSafePoint, PM, rejection } from '../support/s15-states';
import { eventually, STACKS, useStack } from '../support/stack';

const S = FrameworkRuntimeState;

async function refusedJoin(join: Promise<unknown>, state: string): Promise<void> {
  const error = await rejection(join);
  expect(error).toBeInstanceOf(AdmissionError);
  expect((error as AdmissionError).state).toBe(state);
}

describe.each(STACKS)('%s', (stackName) => {
  const { stack, host } = useStack(stackName, { types: CHANNEL_TYPES });
  /** Another application version: never a PlannedMaintenance target, so the test knows where Spots move. */
  const sendingHost = (nodeId: string) => host(nodeId, 2);

  test('§15 Logical Multicast in Relocating: the relocating host admits no new member, and every member — moved, still on the host, elsewhere — gets each multicast once, in order, at its current owner', async () => {
    const source = await host('source');
    const target = await host('target');
    const sender = await sendingHost('sender');
    await source.createSpot('PerActorMember', 'moved'); // batch 1: its Spot lane moves before the held aggregate (batch 3)
    await source.createSpot('GateMember', 'held'); // still on the source while it relocates (waits for its safe point)
    await sender.createSpot('Member', 'remote');
    await source.request({ spot: 'moved' }, { op: 'join', channel: 'room' }); // ctx.channels.join in its handler
    await sender.joinChannel({ spot: 'held' }, 'room'); // from outside
    await target.joinChannel({ spot: 'remote' }, 'room');

    const relocating = await holdAtSafePoint(source, 'held', 30_000);
    await eventually(async () => (await ownerOf(sender, { spot: 'moved' })) === 'target', 10_000, "'moved' owned by the target");

    // No new membership is admitted on the relocating host, from outside or from a handler running there.
    await refusedJoin(source.joinChannel({ spot: 'remote' }, 'other'), 'Relocating');
    await expect(source.request({ spot: 'held' }, { op: 'join', channel: 'other' })).rejects.toThrow(RemoteHandlerError);
    expect(await stack.stores.channels.members('other')).toEqual([]);

    // Multicasts sent from another host and from the relocating host itself are admitted and accepted.
    expect(await sender.multicast('room', { n: 1 })).toEqual({ targets: 3 });
    for (const spot of ['moved', 'held', 'remote']) await waitForLog(sender, spot, 1); // two senders: wait, so the order is known
    expect(await source.multicast('room', { n: 2 })).toEqual({ targets: 3 });
    expect(await waitForLog(sender, 'moved', 2)).toEqual([{ n: 1, at: 'target' }, { n: 2, at: 'target' }]);
    expect(await waitForLog(sender, 'remote', 2)).toEqual([{ n: 1, at: 'sender' }, { n: 2, at: 'sender' }]);
    expect(await waitForLog(sender, 'held', 2)).toEqual([{ n: 1, at: 'source' }, { n: 2, at: 'source' }]);

    // The held Spot moves with its membership and its log; the next multicast reaches it at the target.
    expect((await relocating.release()).outcome).toBe(RelocationOutcome.Relocated);
    expect(await sender.multicast('room', { n: 3 })).toEqual({ targets: 3 });
    expect(await waitForLog(sender, 'held', 3)).toEqual([{ n: 1, at: 'source' }, { n: 2, at: 'source' }, { n: 3, at: 'target' }]);
    expect(await waitForLog(sender, 'moved', 3)).toEqual([{ n: 1, at: 'target' }, { n: 2, at: 'target' }, { n: 3, at: 'target' }]);
    expect(await waitForLog(sender, 'remote', 3)).toHaveLength(3);
  }, 60_000);

  test('§15 Logical Multicast in Relocated: the host that moved its members is no target any more — they get each multicast once at the new owner — and it admits no new member', async () => {
    const source = await host('source');
    await host('target');
    const sender = await sendingHost('sender');
    await source.createSpot('Member', 'a');
    await source.createSpot('Member', 'b');
    await sender.createSpot('Member', 'c');
    for (const spot of ['a', 'b', 'c']) await sender.joinChannel({ spot }, 'room');
    expect(await sender.multicast('room', { n: 1 })).toEqual({ targets: 3 });
    await waitForLog(sender, 'a', 1);

    const result = await source.relocate({ mode: PM, deadlineMs: 30_000 });
    expect(result.outcome).toBe(RelocationOutcome.Relocated);
    await refusedJoin(source.joinChannel({ spot: 'c' }, 'other'), 'Relocated');

    expect(await sender.multicast('room', { n: 2 })).toEqual({ targets: 3 });
    for (const spot of ['a', 'b', 'c']) await waitForLog(sender, spot, 2); // two senders: wait, so the order is known
    expect(await source.multicast('room', { n: 3 })).toEqual({ targets: 3 }); // sending from a Relocated host is admitted
    for (const spot of ['a', 'b']) expect(await waitForLog(sender, spot, 3)).toEqual([{ n: 1, at: 'source' }, { n: 2, at: 'target' }, { n: 3, at: 'target' }]);
    expect(await waitForLog(sender, 'c', 3)).toEqual([{ n: 1, at: 'sender' }, { n: 2, at: 'sender' }, { n: 3, at: 'sender' }]);
  }, 60_000);

  test('§15 Logical Multicast in Draining: new multicasts are refused, and one accepted before Shutdown is sent before the host closes, once to each member', async () => {
    // The draining host reads its snapshots through a gate, so its accepted submission is still in flight.
    const snapshotGate = gate();
    let snapshotPending = false;
    const gated: Stores = {
      ...stack.stores,
      channels: {
        join: (channel, member, opId) => stack.stores.channels.join(channel, member, opId),
        leave: (channel, spot, opId) => stack.stores.channels.leave(channel, spot, opId),
        members: async (channel): Promise<ChannelMember[]> => {
          const members = await stack.stores.channels.members(channel);
          snapshotPending = true;
          await snapshotGate.promise;
          return members;
        },
      },
    };
    const draining = await host('draining', 1, { stores: gated });
    try {
      const first = await host('first');
      const second = await host('second');
      await draining.createSpot('Closer', 'closer'); // its closing callback (§14 step 4) comes after the drain
      await first.createSpot('Member', 'm1');
      await second.createSpot('Member', 'm2');
      await first.joinChannel({ spot: 'm1' }, 'room');
      await first.joinChannel({ spot: 'm2' }, 'room');
      let submittedAtClosing: boolean | undefined;

      const accepted = settle(draining.multicast('room', { n: 1 }));
      closer.onCall = () => (submittedAtClosing = accepted.done);
      await eventually(() => snapshotPending, 5000, 'the accepted submission reading its snapshot');
      const shutdown = settle(draining.shutdown({ deadlineMs: 20_000 }));
      expect(draining.status.state).toBe(S.Draining);
      await expect(draining.multicast('room', { n: 2 })).rejects.toMatchObject({ name: 'AdmissionError', state: 'Draining' });
      await refusedJoin(draining.joinChannel({ spot: 'm1' }, 'other'), 'Draining');

      // Give a drain that would not wait for the submission time to move on; then let the snapshot through.
      await eventually(async () => (await publishedState(stack.stores, 'draining')) === S.Draining, 5000, 'the Draining descriptor');
      await sleep(200);
      snapshotGate.open();
      await accepted.promise;
      expect(accepted.value).toEqual({ targets: 2 });
      await eventually(() => closer.calls > 0, 10_000, 'the closing callback');
      expect(submittedAtClosing).toBe(true);
      closer.open();
      await shutdown.promise;
      expect(shutdown.value?.outcome).toBe(TerminationOutcome.Stopped);
      expect(await waitForLog(first, 'm1', 1)).toEqual([{ n: 1, at: 'first' }]);
      expect(await waitForLog(first, 'm2', 1)).toEqual([{ n: 1, at: 'second' }]);
      expect(await log(second, 'm1')).toHaveLength(1);
    } finally {
      snapshotGate.open();
      closer.open();
      await draining.shutdown({ deadlineMs: 5000 }).catch(() => undefined);
    }
  }, 60_000);
});
