/**
 * Spec 05 §15, row "Node direct infrastructure control": Relocating — "Keeps accepting relocation, completion,
 * binding, and recovery control."; Relocated — "Keeps accepting monitoring and shutdown control."; Draining — "Only
 * accepts the control needed for the termination barrier, up to the deadline." One test per cell, on both stacks.
 *
 * Infrastructure control is what nodes exchange besides application payload: the relocation protocol (prepare,
 * relay-ready, cutover), replies that complete accepted requests, peer admission (Hello/Admit), descriptors and
 * leases, and the host's own monitoring and shutdown surface. It is observed here through the public API: unit
 * events, diagnostics, status/observe, descriptor records, and which calls between hosts complete. (STREAM session
 * binding control is the STREAM component's: spec-tests for sessions.)
 */
import {
  FrameworkRuntimeState,
  RelocationOutcome,
  RelocationReason,
  TerminationOutcome,
  TerminationReason,
  type RuntimeStatus,
} from '../../runtime';
import { gate, ran } from '../support/close-types';
import { holdDraining, PM, probeStack, reaches, rejection } from '../support/s15-states';
import { settle, unitEvents } from '../support/hosts';
import { eventually, STACKS } from '../support/stack';

const S = FrameworkRuntimeState;

describe.each(STACKS)('%s', (stackName) => {
  const { stack, host } = probeStack(stackName);
  const descriptorState = async (nodeId: string) => (await stack.stores.descriptors.list()).find((d) => d.nodeId === nodeId)?.state;

  test('§15 Node direct infrastructure control in Relocating: relocation replies, cutover completion and a new peer admission are accepted while units are still in flight', async () => {
    const source = await host('source');
    const target = await host('target');
    const sourceUnits = unitEvents(source);
    const targetUnits = unitEvents(target);
    await source.createActor('Probe', 'x'); // batch 2: moves while the host is Relocating
    await source.createSpot('Hall', 'hall'); // batch 3: its unit waits for the running turn
    const hallTurn = settle(source.request({ spot: 'hall' }, { op: 'hold', gate: 'hall' }, { timeoutMs: 60_000 }));
    await eventually(() => ran.includes('hold:hall@source'), 5000, 'hall turn');
    const relocation = settle(source.relocate({ mode: PM, deadlineMs: 20_000 }));

    // Relocation control (prepared, relay-ready replies) and completion (x's cutover, the target's commit and open)
    // were taken by the Relocating source and its target; the Hall's unit was prepared and waits for its safe point.
    await eventually(
      () => targetUnits.some((e) => e.state === 'opened' && e.objects.includes('a:x')) && (source.diagnostics().units.sourceByState['safePoint'] ?? 0) === 1,
      10_000,
      "x moved and the Hall's unit prepared",
    );
    expect(source.status.state).toBe(S.Relocating);
    expect(sourceUnits.filter((e) => e.objects.includes('a:x')).map((e) => e.state)).toEqual(['sealed', 'cutOver']);
    expect(source.diagnostics().operation?.phase).toContain('batch3');
    expect(await source.request({ actor: 'x' }, { op: 'where' })).toBe('target'); // followed: the route is infrastructure

    // Peer admission: a node that starts now is admitted by the Relocating source (both ways).
    const late = await host('late', 2);
    await late.createActor('Probe', 'on-late');
    await reaches(source, { actor: 'on-late' }, 'late');
    await reaches(late, { actor: 'x' }, 'target');
    expect(source.status.state).toBe(S.Relocating);

    gate('hall').open();
    await relocation.promise;
    expect(relocation.value).toMatchObject({ outcome: RelocationOutcome.Relocated });
    expect(hallTurn.value).toBe('released');
  }, 30_000);

  test('§15 Node direct infrastructure control in Relocated: status, observe, diagnostics, descriptor and peer connections keep answering, and Shutdown completes', async () => {
    const source = await host('source');
    await host('target');
    await source.createActor('Probe', 'x');
    const relocated = await source.relocate({ mode: PM, deadlineMs: 20_000 });
    expect(relocated).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });

    // Monitoring control.
    expect(source.status).toMatchObject({ state: S.Relocated, isReady: false, lastRelocation: relocated });
    const observer = source.observe()[Symbol.asyncIterator]();
    const current: RuntimeStatus = (await observer.next()).value;
    expect(current.state).toBe(S.Relocated);
    expect(source.diagnostics()).toMatchObject({ state: 'Relocated', followRoutes: 1 });
    await eventually(async () => (await descriptorState('source')) === S.Relocated, 5000, 'Relocated descriptor');
    // Its peer connections are kept: a node that starts now is admitted, and the source still follows to x.
    const late = await host('late', 2);
    await late.createActor('Probe', 'on-late');
    await reaches(source, { actor: 'on-late' }, 'late');
    expect(await source.request({ actor: 'x' }, { op: 'where' })).toBe('target');

    // Shutdown control.
    const states: number[] = [];
    const watching = (async () => {
      for (let next = await observer.next(); !next.done; next = await observer.next()) states.push(next.value.state);
    })();
    expect(await source.shutdown()).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
    await watching;
    expect(states).toEqual([S.Draining, S.Stopped]);
    expect(await descriptorState('source')).toBeUndefined();
  }, 30_000);

  test('§15 Node direct infrastructure control in Draining: the reply that completes an accepted request is taken; a new relocation to or from it and a new peer admission are not', async () => {
    const draining = await host('draining');
    const remote = await host('remote', 2);
    const other = await host('other'); // the same version: the draining host was its only possible target
    const caller = await host('caller', 2);
    await draining.createActor('Probe', 'w');
    await remote.createActor('Probe', 'r');
    await other.createActor('Probe', 'o');
    await reaches(draining, { actor: 'r' }, 'remote');
    await reaches(caller, { actor: 'w' }, 'draining');
    await reaches(other, { actor: 'w' }, 'draining');

    // Accepted before the seal: w's turn waits for the reply of its own request to r (held on r's side).
    const accepted = settle(caller.request({ actor: 'w' }, { op: 'ask', to: { actor: 'r' }, message: { op: 'hold', gate: 'reply' } }, { timeoutMs: 60_000 }));
    await eventually(() => ran.includes('hold:r@remote'), 5000, "w's request reached r");
    const shutdown = await holdDraining(draining, 'drain');

    // Not accepted while Draining: a new relocation of its own, a relocation of another host's units to it, and a
    // new peer's admission (it never gets an answer from the draining host).
    expect(await draining.relocate({ mode: PM })).toMatchObject({ outcome: RelocationOutcome.Blocked, reason: RelocationReason.ShutdownRequested });
    expect(await other.relocate({ mode: PM, deadlineMs: 500 })).toMatchObject({ outcome: RelocationOutcome.Blocked, reason: RelocationReason.TargetUnavailable });
    expect(other.diagnostics().lastSelection).toMatchObject({ version: 2, serving: 0 });
    expect((await other.locate({ actor: 'o' }))?.nodeId).toBe('other');
    const late = await host('late', 2);
    const unadmitted = await rejection(late.request({ actor: 'w' }, { op: 'where' }, { timeoutMs: 10_000 }));
    expect((unadmitted as { kind?: string }).kind).toBe('unavailable');

    // Taken while Draining: r's reply completes w's turn, and w's reply reaches the caller; then the host stops.
    expect(accepted.done).toBe(false);
    gate('reply').open();
    await accepted.promise;
    expect(accepted.value).toBe('released');
    expect(await shutdown.release()).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
  }, 30_000);
});
