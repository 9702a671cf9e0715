/**
 * §4 manual topology, "fanout subscriber endpoint": a subscription given a mesh endpoint by hand instead of
 * following descriptors. Registration, not connection, decides: with only the registration (an endpoint nobody
 * answers at), Relocate ends Blocked/ManualTopologyUnsupported and nothing changes (state Serving, admission open).
 * And the registration really works: it receives what the node at that endpoint publishes. Both stacks.
 */
import { type FanoutEventInfo } from '../../runtime';
import { CHANNEL_TYPES, endpointOf } from '../support/channels';
import { eventually, nowhere, STACKS, useStack } from '../support/stack';
import { expectBlockedByManualTopology } from './expect-blocked';

describe.each(STACKS)('%s', (stackName) => {
  const { stack, host } = useStack(stackName, { types: CHANNEL_TYPES });

  test('a registered fanout subscriber endpoint blocks Relocate (ManualTopologyUnsupported) without any connection, and changes nothing', async () => {
    const subscriber = await host('subscriber');
    await host('target');
    await subscriber.createSpot('Member', 'room');
    const sub = subscriber.subscribe('ticks', () => undefined, { endpoint: nowhere(stackName) });
    expect(sub.publishers()).toEqual([]); // nobody answers there: no connection, only the registration

    // Admission stayed open (a Spot created now answers) and the workload stayed here.
    const created = await expectBlockedByManualTopology(subscriber, [{ spot: 'room' }], { spot: 'Member' });
    expect(await subscriber.request(created, { op: 'log' })).toEqual([]);
  }, 30_000);

  test('a manual subscriber endpoint receives, in order and once, what the node at that endpoint publishes', async () => {
    const publisherHost = await host('publisher');
    const subscriber = await host('subscriber');
    const manual = publisherHost.registerManualPublisher('ticks'); // not in the descriptor: only reachable by hand
    const automatic = publisherHost.publisher('ticks');
    const got: { value: unknown; id: string }[] = [];
    const sub = subscriber.subscribe('ticks', (value: unknown, info: FanoutEventInfo) => void got.push({ value, id: info.publisher.id }), {
      endpoint: await endpointOf(stack.stores, 'publisher'),
    });
    await eventually(() => sub.publishers().some((p) => p.nodeId === 'publisher'), 10_000, 'the manual link');
    expect(sub.publishers()).toEqual([{ nodeId: 'publisher', lifecycleGeneration: publisherHost.lifecycleGeneration }]);
    for (let i = 1; i <= 50; i++) (i % 2 ? manual : automatic).publish(i);
    await eventually(() => got.length === 50, 10_000, '50 events');
    expect(got.map((g) => g.value)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(got.filter((g) => g.id === manual.id)).toHaveLength(25);

    await sub.close();
    manual.publish('after close');
    automatic.publish('after close');
    await manual.close();
    await automatic.close();
    expect(got).toHaveLength(50);
  }, 30_000);
});
