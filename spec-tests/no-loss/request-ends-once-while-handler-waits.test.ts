/**
 * Spec 05 §15, last paragraph: "An already-accepted request only ends once, via reply, error, timeout, or shutdown.
 * Even while an application callback waits, infrastructure execution keeps proceeding with request completion, peer
 * lifecycle, recovery, and session binding. An observer or monitoring callback doesn't own a claim that blocks
 * maintenance."
 *
 * Host a owns Actor w, whose handler awaits a promise the test never settles before the end (application I/O that
 * hangs), and Actor x. While w's handler waits, with a request from another host c and one of a's own queued behind
 * it, and with an observer that stops pulling and a listener that throws:
 *  (a) Relocate with a short deadline: x moves to t (relocation keeps going around the waiting handler), w cannot
 *      reach its safe point, the operation ends Blocked/DeadlineExceeded and a serves again;
 *  meanwhile a new host n joins and a reaches it (peer lifecycle), and c's requests to x complete on t;
 *  (b) Shutdown with a short deadline: ForceStopped/DeadlineExceeded, and each accepted request ends exactly once —
 *      with a shutdown result, promptly (not by its 60 s timeout) — c's running one and a's queued one alike. When the
 *      handler finally returns, nothing ends a second time.
 */
import {
  RELOCATION_CHANGED,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  RequestError,
  TerminationOutcome,
  TerminationReason,
  type RuntimeStatus,
} from '../../runtime';
import { gate, ran } from '../support/close-types';
import { unitEvents } from '../support/hosts';
import { probeStack, reaches } from '../support/s15-states';
import { eventually, STACKS } from '../support/stack';

const REQUEST_TIMEOUT_MS = 60_000;

describe.each(STACKS)('an accepted request ends once while its handler waits, on %s', (stackName) => {
  const probes = probeStack(stackName);

  test('Relocate and Shutdown proceed around a handler that waits; its request ends exactly once with a shutdown result', async () => {
    // Only t has a's version: it is the relocation target; c and n are other application versions.
    const host = (nodeId: string, applicationVersion = 2) => probes.host(nodeId, applicationVersion);
    const a = await host('a', 1);
    const c = await host('c');
    await host('t', 1);
    await a.createActor('Probe', 'w');
    await a.createActor('Probe', 'x');
    await reaches(c, { actor: 'w' }, 'a');

    // A monitoring observer that stops pulling after the first value, and a listener that throws.
    const observer = a.observe()[Symbol.asyncIterator]();
    const firstSeen: RuntimeStatus = (await observer.next()).value;
    a.on(RELOCATION_CHANGED, () => {
      throw new Error('an observer that throws');
    });
    const units = unitEvents(a);

    // The handler that waits, c's request running in it, and a's own request queued behind it.
    const endings = new Map<string, string[]>();
    const track = (name: string, p: Promise<unknown>) =>
      p.then(
        (v) => void (endings.get(name) ?? endings.set(name, []).get(name)!).push(`reply:${String(v)}`),
        (e: unknown) => void (endings.get(name) ?? endings.set(name, []).get(name)!).push(e instanceof RequestError ? e.kind : String(e)),
      );
    const running = track('c→w', c.request({ actor: 'w' }, { op: 'hold', gate: 'io' }, { timeoutMs: REQUEST_TIMEOUT_MS }));
    await eventually(() => ran.includes('hold:w@a'), 5000, "w's handler waiting");
    const queued = track('a→w', a.request({ actor: 'w' }, { op: 'add' }, { timeoutMs: REQUEST_TIMEOUT_MS }));

    // (a) Relocate: x moves; w never reaches its safe point; the deadline ends the operation.
    const relocation = await a.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 1500 });
    expect(relocation).toEqual({ mode: RelocationMode.PlannedMaintenance, targetApplicationVersion: 1, outcome: RelocationOutcome.Blocked, reason: RelocationReason.DeadlineExceeded });
    expect(units.filter((e) => e.state === 'cutOver').map((e) => e.objects)).toEqual([['a:x']]);
    expect(a.status.state).toBe(firstSeen.state); // Serving again
    await eventually(async () => (await c.request({ actor: 'x' }, { op: 'where' }, { timeoutMs: 1000 }).catch(() => '')) === 't', 5000, 'x answered by t');
    expect((await a.locate({ actor: 'w' }))?.nodeId).toBe('a');

    // Peer lifecycle goes on: a new host joins and a reaches an object on it.
    const n = await host('n');
    await n.createActor('Probe', 'on-n');
    await reaches(a, { actor: 'on-n' }, 'n');
    expect(endings.size).toBe(0); // both accepted requests still wait

    // (b) Shutdown with a short deadline: bounded teardown, and every accepted request gets its one terminal.
    const termination = await a.shutdown({ deadlineMs: 300 });
    expect(termination).toEqual({ outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.DeadlineExceeded });
    await Promise.all([running, queued]);
    expect(Object.fromEntries(endings)).toEqual({ 'c→w': ['shutdown'], 'a→w': ['shutdown'] });

    // The handler returns at last: no second ending, anywhere.
    gate('io').open();
    await eventually(() => ran.includes('held:w@a'), 5000, 'the handler returned');
    expect(await c.request({ actor: 'x' }, { op: 'where' })).toBe('t');
    expect(Object.fromEntries(endings)).toEqual({ 'c→w': ['shutdown'], 'a→w': ['shutdown'] });
    await observer.return?.();
  }, 30_000);
});
