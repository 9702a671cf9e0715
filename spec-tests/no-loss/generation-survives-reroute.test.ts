/**
 * §12: a message keeps the ObjectGeneration its sender resolved through every re-route, so it is never processed by
 * a re-created object of the same id. Setup through the public API: `x` lives on host a and client c caches its
 * route (generation g1); a shuts down without relocation (cleanup removes x's owner record), and x is created
 * again on host b (the store assigns a higher generation g2). c's next messages still use the cached route: the
 * owner a is gone, so the router re-routes them — and must keep g1, so b rejects them as stale.
 */
import { defineActor, preserveState, RequestError, TerminationOutcome, type FrameworkRuntime } from '../../runtime';
import type { Transport } from '../../transport/types';
import { eventually, makeStack, STACKS, type Stack } from '../support/stack';
import { handleTransport, quietLog, readyTo } from './support';

const { log } = quietLog();

type ProbeMessage = { op: 'tag'; tag: string } | { op: 'where' } | { op: 'log' };
/** Every turn of every Probe, per node: the handler log the test inspects. */
const turns: { node: string; tag: string }[] = [];

const Probe = defineActor<{ tags: string[] }>({
  type: 'Probe',
  relocation: preserveState<{ tags: string[] }>({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString('utf8')) as { tags: string[] } }),
  create: () => ({ tags: [] }),
  receive: (state, message: ProbeMessage, ctx) => {
    switch (message.op) {
      case 'tag':
        turns.push({ node: ctx.nodeId, tag: message.tag });
        state.tags.push(message.tag);
        return ctx.nodeId;
      case 'where':
        return ctx.nodeId;
      case 'log':
        return state.tags;
    }
  },
});

describe.each(STACKS)('ObjectGeneration survives a re-route on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
    turns.length = 0;
  });
  afterEach(async () => {
    await stack.close();
  });

  test('a message addressed to a deleted object is never processed by the re-created object of the same id; a request ends stale-generation', async () => {
    const a = await stack.host({ nodeId: 'a', applicationVersion: 1, types: [Probe], log });
    const b = await stack.host({ nodeId: 'b', applicationVersion: 1, types: [Probe], log });
    const box: { transport?: Transport } = {};
    const c: FrameworkRuntime = await stack.host({ nodeId: 'c', applicationVersion: 1, types: [Probe], log, transport: handleTransport(box) });

    await a.createActor('Probe', 'x');
    const first = await stack.stores.location.get({ kind: 'actor', id: 'x' });
    // c resolves x once: its route cache now names a, generation g1.
    await eventually(async () => (await c.request({ actor: 'x' }, { op: 'where' }, { timeoutMs: 500 }).catch(() => '')) === 'a', 5000, 'c reaches x on a');

    // a shuts down without relocating: its cleanup removes x's owner record (the object is deleted).
    expect((await a.shutdown({ deadlineMs: 5000 })).outcome).toBe(TerminationOutcome.Stopped);
    expect(await stack.stores.location.get({ kind: 'actor', id: 'x' })).toBeUndefined();
    // x is created again under the same id on b, with a new ObjectGeneration.
    await b.createActor('Probe', 'x');
    const second = await stack.stores.location.get({ kind: 'actor', id: 'x' });
    expect(second?.owner.nodeId).toBe('b');
    expect(second!.objectGeneration).toBeGreaterThan(first!.objectGeneration);
    // c no longer has a connection to a (its sends to the cached owner fail and are re-routed).
    await eventually(() => !readyTo(box.transport, 'a'), 5000, 'c lost its connection to a');

    // c still holds the cached route a/g1 for x.
    c.send({ actor: 'x' }, { op: 'tag', tag: 'stale-send' });
    const outcome = await c.request({ actor: 'x' }, { op: 'tag', tag: 'stale-request' }, { timeoutMs: 5000 }).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    // Expected: the request ends stale-generation (§12) …
    expect(outcome).toEqual({ error: expect.any(RequestError) });
    expect((outcome as { error: RequestError }).error.kind).toBe('stale-generation');
    // … and neither message ever reached the re-created object.
    expect(await b.request({ actor: 'x' }, { op: 'log' }, { timeoutMs: 2000 })).toEqual([]);
    expect(turns).toEqual([]);
  }, 30_000);
});
