/**
 * Spec 05 §15, row "Spot/Actor direct": Relocating — "Keeps processing payload and timers until unit seal.";
 * Relocated — "No local stateful owner, so new payload isn't accepted."; Draining — "Rejects new payload; only
 * already-accepted turns are processed." One test per cell, on both stacks, public API only.
 */
import { RelocationOutcome, RequestError, TerminationOutcome, TerminationReason } from '../../runtime';
import { gate, ran } from '../support/close-types';
import { unitEvents } from '../support/hosts';
import { holdDraining, holdRelocating, PM, probeStack, reaches, rejection } from '../support/s15-states';
import { eventually, STACKS } from '../support/stack';

describe.each(STACKS)('%s', (stackName) => {
  const { host } = probeStack(stackName);
  const ticks = (id: string, node: string) => ran.filter((r) => r === `tick:${id}@${node}`).length;

  test('§15 Spot/Actor direct in Relocating: an unsealed Spot keeps processing messages from every caller and its timers fire on the source until its seal', async () => {
    const source = await host('source');
    const target = await host('target');
    const caller = await host('caller', 2);
    const units = unitEvents(source);
    await source.createSpot('Hall', 'hall');
    expect(await source.request({ spot: 'hall' }, { op: 'tick', name: 'beat', everyMs: 20 })).toBe(true);
    await reaches(caller, { spot: 'hall' }, 'source');

    // Batch 2 holds the operation: the Hall (batch 3) is not sealed.
    const relocating = await holdRelocating(source, 'batch2');
    const ticksAtStart = ticks('hall', 'source');
    for (const from of [source, caller, target]) {
      expect(await from.request({ spot: 'hall' }, { op: 'where' })).toBe('source');
      expect(await from.request({ spot: 'hall' }, { op: 'add' })).toEqual(expect.any(Number));
    }
    expect(await source.request({ spot: 'hall' }, { op: 'get' })).toBe(3);
    await eventually(() => ticks('hall', 'source') >= ticksAtStart + 2, 5000, 'timer ticks on the source while Relocating');
    expect(units.filter((e) => e.objects.includes('s:hall'))).toEqual([]);

    // From its seal on the Hall is the target's: its state and its timer moved with it.
    expect((await relocating.release()).outcome).toBe(RelocationOutcome.Relocated);
    expect(units.filter((e) => e.objects.includes('s:hall')).map((e) => e.state)).toEqual(['sealed', 'cutOver']);
    await reaches(caller, { spot: 'hall' }, 'target');
    expect(await caller.request({ spot: 'hall' }, { op: 'get' })).toBe(3);
    await eventually(() => ticks('hall', 'target') >= 1, 5000, 'timer ticks on the target');
  }, 30_000);

  test('§15 Spot/Actor direct in Relocated: the source owns nothing; payload that still reaches it is processed once by the new owner, never here', async () => {
    const source = await host('source');
    await host('target');
    const caller = await host('caller', 2);
    await source.createActor('Probe', 'p');
    expect(await caller.request({ actor: 'p' }, { op: 'add' })).toBe(1); // caller caches the route to the source
    expect((await source.relocate({ mode: PM, deadlineMs: 20_000 })).outcome).toBe(RelocationOutcome.Relocated);

    // A one-way message and requests still sent to the source (cached route, and the source's own calls): each runs
    // once, on the target, in order.
    caller.send({ actor: 'p' }, { op: 'add' });
    expect(await caller.request({ actor: 'p' }, { op: 'add' })).toBe(3);
    expect(await caller.request({ actor: 'p' }, { op: 'where' })).toBe('target');
    expect(await source.request({ actor: 'p' }, { op: 'where' })).toBe('target');
    expect(await source.request({ actor: 'p' }, { op: 'get' })).toBe(3);
    expect((await source.locate({ actor: 'p' }))?.nodeId).toBe('target');
  }, 30_000);

  test('§15 Spot/Actor direct in Draining: new payload is rejected with a shutdown result; accepted turns and queued work run to their terminal', async () => {
    const h = await host('draining');
    const caller = await host('caller');
    await h.createActor('Probe', 'p');
    await reaches(caller, { actor: 'p' }, 'draining');
    // Accepted before the seal: a turn that waits (on `p`) and a request queued behind it.
    const turn = caller.request({ actor: 'p' }, { op: 'hold', gate: 'accepted' });
    await eventually(() => ran.includes('hold:p@draining'), 5000, 'accepted turn');
    // Queued from the host itself: it is in `p`'s queue when the call returns. A peer's request could still be on the
    // wire when the seal comes on a loaded machine, and then it is new payload (a shutdown result), not queued work.
    const queued = h.request({ actor: 'p' }, { op: 'add' });
    const draining = await holdDraining(h, 'drain');

    // New payload after the seal, from a peer and from the host itself: a shutdown result; a one-way is not run.
    for (const from of [caller, h]) {
      const error = await rejection(from.request({ actor: 'p' }, { op: 'add' }, { timeoutMs: 5000 }));
      expect(error).toBeInstanceOf(RequestError);
      expect((error as RequestError).kind).toBe('shutdown');
    }
    caller.send({ actor: 'p' }, { op: 'hold', gate: 'never-run' });

    // The accepted turn and the queued request finish; then the host stops.
    gate('accepted').open();
    expect(await turn).toBe('released');
    expect(await queued).toBe(1);
    expect(await draining.release()).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
    expect(ran.filter((r) => r.startsWith('hold:p'))).toEqual(['hold:p@draining']);
  }, 30_000);
});
