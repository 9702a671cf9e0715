/**
 * §4 manual topology, "manual fanout publisher not publishing a descriptor". Registration, not connection, decides:
 * a registered manual publisher with no subscriber blocks Relocate (ManualTopologyUnsupported) and nothing changes;
 * closing it ends the registration. And it really works: automatic discovery does not find it, a subscriber pointed
 * at its node's endpoint gets its events. Both stacks.
 */
import { RelocationOutcome } from '../../runtime';
import { CHANNEL_TYPES, endpointOf } from '../support/channels';
import { PM } from '../support/s15-states';
import { eventually, STACKS, useStack } from '../support/stack';
import { expectBlockedByManualTopology } from './expect-blocked';

describe.each(STACKS)('%s', (stackName) => {
  const { stack, host } = useStack(stackName, { types: CHANNEL_TYPES });

  test('a registered manual fanout publisher blocks Relocate (ManualTopologyUnsupported) with no subscriber at all, and changes nothing; closing it ends the registration', async () => {
    const source = await host('source');
    await host('target');
    await source.createSpot('Member', 'room');
    const manual = source.registerManualPublisher('ticks');
    manual.publish('nobody listens'); // no subscriber, no connection: the registration alone counts

    await expectBlockedByManualTopology(source, [{ spot: 'room' }], { spot: 'Member' });
    manual.publish('still admitted');
    // It publishes no descriptor entry.
    const descriptor = (await stack.stores.descriptors.list()).find((d) => d.nodeId === 'source');
    expect(descriptor?.components?.['fanout']).toBeUndefined();

    await manual.close();
    const relocated = await source.relocate({ mode: PM, deadlineMs: 20_000 });
    expect(relocated.outcome).toBe(RelocationOutcome.Relocated);
    // Relocated does not wait for the target's owner CAS (§13): the record converges to the target.
    await eventually(async () => (await source.locate({ spot: 'room' }))?.nodeId === 'target', 10_000, "'room' owned by the target");
  }, 30_000);

  test('automatic subscribers do not find a manual publisher; one pointed at its endpoint gets every event once, in order', async () => {
    const publisherHost = await host('publisher');
    const subscriber = await host('subscriber');
    const manual = publisherHost.registerManualPublisher('ticks');
    const auto: unknown[] = [];
    const byHand: unknown[] = [];
    const automatic = subscriber.subscribe('ticks', (e) => void auto.push(e));
    const pointed = subscriber.subscribe('ticks', (e) => void byHand.push(e), { endpoint: await endpointOf(stack.stores, 'publisher') });
    await eventually(() => pointed.publishers().length === 1, 10_000, 'the manual link');
    for (let i = 1; i <= 100; i++) manual.publish({ i });
    await eventually(() => byHand.length === 100, 10_000, '100 events');
    expect(byHand).toEqual(Array.from({ length: 100 }, (_, i) => ({ i: i + 1 })));
    expect(automatic.publishers()).toEqual([]);
    expect(auto).toEqual([]);
  }, 30_000);
});
