/**
 * Spec 05 §15, row "Node direct application request", on both stacks (public API only): `c` calls the ClientServer
 * channel `work` on node `a` by its RID (`{ node: 'a' }`). Interpretation (docs/concepts.md "ClientServer"): a
 * server's handler is not a relocation unit, so "until unit seal" is the end of Relocating — the host stays the owner
 * of its servers until every unit is detached (Relocated); from then on it has no local stateful owner.
 */
import { RelocationOutcome, RequestError, TerminationOutcome, TerminationReason, type FrameworkRuntime } from '../../runtime';
import { STACKS, useStack } from '../support/stack';
import { holdClosing, holdSignaled } from '../support/s15-states';
import { S, serverHandler, TYPES } from '../client-server/support';

describe.each(STACKS)('%s', (stackName) => {
  const { host } = useStack(stackName, { types: TYPES });
  let a: FrameworkRuntime;
  let c: FrameworkRuntime;
  let onA: ReturnType<typeof serverHandler>;

  beforeEach(async () => {
    a = await host('a');
    onA = serverHandler('a');
    await a.serve('work', onA.handler);
    c = await host('c');
    expect(await c.call('work', null, { node: 'a' })).toBe('a');
  });

  test('§15 Node direct application request in Relocating: the owner node keeps accepting its requests until its units are sealed (then it refuses)', async () => {
    const relocation = await holdSignaled(a);
    const runsBefore = onA.runs();
    for (let i = 0; i < 5; i++) expect(await c.call('work', null, { node: 'a' })).toBe('a');
    expect(onA.runs()).toBe(runsBefore + 5);
    expect(a.status.state).toBe(S.Relocating);
    // The last unit sealed and left: no more.
    expect((await relocation.release()).outcome).toBe(RelocationOutcome.Relocated);
    await expect(c.call('work', null, { node: 'a' })).rejects.toMatchObject({ kind: 'unavailable' });
    expect(onA.runs()).toBe(runsBefore + 5);
  });

  test('§15 Node direct application request in Relocated: no local stateful owner, so a new request is not accepted', async () => {
    const relocation = await holdSignaled(a);
    expect((await relocation.release()).outcome).toBe(RelocationOutcome.Relocated);
    const runsBefore = onA.runs();
    const refused = await c.call('work', null, { node: 'a' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RequestError);
    expect(refused).toMatchObject({ kind: 'unavailable', message: expect.stringContaining('no local stateful owner') });
    expect(onA.runs()).toBe(runsBefore);
    expect(a.status.state).toBe(S.Relocated);
  });

  test('§15 Node direct application request in Draining: a new request ends with a shutdown result', async () => {
    // A Spot's HostShutdown callback holds `a` in Draining after its accepted work drained.
    const stopping = await holdClosing(a);
    expect(a.status.state).toBe(S.Draining);
    const runsBefore = onA.runs();
    const refused = await c.call('work', null, { node: 'a' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RequestError);
    expect(refused).toMatchObject({ kind: 'shutdown' });
    expect(onA.runs()).toBe(runsBefore);
    expect(await stopping.release()).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
  });
});
