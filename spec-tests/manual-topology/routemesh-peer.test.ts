/**
 * Spec 05 §4, manual topology, RouteMesh peer: a host with a registered manual RouteMesh peer is
 * Blocked/ManualTopologyUnsupported even with a Ready target of its version, though the peer was only registered
 * (its endpoint has no listener: no connection ever exists). Nothing changes. Both stacks.
 * (spec-tests/mode-and-target-selection.test.ts uses the same assertion for its §17 item.)
 */
import { type FrameworkRuntime } from '../../runtime';
import { probeStack, reaches } from '../support/s15-states';
import { meshesFor, nowhere, STACKS } from '../support/stack';
import { expectBlockedByManualTopology } from './expect-blocked';

describe.each(STACKS)('manual RouteMesh peer on %s', (stackName) => {
  const probes = probeStack(stackName);

  test('a registered manual RouteMesh peer (never connected) makes Relocate Blocked/ManualTopologyUnsupported; state Serving and admission unchanged', async () => {
    const host = (nodeId: string): Promise<FrameworkRuntime> => probes.host(nodeId, 1, { meshes: meshesFor(stackName, ['main', 'aux']) });
    const source = await host('source');
    const target = await host('target');
    await source.createActor('Probe', 'p');
    await source.createSpot('Hall', 'hall');
    expect(await source.request({ spot: 'shard' }, { op: 'where' })).toBe('source');
    await reaches(target, { actor: 'p' }, 'source'); // a Ready target of the same version exists

    source.registerManualPeer('aux', nowhere(stackName, 'aux'));
    const owned = [{ actor: 'p' }, { spot: 'hall' }, { spot: 'shard' }];
    await expectBlockedByManualTopology(source, owned, { actor: 'Probe' });
    // Registration, not connection: blocked again, and the target never received anything.
    await expectBlockedByManualTopology(source, owned, { actor: 'Probe' });
    expect(await target.request({ actor: 'p' }, { op: 'where' })).toBe('source');
  }, 30_000);
});
