/**
 * Spec 05 §15, row "Spot/Actor create and join": Relocating — "Rejects new owner and membership admission.";
 * Relocated and Draining — "Keeps the same rejection." One test per cell, on both stacks, public API only.
 * (spec-tests/observe-and-admission.test.ts walks the same row through one host's lifecycle; these are the cells.)
 *
 * Each call that would create an owner (createActor, createSpot, createActor into a User Spot) or change membership
 * (join, leave) rejects with AdmissionError naming the state, and nothing changed: no owner record for the new ids,
 * the membership in the Location Store as it was.
 */
import { AdmissionError, RelocationOutcome, TerminationOutcome, TerminationReason, type FrameworkRuntime } from '../../runtime';
import { quietLog } from '../no-loss/support';
import { PROBE_TYPES, resetProbes } from '../support/close-types';
import { holdDraining, holdRelocating, PM, reaches, rejection } from '../support/s15-states';
import { makeStack, STACKS, type Stack } from '../support/stack';

const { log } = quietLog();

describe.each(STACKS)('%s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    resetProbes();
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    resetProbes();
    await stack.close();
  });

  const host = (nodeId: string) => stack.host({ nodeId, applicationVersion: 1, types: PROBE_TYPES, log });
  const membership = async (actorId: string) => (await stack.stores.location.get({ kind: 'actor', id: actorId }))?.spot ?? null;

  /** A User Spot with one member, and an Actor in the Entry Spot. */
  async function populate(h: FrameworkRuntime): Promise<void> {
    await h.createSpot('Hall', 'hall');
    await h.createActor('Probe', 'member', { spot: 'hall' });
    await h.createActor('Probe', 'loner');
  }

  async function expectRejected(h: FrameworkRuntime, state: string): Promise<void> {
    const calls: [string, () => Promise<void>][] = [
      ['createActor', () => h.createActor('Probe', 'new-actor')],
      ['createSpot', () => h.createSpot('Hall', 'new-hall')],
      ['createActor in a User Spot', () => h.createActor('Probe', 'new-member', { spot: 'hall' })],
      ['join', () => h.join('loner', 'hall')],
      ['leave', () => h.leave('member')],
    ];
    for (const [what, call] of calls) {
      const error = await rejection(call());
      expect([what, error]).toEqual([what, expect.any(AdmissionError)]);
      expect((error as AdmissionError).state).toBe(state);
    }
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
