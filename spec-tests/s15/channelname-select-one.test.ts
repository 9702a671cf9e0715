/**
 * Spec 05 §15, row "ChannelName select-one", on both stacks (public API only). Servers `a` and `b` serve the
 * channel `work` (each answers its own nodeId); `c` calls it with select-one (no `node`). Interpretation
 * (docs/concepts.md "ClientServer"): the row is about a host as a selection candidate, and, in Draining, about the
 * calls a host makes itself.
 */
import { RelocationOutcome, RequestError, TerminationOutcome, TerminationReason, type FrameworkRuntime } from '../../runtime';
import { eventually, STACKS, useStack } from '../support/stack';
import { outcome } from '../support/hosts';
import { holdSignaled } from '../support/s15-states';
import { S, servingPair, spread, TYPES, type serverHandler } from '../client-server/support';

describe.each(STACKS)('%s', (stackName) => {
  const { host } = useStack(stackName, { types: TYPES });
  let a: FrameworkRuntime;
  let c: FrameworkRuntime;
  let onA: ReturnType<typeof serverHandler>;
  let onB: ReturnType<typeof serverHandler>;

  beforeEach(async () => {
    // Both servers are selectable while Serving (what each test below takes away from `a`).
    ({ a, c, onA, onB } = await servingPair(host));
  });

  test('§15 ChannelName select-one in Relocating: excluded from new selection, but the existing direct owner route to it is kept', async () => {
    const relocation = await holdSignaled(a);
    const runsBefore = onA.runs();
    expect(await spread(c, 'work', 60)).toEqual({ b: 60 });
    // a's own select-one excludes its local server too.
    expect(await spread(a, 'work', 20)).toEqual({ b: 20 });
    expect(onA.runs()).toBe(runsBefore);
    // The direct route to a (Node direct) still reaches it and runs there.
    expect(await c.call('work', null, { node: 'a' })).toBe('a');
    expect(onA.runs()).toBe(runsBefore + 1);
    expect(a.status.state).toBe(S.Relocating);
    expect((await relocation.release()).outcome).toBe(RelocationOutcome.Relocated);
  });

  test('§15 ChannelName select-one in Relocated: excluded from new selection; its infrastructure connections are kept', async () => {
    const relocation = await holdSignaled(a);
    expect((await relocation.release()).outcome).toBe(RelocationOutcome.Relocated);
    expect(a.status.state).toBe(S.Relocated);
    const runsBefore = onA.runs();
    expect(await spread(c, 'work', 60)).toEqual({ b: 60 });
    expect(onA.runs()).toBe(runsBefore);
    // The connections stay: a still calls out over them, and its own answer (not a lost connection) reaches c.
    expect(await spread(a, 'work', 20)).toEqual({ b: 20 });
    const refused = await c.call('work', null, { node: 'a' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RequestError);
    expect(refused).toMatchObject({ kind: 'unavailable', message: expect.stringContaining("node 'a' is Relocated") });
  });

  test('§15 ChannelName select-one in Draining: closes new admission; an already-submitted call is processed to its terminal', async () => {
    // c submits a call that b holds, then shuts down: Draining waits for the submitted call.
    const submitted = outcome(c.call('work', { hold: 'x' }, { node: 'b', timeoutMs: 20_000 }));
    await eventually(() => onB.accepted('x'), 10_000, 'b accepted the call');
    const stopping = c.shutdown({ deadlineMs: 20_000 });
    expect(c.status.state).toBe(S.Draining);
    const runsBefore = onA.runs() + onB.runs();
    const refused = await c.call('work', null).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RequestError);
    expect(refused).toMatchObject({ kind: 'shutdown' });
    expect(onA.runs() + onB.runs()).toBe(runsBefore);
    expect(submitted.settled).toBe(0);
    onB.release('x', 'reply-x');
    expect(await stopping).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
    expect(submitted).toEqual({ settled: 1, value: 'reply-x' });
  });
});
