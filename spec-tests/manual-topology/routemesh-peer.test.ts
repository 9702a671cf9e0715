/**
 * Spec 05 §4, manual topology, RouteMesh peer: a host with a registered manual RouteMesh peer is
 * Blocked/ManualTopologyUnsupported even with a Ready target of its version, though the peer was only registered
 * (its endpoint has no listener: no connection ever exists). Nothing changes. Both stacks.
 * (spec-tests/mode-and-target-selection.test.ts uses the same assertion for its §17 item.)
 */
import { type FrameworkRuntime, type MeshConfig } from '../../runtime';
import { quietLog } from '../no-loss/support';
import { reaches } from '../support/s15-states';
import { PROBE_TYPES, resetProbes } from '../support/close-types';
import { makeStack, STACKS, type Stack, type StackName } from '../support/stack';
import { expectBlockedByManualTopology } from './expect-blocked';

const { log } = quietLog();

function meshes(stack: StackName, names: string[]): MeshConfig[] {
  return names.map((name) => (stack === 'redis+ws' ? { name, listen: { host: '127.0.0.1', port: 0 } } : { name }));
}

/** An endpoint of the stack's kind where nothing listens. */
const nowhere = (stack: StackName) => (stack === 'redis+ws' ? 'ws://127.0.0.1:9/never' : 'memory://nobody/1/aux');

describe.each(STACKS)('manual RouteMesh peer on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    resetProbes();
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    resetProbes();
    await stack.close();
  });

  test('a registered manual RouteMesh peer (never connected) makes Relocate Blocked/ManualTopologyUnsupported; state Serving and admission unchanged', async () => {
    const host = (nodeId: string): Promise<FrameworkRuntime> =>
      stack.host({ nodeId, applicationVersion: 1, types: PROBE_TYPES, meshes: meshes(stackName, ['main', 'aux']), log });
    const source = await host('source');
    const target = await host('target');
    await source.createActor('Probe', 'p');
    await source.createSpot('Hall', 'hall');
    expect(await source.request({ spot: 'shard' }, { op: 'where' })).toBe('source');
    await reaches(target, { actor: 'p' }, 'source'); // a Ready target of the same version exists

    source.registerManualPeer('aux', nowhere(stackName));
    const owned = [{ actor: 'p' }, { spot: 'hall' }, { spot: 'shard' }];
    await expectBlockedByManualTopology(source, owned, 'Probe');
    // Registration, not connection: blocked again, and the target never received anything.
    await expectBlockedByManualTopology(source, owned, 'Probe');
    expect(await target.request({ actor: 'p' }, { op: 'where' })).toBe('source');
  }, 30_000);
});
