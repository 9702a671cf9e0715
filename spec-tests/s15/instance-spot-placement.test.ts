/**
 * Spec 05 §15, row "Instance Spot placement": Relocating — "Excluded from new target claims; existing direct routes
 * are kept until seal."; Relocated — "Excluded from new target claims."; Draining — "Only activations accepted before
 * seal are processed to a terminal state." One test per cell, on both stacks, public API and Location Store records.
 *
 * An activation is an Instance Spot's first message: it claims the Spot's owner record (§10.4). The Draining cell
 * holds such a claim in the store (a gate in front of the host's Location Store claim) across the Shutdown's seal.
 */
import { RelocationOutcome, RequestError, TerminationOutcome, TerminationReason, type FrameworkRuntime } from '../../runtime';
import type { ClaimRequest, LocationStore } from '../../stores/types';
import { Gate } from '../support/close-types';
import { override, storesWith } from '../no-loss/support';
import { holdRelocating, PM, probeStack, reaches, rejection } from '../support/s15-states';
import { eventually, STACKS } from '../support/stack';
import { settle } from '../support/hosts';

describe.each(STACKS)('%s', (stackName) => {
  const { stack, host } = probeStack(stackName);
  const ownerOf = async (id: string) => (await stack.stores.location.get({ kind: 'spot', id }))?.owner.nodeId;

  test('§15 Instance Spot placement in Relocating: a first message from the Relocating host is placed on a Serving node; its existing Instance Spot keeps its direct route until the seal', async () => {
    const source = await host('source');
    const target = await host('target');
    expect(await source.request({ spot: 'existing' }, { op: 'add' })).toBe(1);
    await reaches(target, { spot: 'existing' }, 'source');
    const relocating = await holdRelocating(source, 'batch2');

    // New activation: not claimed by the Relocating source.
    expect(await source.request({ spot: 'fresh' }, { op: 'where' })).toBe('target');
    expect(await ownerOf('fresh')).toBe('target');
    // The existing Instance Spot, not sealed yet (batch 3), is still processed where it is, for every caller.
    expect(await source.request({ spot: 'existing' }, { op: 'add' })).toBe(2);
    expect(await target.request({ spot: 'existing' }, { op: 'where' })).toBe('source');
    expect(await ownerOf('existing')).toBe('source');

    expect((await relocating.release()).outcome).toBe(RelocationOutcome.Relocated);
    await reaches(target, { spot: 'existing' }, 'target');
    expect(await target.request({ spot: 'existing' }, { op: 'get' })).toBe(2);
  }, 30_000);

  test('§15 Instance Spot placement in Relocated: first messages from the Relocated host are placed on Serving nodes, never on it', async () => {
    const source = await host('source');
    const target = await host('target');
    expect(await source.request({ spot: 'existing' }, { op: 'add' })).toBe(1);
    expect((await source.relocate({ mode: PM, deadlineMs: 20_000 })).outcome).toBe(RelocationOutcome.Relocated);
    for (const id of ['fresh-1', 'fresh-2', 'fresh-3']) {
      expect(await source.request({ spot: id }, { op: 'where' })).toBe('target');
      expect(await ownerOf(id)).toBe('target');
    }
    // Its moved Instance Spot is served by the target.
    await eventually(async () => (await ownerOf('existing')) === 'target', 5000, 'target owns existing');
    expect(await target.request({ spot: 'existing' }, { op: 'get' })).toBe(1);
  }, 30_000);

  test('§15 Instance Spot placement in Draining: an activation accepted before the seal is processed to its terminal; a new one ends with a shutdown result and claims nothing', async () => {
    // The draining host's Location Store claims for 'accepted' wait for the test.
    const claim = new Gate();
    const real = stack.stores.location;
    const gated: LocationStore = override(real, {
      claim: async (request: ClaimRequest) => {
        if (request.object.id === 'accepted') await claim.wait();
        return real.claim(request);
      },
    });
    const h: FrameworkRuntime = await host('draining', 1, { stores: storesWith(stack.stores, { location: gated }) });
    const activation = settle(h.request({ spot: 'accepted' }, { op: 'where' }, { timeoutMs: 20_000 }));
    await eventually(() => claim.reached === 1, 5000, 'activation claiming');
    const stopping = settle(h.shutdown({ deadlineMs: 20_000 }));
    await eventually(() => h.status.state === 4, 5000, 'Draining');

    // A new activation after the seal: a shutdown result, nothing claimed.
    const refused = await rejection(h.request({ spot: 'refused' }, { op: 'where' }, { timeoutMs: 5000 }));
    expect(refused).toBeInstanceOf(RequestError);
    expect((refused as RequestError).kind).toBe('shutdown');
    expect(await ownerOf('refused')).toBeUndefined();
    expect(activation.done).toBe(false);

    // The accepted activation completes: the Spot is placed here and processes its first message.
    claim.open();
    await activation.promise;
    expect(activation.value).toBe('draining');
    await stopping.promise;
    expect(stopping.value).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
    // Its records went with the host (§14 cleanup).
    expect(await ownerOf('accepted')).toBeUndefined();
    expect(await stack.stores.relocation.getInstanceCreation('accepted')).toBeUndefined();
  }, 30_000);
});
