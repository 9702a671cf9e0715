/**
 * Spec 05 §4 "Topology", on both stacks: a registered ClientServer client endpoint is manual topology, so Relocate
 * ends Blocked/ManualTopologyUnsupported — registration decides, not connection — and nothing changes. The endpoint
 * is also a real client path: calls on its channel go to the node at that endpoint, even one this host cannot
 * discover (a host of another cluster, with other stores).
 */
import { RelocationOutcome, type FrameworkRuntime } from '../../runtime';
import { PM } from '../support/s15-states';
import { makeStack, nowhere, STACKS, useStack, type Stack } from '../support/stack';
import { serverHandler, TYPES } from '../client-server/support';
import { expectBlockedByManualTopology } from './expect-blocked';

describe.each(STACKS)('%s', (stackName) => {
  const { stack, host } = useStack(stackName, { types: TYPES });
  let other: Stack | undefined;
  afterEach(async () => {
    await other?.close();
    other = undefined;
  });

  /** A host with an object to move, and a Ready target for it. */
  async function populated(nodeId: string): Promise<FrameworkRuntime> {
    const h = await host(nodeId);
    await h.createSpot('CsPlain', `${nodeId}-spot`);
    return h;
  }

  test('Relocate ends Blocked/ManualTopologyUnsupported with only a ClientServer client endpoint registered (never connected); the host stays Serving', async () => {
    await host('target');
    // The same host without the registration relocates (the setup itself does not block).
    const control = await populated('control');
    expect((await control.relocate({ mode: PM, deadlineMs: 10_000 })).outcome).toBe(RelocationOutcome.Relocated);

    const client = await populated('client');
    client.registerManualClientEndpoint('orders', nowhere(stackName));
    // Nothing moved and admission is open: a Spot created now takes requests.
    const created = await expectBlockedByManualTopology(client, [{ spot: 'client-spot' }], { spot: 'CsPlain' });
    expect(await client.request(created, 'hi')).toBe(1);
    // A Serving host still serves and calls.
    await client.serve('local', () => 'still serving');
    expect(await client.call('local', null)).toBe('still serving');
  });

  test('a ClientServer client endpoint is a real client path: calls on its channel go to the node at that endpoint (here one of another cluster)', async () => {
    other = await makeStack(stackName);
    const remote = await other.host({ nodeId: 'remote', applicationVersion: 1, types: TYPES });
    await remote.serve('orders', serverHandler('remote').handler, { weight: 5 });
    const endpoint = (await other.stores.descriptors.list()).find((d) => d.nodeId === 'remote')!.endpoints.main!;

    const local = await host('local');
    await local.serve('orders', serverHandler('local').handler);
    const client = await host('client');
    // Before the registration, discovery finds only this cluster's server.
    expect(await client.call('orders', null)).toBe('local');
    client.registerManualClientEndpoint('orders', endpoint);
    // From now on the channel goes to the endpoint's node only (the first call waits for the connection).
    const answers = await Promise.all(Array.from({ length: 30 }, () => client.call('orders', null, { timeoutMs: 10_000 })));
    expect(new Set(answers)).toEqual(new Set(['remote']));
    // Node direct to that node works over the same connection; the other cluster's host is not in this one's store.
    expect(await client.call('orders', null, { node: 'remote' })).toBe('remote');
    expect((await stack.stores.descriptors.list()).some((d) => d.nodeId === 'remote')).toBe(false);
    // Other channels keep using discovery.
    await local.serve('other', () => 'local-other');
    expect(await client.call('other', null)).toBe('local-other');
  });
});
