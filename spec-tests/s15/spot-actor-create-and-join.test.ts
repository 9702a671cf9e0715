/**
 * Spec 05 §15, row "Spot/Actor create and join": Relocating — "Rejects new owner and membership admission.";
 * Relocated and Draining — "Keeps the same rejection." One test per cell, on both stacks, public API only.
 * (spec-tests/observe-and-admission.test.ts walks the same row through one host's lifecycle; these are the cells.)
 *
 * Each call that would create an owner (createActor, createSpot, createActor into a User Spot) or change membership
 * (join, leave) rejects with AdmissionError naming the state, and nothing changed: no owner record for the new ids,
 * the membership in the Location Store as it was.
 */
import { RelocationOutcome, TerminationOutcome, TerminationReason, type FrameworkRuntime } from '../../runtime';
import { expectAdmissionRejected, holdDraining, holdRelocating, PM, probeStack, reaches } from '../support/s15-states';
import { STACKS } from '../support/stack';

describe.each(STACKS)('%s', (stackName) => {
  const { stack, host } = probeStack(stackName);
  const membership = async (actorId: string) => (await stack.stores.location.get({ kind: 'actor', id: actorId }))?.spot ?? null;

  /** A User Spot with one member, and an Actor in the Entry Spot. */
  async function populate(h: FrameworkRuntime): Promise<void> {
    await h.createSpot('Hall', 'hall');
    await h.createActor('Probe', 'member', { spot: 'hall' });
    await h.createActor('Probe', 'loner');
  }

  async function expectRejected(h: FrameworkRuntime, state: string): Promise<void> {
    await expectAdmissionRejected(state, [
      ['createActor', () => h.createActor('Probe', 'new-actor')],
      ['createSpot', () => h.createSpot('Hall', 'new-hall')],
      ['createActor in a User Spot', () => h.createActor('Probe', 'new-member', { spot: 'hall' })],
      ['join', () => h.join('loner', 'hall')],
      ['leave', () => h.leave('member')],
    ]);
    for (const ref of [{ actor: 'new-actor' }, { spot: 'new-hall' }, { actor: 'new-member' }]) expect(await h.locate(ref)).toBeUndefined();
    expect(await membership('loner')).toBeNull();
    expect(await membership('member')).toBe('hall');
  }

  test('§15 Spot/Actor create and join in Relocating: createActor, createSpot, join and leave are rejected with AdmissionError and nothing is created or changed', async () => {
    const source = await host('source');
    await host('target');
    await populate(source);
    const relocating = await holdRelocating(source, 'batch2');
    await expectRejected(source, 'Relocating');
    expect((await relocating.release()).outcome).toBe(RelocationOutcome.Relocated);
  }, 30_000);

  test('§15 Spot/Actor create and join in Relocated: the same calls keep being rejected; the moved objects keep their membership', async () => {
    const source = await host('source');
    const target = await host('target');
    await populate(source);
    expect((await source.relocate({ mode: PM, deadlineMs: 20_000 })).outcome).toBe(RelocationOutcome.Relocated);
    await reaches(source, { actor: 'member' }, 'target');
    await expectRejected(source, 'Relocated');
    // The target, Serving, admits what the Relocated source refused.
    await reaches(target, { actor: 'loner' }, 'target');
    await target.join('loner', 'hall');
    expect(await membership('loner')).toBe('hall');
  }, 30_000);

  test('§15 Spot/Actor create and join in Draining: the same calls keep being rejected while accepted work drains', async () => {
    const h = await host('draining');
    await populate(h);
    const draining = await holdDraining(h, 'drain');
    await expectRejected(h, 'Draining');
    expect(await draining.release()).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
    expect(await draining.turn).toBe('released');
  }, 30_000);
});
