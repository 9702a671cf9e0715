/**
 * ClientServer as an application uses it, on both stacks (public API only): select-one by weight, Node direct,
 * the errors a caller can get, timeouts, and exactly one terminal per call when the server shuts down mid-handler.
 */
import {
  ArgumentError,
  RelocationOutcome,
  RelocationReason,
  RemoteHandlerError,
  RequestError,
  TerminationOutcome,
  TerminationReason,
} from '../../runtime';
import { outcome } from '../support/hosts';
import { PM } from '../support/s15-states';
import { eventually, STACKS, useStack } from '../support/stack';
import { S, serverHandler, servingPair, spread, TYPES } from './support';

describe.each(STACKS)('%s', (stackName) => {
  const { stack, host } = useStack(stackName, { types: TYPES });

  test('select-one spreads calls by weight among the servers of a channel; the calling host counts when it serves', async () => {
    const a = await host('a');
    const b = await host('b');
    await a.serve('work', serverHandler('a').handler, { weight: 1 });
    await b.serve('work', serverHandler('b').handler, { weight: 3 });
    const c = await host('c');
    const n = 400;
    const counts = await spread(c, 'work', n);
    expect((counts.a ?? 0) + (counts.b ?? 0)).toBe(n);
    // Expected share of b: 0.75 (sd ≈ 0.022 at n = 400); the bounds are more than 6 sd away.
    expect((counts.b ?? 0) / n).toBeGreaterThan(0.6);
    expect((counts.b ?? 0) / n).toBeLessThan(0.9);
    // c starts serving too (weight 4): it now takes about half of its own calls, locally.
    await c.serve('work', serverHandler('c').handler, { weight: 4 });
    const withLocal = await spread(c, 'work', n);
    expect((withLocal.c ?? 0) / n).toBeGreaterThan(0.35);
    expect((withLocal.c ?? 0) / n).toBeLessThan(0.65);
    expect(Object.keys(withLocal).sort()).toEqual(['a', 'b', 'c']);
  });

  test('Node direct goes to exactly the named node; a node that does not serve the channel, an unknown node and a channel nobody serves are clear errors', async () => {
    const { a, c } = await servingPair(host);
    const answers = await Promise.all(Array.from({ length: 40 }, () => c.call('work', null, { node: 'b' })));
    expect(new Set(answers)).toEqual(new Set(['b']));
    expect(await a.call('work', null, { node: 'a' })).toBe('a'); // to itself
    await expect(c.call('other', null, { node: 'a' })).rejects.toMatchObject({ name: 'RequestError', kind: 'not-found', message: expect.stringContaining("does not serve channel 'other'") });
    await expect(c.call('work', null, { node: 'ghost' })).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringContaining("node 'ghost' is not known") });
    await expect(c.call('nobody-serves-this', null)).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringContaining("no server for channel 'nobody-serves-this'") });
  });

  test('handler errors, unencodable requests and replies, and bad arguments', async () => {
    const a = await host('a');
    let ran = 0;
    await a.serve('fail', () => {
      ran++;
      throw new Error('no stock');
    });
    await a.serve('bad-reply', () => ({ callback: () => 1 }));
    await a.serve('echo', (request: unknown) => request);
    const c = await host('c');
    const failed = await c.call('fail', null).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(RemoteHandlerError);
    expect(failed).toMatchObject({ kind: 'handler', message: 'no stock' });
    await expect(c.call('bad-reply', null)).rejects.toMatchObject({ kind: 'handler', message: expect.stringContaining('reply.callback') });
    const unencodable = await c.call('fail', { fn: () => 1 }).catch((e: unknown) => e);
    expect(unencodable).toBeInstanceOf(ArgumentError);
    expect(unencodable).toMatchObject({ field: 'request.fn' });
    expect(ran).toBe(1); // refused at the call: nothing was sent
    const value = { when: new Date(5), tags: new Set(['x']), big: 10n ** 20n, bytes: new Uint8Array([1, 2]) };
    expect(await c.call('echo', value)).toEqual(value);
    await expect(c.call('no spaces allowed', null)).rejects.toMatchObject({ field: 'channel' });
    await expect(c.call('echo', null, { timeoutMs: -1 })).rejects.toMatchObject({ field: 'options.timeoutMs' });
    await expect(a.serve('echo', () => 1)).rejects.toMatchObject({ field: 'channel' });
  });

  test('a call that gets no reply within timeoutMs ends with timeout, once; the handler is told through its signal', async () => {
    const a = await host('a');
    const onA = serverHandler('a');
    await a.serve('slow', onA.handler);
    const c = await host('c');
    const error = await c.call('slow', { hold: 't' }, { timeoutMs: 100 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestError);
    expect(error).toMatchObject({ kind: 'timeout' });
    await eventually(() => onA.signalOf('t')?.aborted === true, 5000, 'handler signal aborted');
    onA.release('t'); // its late reply is dropped by c
    expect(await c.call('slow', null)).toBe('a');
  });

  test('the server shuts down mid-handler: every accepted call ends exactly once with shutdown at the deadline, and a late handler reply changes nothing', async () => {
    const a = await host('a');
    const b = await host('b');
    const onA = serverHandler('a');
    await a.serve('work', onA.handler);
    const c = await host('c');
    const remote = outcome(c.call('work', { hold: 'r' }, { node: 'a', timeoutMs: 20_000 }));
    const local = outcome(a.call('work', { hold: 'l' }, { node: 'a', timeoutMs: 20_000 }));
    await eventually(() => onA.accepted('r') && onA.accepted('l'), 5000, 'both accepted');
    // The handlers ignore their signal: Shutdown waits for them until its deadline, then ends both calls itself.
    const result = await a.shutdown({ deadlineMs: 300 });
    expect(result).toEqual({ outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.DeadlineExceeded });
    await eventually(() => remote.settled > 0, 5000, 'remote call ended');
    expect(remote.settled).toBe(1);
    expect(remote.error).toMatchObject({ kind: 'shutdown' });
    expect(local.settled).toBe(1);
    expect(local.error).toMatchObject({ kind: 'shutdown' });
    expect(onA.signalOf('r')?.aborted).toBe(true);
    onA.release('r');
    onA.release('l');
    // c goes on with the servers that are left; nothing else arrives for the ended calls.
    await b.serve('work', serverHandler('b').handler);
    expect(await c.call('work', null)).toBe('b');
    expect(remote.settled).toBe(1);
    expect(local.settled).toBe(1);
  });

  test('a handler that finishes while its host drains still replies, and Shutdown ends Stopped', async () => {
    const a = await host('a');
    const onA = serverHandler('a');
    await a.serve('work', onA.handler);
    const c = await host('c');
    const call = outcome(c.call('work', { hold: 'd' }, { timeoutMs: 20_000 }));
    await eventually(() => onA.accepted('d'), 5000, 'accepted');
    const stopping = a.shutdown({ deadlineMs: 20_000 });
    expect(a.status.state).toBe(S.Draining);
    onA.release('d', 'drained reply');
    expect(await stopping).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
    expect(call).toEqual({ settled: 1, value: 'drained reply' });
  });

  test('a Relocate that ends Blocked makes the server selectable again', async () => {
    const { a, c } = await servingPair(host);
    await a.createSpot('Signaled', 'gate'); // never signals its safe point: the Relocate runs out of time
    const relocation = a.relocate({ mode: PM, deadlineMs: 300 });
    await eventually(() => a.status.state === S.Relocating, 5000, 'Relocating');
    expect(await spread(c, 'work', 30)).toEqual({ b: 30 });
    expect(await relocation).toMatchObject({ outcome: RelocationOutcome.Blocked, reason: RelocationReason.DeadlineExceeded });
    expect(a.status.state).toBe(S.Serving);
    await eventually(async () => 'a' in (await spread(c, 'work', 30)), 5000, 'a selected again');
  });

  test('a host that no longer runs does not serve: its registration goes with its descriptor', async () => {
    const a = await host('a');
    const registration = await a.serve('work', serverHandler('a').handler);
    const c = await host('c');
    expect(await c.call('work', null)).toBe('a');
    await registration.close();
    expect((await stack.stores.descriptors.list()).find((d) => d.nodeId === 'a')?.components?.clientServer).toBeUndefined();
    await expect(c.call('work', null)).rejects.toMatchObject({ kind: 'unavailable' });
    await a.shutdown();
    await expect(a.serve('work', () => 1)).rejects.toMatchObject({ name: 'AdmissionError', state: 'Stopped' });
    await expect(a.call('work', null)).rejects.toMatchObject({ kind: 'shutdown' });
  });
});
