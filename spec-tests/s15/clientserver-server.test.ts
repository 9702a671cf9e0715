/**
 * Spec 05 §15, row "ClientServer server", on both stacks (public API only): servers `a` and `b` serve `work`; `c`
 * has a call `held` accepted by a's handler (it waits until the test releases it) when `a` changes state. Each cell
 * shows both halves: what `a` no longer admits, and that the accepted handler's reply still reaches `c`.
 */
import { RelocationOutcome, RequestError, TerminationOutcome, TerminationReason, type FrameworkRuntime } from '../../runtime';
import { eventually, STACKS, useStack } from '../support/stack';
import { outcome } from '../support/hosts';
import { holdSignaled } from '../support/s15-states';
import { S, servingPair, spread, TYPES, type serverHandler } from '../client-server/support';

describe.each(STACKS)('%s', (stackName) => {
  let a: FrameworkRuntime;
  let c: FrameworkRuntime;
  let onA: ReturnType<typeof serverHandler>;
  let held: ReturnType<typeof outcome<unknown>>;
  // The held handler is let go before the hosts stop.
  const { host } = useStack(stackName, { types: TYPES }, () => onA?.release('held'));

  beforeEach(async () => {
    ({ a, c, onA } = await servingPair(host));
    held = outcome(c.call('work', { hold: 'held' }, { node: 'a', timeoutMs: 20_000 }));
    await eventually(() => onA.accepted('held'), 10_000, 'a accepted the held call');
  });

  test('§15 ClientServer server in Relocating: excluded from new selection; its accepted handler and reply route are kept', async () => {
    const relocation = await holdSignaled(a);
    const runsBefore = onA.runs();
    expect(await spread(c, 'work', 60)).toEqual({ b: 60 });
    expect(onA.runs()).toBe(runsBefore);
    expect(held.settled).toBe(0);
    expect(onA.signalOf('held')?.aborted).toBe(false);
    onA.release('held', 'reply while relocating');
    await eventually(() => held.settled > 0, 10_000, 'held reply');
    expect(held).toEqual({ settled: 1, value: 'reply while relocating' });
    expect(a.status.state).toBe(S.Relocating);
    expect((await relocation.release()).outcome).toBe(RelocationOutcome.Relocated);
  });

  test('§15 ClientServer server in Relocated: its service connection is kept (the accepted reply arrives) but it is excluded from new selection', async () => {
    const relocation = await holdSignaled(a);
    expect((await relocation.release()).outcome).toBe(RelocationOutcome.Relocated);
    const runsBefore = onA.runs();
    expect(await spread(c, 'work', 60)).toEqual({ b: 60 });
    expect(onA.runs()).toBe(runsBefore);
    expect(held.settled).toBe(0);
    onA.release('held', 'reply after relocated');
    await eventually(() => held.settled > 0, 10_000, 'held reply');
    expect(held).toEqual({ settled: 1, value: 'reply after relocated' });
    expect(a.status.state).toBe(S.Relocated);
  });

  test('§15 ClientServer server in Draining: handler admission is closed; only the reply route of the accepted request is kept', async () => {
    // Shutdown drains the accepted handler: `a` stays Draining until it replies.
    const stopping = a.shutdown({ deadlineMs: 20_000 });
    expect(a.status.state).toBe(S.Draining);
    const runsBefore = onA.runs();
    const refused = await c.call('work', null, { node: 'a' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RequestError);
    expect(refused).toMatchObject({ kind: 'shutdown' });
    expect(await spread(c, 'work', 30)).toEqual({ b: 30 });
    expect(onA.runs()).toBe(runsBefore);
    expect(a.status.state).toBe(S.Draining);
    onA.release('held', 'last reply');
    expect(await stopping).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
    expect(held).toEqual({ settled: 1, value: 'last reply' });
  });
});
