/**
 * Binding a session (both stacks): the endpoint's authenticate hook (refusal, identity), the binding errors a client
 * sees (refused, not-found, unreachable, bad options), and an Actor ending the session after its last frames.
 */
import { ArgumentError, connectSession, SessionError } from '../../client';
import { defineActor, recreateOnRelocation } from '../../runtime';
import { eventually, makeStack, STACKS, type Stack } from '../support/stack';
import { Chat, closeRecorders, LOOPBACK, open } from './support';

/** Tells each client who it is, then ends the session when asked to, after a last frame. */
const Greeter = defineActor<object>({
  type: 'Greeter',
  relocation: recreateOnRelocation(),
  create: () => ({}),
  receive: () => undefined,
  onSession: (_s, event) => {
    if (event.type === 'open') event.session.send({ hello: event.session.identity });
    if (event.type === 'frame' && event.frame === 'bye') {
      event.session.send('last');
      event.session.close('done');
    }
  },
});
const NoSessions = defineActor<object>({ type: 'NoSessions', relocation: recreateOnRelocation(), create: () => ({}), receive: () => undefined });

const rejection = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as SessionError);

describe.each(STACKS)('binding a STREAM session (%s)', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await closeRecorders();
    await stack.close();
  });

  test("authenticate refuses with 401 or admits with an identity the Actor reads; the Actor's close ends the session after its last frame", async () => {
    const host = await stack.host({
      nodeId: 'gate',
      applicationVersion: 1,
      types: [Greeter, NoSessions, Chat],
      sessions: {
        listen: LOOPBACK,
        authenticate: async ({ url, headers, remoteAddress }) => {
          const token = new URL(url, 'ws://x').searchParams.get('auth');
          if (token !== 'secret' || !headers.host || !remoteAddress) return false;
          return { user: 'ada', since: new Date(0) };
        },
      },
    });
    await host.createActor('Greeter', 'g1');
    const url = host.sessionEndpoint!;
    expect(url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/$/);

    expect(await rejection(connectSession({ url, actor: 'g1' }))).toMatchObject({ code: 'unauthorized' });
    expect(await rejection(connectSession({ url, actor: 'g1', auth: 'wrong' }))).toMatchObject({ code: 'unauthorized' });

    const session = await connectSession({ url, actor: 'g1', auth: 'secret' });
    const frames: unknown[] = [];
    session.on('frame', (f) => frames.push(f));
    await eventually(() => frames.length === 1, 5000, 'greeting');
    expect(frames[0]).toEqual({ hello: { user: 'ada', since: new Date(0) } });
    session.send('bye');
    expect(await session.closed).toEqual({ code: 'closed', reason: 'done' });
    expect(frames).toEqual([{ hello: { user: 'ada', since: new Date(0) } }, 'last']);
    expect(() => session.send('after')).toThrow(SessionError);

    // Binding errors.
    await host.createActor('NoSessions', 'quiet');
    const refused = await rejection(connectSession({ url, actor: 'quiet', auth: 'secret' }));
    expect(refused).toMatchObject({ code: 'refused', message: expect.stringContaining('onSession') });
    expect(await rejection(connectSession({ url, actor: 'nobody', auth: 'secret' }))).toMatchObject({ code: 'not-found' });
  });

  test('a client with several endpoints skips one that is down; bad options throw ArgumentError naming the field', async () => {
    const host = await stack.host({ nodeId: 'up', applicationVersion: 1, types: [Chat], sessions: { listen: LOOPBACK } });
    await host.createActor('Chat', 'c1');
    const down = 'ws://127.0.0.1:9/'; // discard port: nothing listens
    const client = await open([down, host.sessionEndpoint!], 'c1', 'm1');
    expect(client.session.endpoint).toBe(host.sessionEndpoint);
    expect(client.session.connections).toBe(2);
    client.pump(2);
    await client.more(10);
    await client.stop();
    client.expectExactlyOnceInOrder();
    expect(await rejection(connectSession({ url: down, actor: 'c1', openTimeoutMs: 2000 }))).toMatchObject({ code: 'unavailable' });

    await expect(connectSession({ actor: 'c1' } as never)).rejects.toBeInstanceOf(ArgumentError);
    await expect(connectSession({ url: 'http://x/', actor: 'c1' })).rejects.toMatchObject({ field: 'url' });
    await expect(connectSession({ url: host.sessionEndpoint!, actor: '' })).rejects.toMatchObject({ field: 'actor' });
    await expect(connectSession({ url: host.sessionEndpoint!, actor: 'c1', retries: 3 } as never)).rejects.toMatchObject({ field: 'retries' });
    expect(() => client.session.send(() => 1)).toThrow(ArgumentError);
  });
});
