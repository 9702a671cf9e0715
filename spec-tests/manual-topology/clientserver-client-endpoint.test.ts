/**
 * Spec 05 §4 "Topology", on both stacks: a registered ClientServer client endpoint is manual topology, so Relocate
 * ends Blocked/ManualTopologyUnsupported — registration decides, not connection — and nothing changes. The endpoint
 * is also a real client path: calls on its channel go to the node at that endpoint, even one this host cannot
 * discover (a host of another cluster, with other stores).
 */
import { RelocationOutcome, RelocationReason, type FrameworkRuntime } from '../../runtime';
import { makeStack, STACKS, type Stack } from '../support/stack';
import { PM, S, serverHandler, TYPES } from '../client-server/support';

/** An endpoint of the stack's transport kind where nothing listens (a registration that never connects). */
const nowhere = (stackName: string) => (stackName === 'redis+ws' ? 'ws://127.0.0.1:9/never' : 'memory://nobody/1/main');

describe.each(STACKS)('%s', (stackName) => {
  let stack: Stack;
  let other: Stack | undefined;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await stack.close();
    await other?.close();
    other = undefined;
  });

  /** A host with an object to move, and a Ready target for it. */
  async function populated(nodeId: string): Promise<FrameworkRuntime> {
    const h = await stack.host({ nodeId, applicationVersion: 1, types: TYPES });
    await h.createSpot('CsPlain', `${nodeId}-spot`);
    return h;
  }

  test('Relocate ends Blocked/ManualTopologyUnsupported with only a ClientServer client endpoint registered (never connected); the host stays Serving', async () => {
    await stack.host({ nodeId: 'target', applicationVersion: 1, types: TYPES });
    // The same host without the registration relocates (the setup itself does not block).
    const control = await populated('control');
    expect((await control.relocate({ mode: PM, deadlineMs: 10_000 })).outcome).toBe(RelocationOutcome.Relocated);

    const client = await populated('client');
    client.registerManualClientEndpoint('orders', nowhere(stackName));
    const result = await client.relocate({ mode: PM, deadlineMs: 10_000 });
    expect(result).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Blocked, reason: RelocationReason.ManualTopologyUnsupported });
    expect(client.status).toMatchObject({ state: S.Serving, isReady: true });
    expect(client.diagnostics().blockers).toContainEqual({ object: 'topology', reason: 'ManualTopologyUnsupported' });
    // Nothing moved and admission is open.
    expect((await client.locate({ spot: 'client-spot' }))?.nodeId).toBe('client');
    await client.createSpot('CsPlain', 'created-after');
    expect(await client.request({ spot: 'created-after' }, 'hi')).toBe(1);
    // A Serving host still serves and calls.
    await client.serve('local', () => 'still serving');
    expect(await client.call('local', null)).toBe('still serving');
  });

  test('a ClientServer client endpoint is a real client path: calls on its channel go to the node at that endpoint (here one of another cluster)', async () => {
    other = await makeStack(stackName);
    const remote = await other.host({ nodeId: 'remote', applicationVersion: 1, types: TYPES });
    await remote.serve('orders', serverHandler('remote').handler, { weight: 5 });
    const endpoint = (await other.stores.descriptors.list()).find((d) => d.nodeId === 'remote')!.endpoints.main!;

    const local = await stack.host({ nodeId: 'local', applicationVersion: 1, types: TYPES });
    await local.serve('orders', serverHandler('local').handler);
    const client = await stack.host({ nodeId: 'client', applicationVersion: 1, types: TYPES });
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
