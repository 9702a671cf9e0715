/**
 * §15 table, row STREAM, one test per cell, on both stacks (the session endpoint is a real ws listener on loopback
 * in both). Public API only: createRuntime({ sessions }), host.sessionEndpoint and zlink/client's connectSession.
 *
 * | Relocating | Excluded from new binding; existing sessions are handled via unit barrier.
 * | Relocated  | Excluded from new binding; infrastructure connection is kept.
 * | Draining   | Doesn't accept new sessions; only pending reply and binding barrier are processed.
 */
import { connectSession, SessionError } from '../../client';
import { defineSpot, FrameworkRuntimeState, preserveState, RelocationMode, RelocationOutcome, TerminationOutcome } from '../../runtime';
import { eventually, makeStack, STACKS, type Stack } from '../support/stack';
import { Chat, chatState, closeRecorders, LOOPBACK, open, openGate, Recorder, sessionsStats } from '../stream/support';

const PM = RelocationMode.PlannedMaintenance;
const S = FrameworkRuntimeState;

/** SpotWide, ApplicationSignaled: its unit (batch 3) keeps the host in Relocating until a { op: 'defer' } turn. */
const Gate = defineSpot<{ n: number }>({
  type: 'Gate',
  kind: 'user',
  executionMode: 'SpotWide',
  readiness: 'ApplicationSignaled',
  relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) }),
  create: () => ({ n: 0 }),
  receive: (state, message: { op: 'defer' | 'count' }, ctx) => {
    if (message.op === 'defer') ctx.relocationReady().defer();
    return ++state.n;
  },
});

/** A new binding through `url` is refused (redirects not followed) with code 'admission', naming the state. */
async function expectBindingRefused(url: string, actor: string, state: string): Promise<void> {
  const error = await connectSession({ url, actor, followRedirects: false, openTimeoutMs: 5000 }).then(
    (session) => {
      void session.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SessionError);
  expect(error).toMatchObject({ code: 'admission' });
  expect((error as Error).message).toContain(state);
  expect((error as Error).message).toContain('no new session binding');
}

describe.each(STACKS)('§15 STREAM (%s)', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    openGate.release();
    await closeRecorders();
    await stack.close();
  });

  test("§15 STREAM in Relocating: a new binding is refused with a clear error, and an open session's frames pass its Actor's unit barrier in order on the same connection", async () => {
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: [Chat, Gate], sessions: { listen: LOOPBACK } });
    const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: [Chat, Gate], sessions: { listen: LOOPBACK } });
    await source.createSpot('Gate', 'g1');
    await source.createActor('Chat', 'c1');
    const client = await open(source.sessionEndpoint!, 'c1', 'r1');
    client.pump(2);
    await client.more(20);

    let relocated: unknown;
    const relocating = source.relocate({ mode: PM, deadlineMs: 20_000 }).then((r) => (relocated = r));
    await eventually(() => source.status.state === S.Relocating, 10_000, 'Relocating');
    // The Actor's unit (batch 2) moves while the Gate (batch 3) holds the host in Relocating: the open session's
    // frames were held at the unit barrier and relayed; the stream continues from the target, same connection.
    await eventually(() => client.echoNodes.includes('target'), 15_000, 'echoes from the Actor on the target');
    expect(source.status.state).toBe(S.Relocating);
    expect(relocated).toBeUndefined();
    await client.more(20);
    expect(client.session.connections).toBe(1);

    // No new binding through the Relocating host's endpoint…
    await expectBindingRefused(source.sessionEndpoint!, 'c1', 'Relocating');
    expect(source.status.state).toBe(S.Relocating);
    // …and a client that follows the endpoint's hint binds at a Serving host instead.
    const redirected = await open(source.sessionEndpoint!, 'c1', 'r2');
    expect(redirected.session.endpoint).toBe(target.sessionEndpoint);

    await source.request({ spot: 'g1' }, { op: 'defer' });
    await relocating;
    expect(relocated).toMatchObject({ outcome: RelocationOutcome.Relocated });
    await client.stop();
    client.expectExactlyOnceInOrder();
    expect(client.echoNodes).toEqual(['source', 'target']);
    expect(client.session.connections).toBe(1);
    expect((await chatState(target, 'c1')).up['r1']).toEqual(client.echoes);
  });

  test('§15 STREAM in Relocated: a new binding is refused, and the connection a client holds to the Relocated host is kept and keeps streaming', async () => {
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: [Chat], sessions: { listen: LOOPBACK } });
    const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: [Chat], sessions: { listen: LOOPBACK } });
    await source.createActor('Chat', 'c1');
    const client = await open(source.sessionEndpoint!, 'c1', 'd1');
    client.pump(2);
    await client.more(20);

    expect(await source.relocate({ mode: PM, deadlineMs: 20_000 })).toMatchObject({ outcome: RelocationOutcome.Relocated });
    expect(source.status.state).toBe(S.Relocated);
    await expectBindingRefused(source.sessionEndpoint!, 'c1', 'Relocated');

    // The infrastructure connection is kept: the same socket carries the stream, now from the Actor on the target.
    const before = client.echoes.length;
    await eventually(() => client.echoNodes.includes('target'), 15_000, 'echoes from the target');
    await client.more(30);
    expect(client.echoes.length).toBeGreaterThan(before + 29);
    expect(source.status.state).toBe(S.Relocated);
    expect(client.session.connections).toBe(1);
    // Two connections were accepted — the client's and the refused binding's — and only the client's is open.
    expect(sessionsStats(source)).toMatchObject({ acceptedConnections: 2, openConnections: 1, sessions: 1 });
    await client.stop();
    client.expectExactlyOnceInOrder();
    expect((await chatState(target, 'c1')).up['d1']).toEqual(client.echoes);
  });

  test('§15 STREAM in Draining: no new session is accepted; a pending binding gets its reply, and every open session moves to a Serving host without loss', async () => {
    const draining = await stack.host({ nodeId: 'draining', applicationVersion: 1, types: [Chat], sessions: { listen: LOOPBACK } });
    const serving = await stack.host({ nodeId: 'serving', applicationVersion: 1, types: [Chat], sessions: { listen: LOOPBACK } });
    await serving.createActor('Chat', 'c1');
    await serving.createActor('Chat', 'slow-1');
    const client = await open(draining.sessionEndpoint!, 'c1', 'n1');
    client.pump(2);
    await client.more(20);

    // A binding accepted before Shutdown whose Actor answers slowly: the pending reply the drain waits for.
    openGate.reset();
    const pendingOpen = connectSession({ url: draining.sessionEndpoint!, actor: 'slow-1', openTimeoutMs: 20_000 });
    await eventually(() => openGate.waiting === 1, 10_000, 'the slow open reached its Actor');

    const stopping = draining.shutdown({ deadlineMs: 20_000 });
    await eventually(() => draining.status.state === S.Draining, 10_000, 'Draining');
    await expectBindingRefused(draining.sessionEndpoint!, 'c1', 'Draining');
    expect(draining.status.state).toBe(S.Draining); // the pending binding holds the drain

    openGate.release();
    const slow = new Recorder(await pendingOpen, 's1');
    // Both sessions were told to move and resumed at the Serving host's endpoint.
    await eventually(
      () => [client, slow].every((r) => r.session.state === 'open' && r.session.endpoint === serving.sessionEndpoint),
      15_000,
      'both sessions resumed at the serving host',
    );
    expect(await stopping).toMatchObject({ outcome: TerminationOutcome.Stopped });
    slow.pump(2);
    await client.more(20);
    await slow.more(20);
    await client.stop();
    await slow.stop();
    client.expectExactlyOnceInOrder();
    slow.expectExactlyOnceInOrder();
    expect(client.session.connections).toBe(2);
    expect(slow.session.connections).toBe(2);
    expect((await chatState(serving, 'c1')).up['n1']).toEqual(client.echoes);
    expect((await chatState(serving, 'slow-1')).up['s1']).toEqual(slow.echoes);
    expect(sessionsStats(draining)).toMatchObject({ openConnections: 0, pendingWrites: 0, sessions: 0 });
  });
});
