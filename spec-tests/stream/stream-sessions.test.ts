/**
 * STREAM sessions (§12 "A session connected to an Actor": the physical connection is kept; DESIGN.md "Components"),
 * on both stacks — the session endpoint is a real ws listener on loopback in both:
 *
 * 1. A client streams to an Actor and the Actor streams back (echoes and its own timer ticks) while the Actor's host
 *    makes a RollingUpdate: the client keeps its one physical connection, and every frame in both directions arrives
 *    exactly once and in order, the later ones from the new owner.
 * 2. The session owner host itself relocates (its Actor moves, the client's connection is kept) and then shuts down:
 *    the client is told to move, resumes at another host's endpoint, and again nothing is lost or duplicated.
 */
import { defineSpot, FrameworkRuntimeState, preserveState, RelocationMode, RelocationOutcome, TerminationOutcome } from '../../runtime';
import { makeStack, STACKS, eventually, type Stack } from '../support/stack';
import { Chat, chatState, closeRecorders, LOOPBACK, open, sessionsStats } from './support';

/** A SpotWide User Spot: it and its member Actors move as one unit (§10.3). */
const Room = defineSpot<{ n: number }>({
  type: 'Room',
  kind: 'user',
  executionMode: 'SpotWide',
  relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) }),
  create: () => ({ n: 0 }),
  receive: (state) => ++state.n,
});

describe.each(STACKS)('STREAM sessions (%s)', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await closeRecorders();
    await stack.close();
  });

  test("a client keeps its physical connection through a RollingUpdate of its Actor's host; every frame both ways arrives exactly once and in order", async () => {
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: [Chat] });
    const target = await stack.host({ nodeId: 'target', applicationVersion: 2, types: [Chat] });
    const owner = await stack.host({ nodeId: 'owner', applicationVersion: 1, types: [Chat], sessions: { listen: LOOPBACK } });
    await source.createActor('Chat', 'chat-1');

    const client = await open(owner.sessionEndpoint!, 'chat-1', 'c1');
    client.pump(2);
    await client.more(30);
    expect(client.echoNodes).toEqual(['source']);

    const result = await source.relocate({ mode: RelocationMode.RollingUpdate, targetApplicationVersion: 2, deadlineMs: 20_000 });
    expect(result.outcome).toBe(RelocationOutcome.Relocated);
    // (Relocated does not wait for the target's owner CAS, §13: the record names the target soon after.)
    await eventually(async () => (await target.locate({ actor: 'chat-1' }))?.nodeId === 'target', 10_000, 'owner record names the target');
    // The stream goes on from the new owner, on the same connection.
    await eventually(() => client.echoNodes.includes('target') && client.tickNodes.has('target'), 15_000, 'frames from the new owner');
    await client.more(30);
    await client.stop();

    client.expectExactlyOnceInOrder();
    expect(client.echoNodes).toEqual(['source', 'target']);
    expect(client.ticks.length).toBeGreaterThan(10);
    expect(client.session.connections).toBe(1);
    expect(client.session.state).toBe('open');
    expect(sessionsStats(owner)).toMatchObject({ acceptedConnections: 1, openConnections: 1, sessions: 1 });
    // The Actor got every client frame once, in order, across the move.
    const state = await chatState(target, 'chat-1');
    expect(state.up['c1']).toEqual(Array.from({ length: client.sent }, (_, i) => i + 1));
    expect(state.nodes).toEqual(['source', 'target']);
    expect(sessionsStats(target).bindings).toBe(1);
    await client.session.close();
  });

  test('the session owner relocates and shuts down: the client resumes at another host with nothing lost or duplicated', async () => {
    const owner = await stack.host({ nodeId: 'owner', applicationVersion: 1, types: [Chat], sessions: { listen: LOOPBACK } });
    const next = await stack.host({ nodeId: 'next', applicationVersion: 2, types: [Chat], sessions: { listen: LOOPBACK } });
    // The Actor lives on the session owner itself.
    await owner.createActor('Chat', 'chat-2');
    const client = await open(owner.sessionEndpoint!, 'chat-2', 'c2');
    client.pump(2);
    await client.more(30);

    const result = await owner.relocate({ mode: RelocationMode.RollingUpdate, targetApplicationVersion: 2, deadlineMs: 20_000 });
    expect(result.outcome).toBe(RelocationOutcome.Relocated);
    await eventually(() => client.echoNodes.includes('next'), 15_000, 'echoes from the new owner of the Actor');
    // Relocated: the session owner's infrastructure (and the client's connection) is kept.
    expect(owner.status.state).toBe(FrameworkRuntimeState.Relocated);
    await client.more(20);
    expect(client.session.connections).toBe(1);

    // Shutdown: the client is told to move and resumes at the other host's endpoint (from the move hint).
    const stopped = await owner.shutdown({ deadlineMs: 20_000 });
    expect(stopped.outcome).toBe(TerminationOutcome.Stopped);
    await eventually(() => client.session.state === 'open' && client.session.endpoint === next.sessionEndpoint, 15_000, 'resumed at the next host');
    await client.more(30);
    await client.stop();

    client.expectExactlyOnceInOrder();
    expect(client.session.connections).toBe(2);
    expect(sessionsStats(owner)).toMatchObject({ openConnections: 0, pendingWrites: 0, sessions: 0 });
    expect(sessionsStats(next)).toMatchObject({ sessions: 1, openConnections: 1 });
    const state = await chatState(next, 'chat-2');
    expect(state.up['c2']).toEqual(Array.from({ length: client.sent }, (_, i) => i + 1));
    await client.session.close();
    expect((await client.session.closed).code).toBe('closed');
  });

  test('§12: an Actor created again under the same id is a new ObjectGeneration: the old session ends, its frames never reach the new Actor, and the application rebinds', async () => {
    const first = await stack.host({ nodeId: 'first', applicationVersion: 1, types: [Chat] });
    const owner = await stack.host({ nodeId: 'owner', applicationVersion: 1, types: [Chat], sessions: { listen: LOOPBACK } });
    await first.createActor('Chat', 'chat-3');
    const client = await open(owner.sessionEndpoint!, 'chat-3', 'old');
    client.pump(2);
    await client.more(10);
    await client.stop();
    client.expectExactlyOnceInOrder();

    // Its host stops without relocating it: the Actor is gone; then one of the same id is created elsewhere.
    await first.shutdown({ deadlineMs: 10_000 });
    const second = await stack.host({ nodeId: 'second', applicationVersion: 1, types: [Chat] });
    await second.createActor('Chat', 'chat-3');
    // Whatever the old session still sends is not the new Actor's: it ends (the Actor it was bound to is gone).
    try {
      client.session.send({ tag: 'old', n: client.sent + 1 });
    } catch {
      // already closed: the session owner noticed the Actor's host leave first
    }
    const closed = await client.session.closed;
    expect(['stale-generation', 'not-found']).toContain(closed.code);
    expect((await chatState(second, 'chat-3')).up).toEqual({});

    // The application binds again: a new session to the new Actor.
    const rebound = await open(owner.sessionEndpoint!, 'chat-3', 'new');
    rebound.pump(2);
    await rebound.more(10);
    await rebound.stop();
    rebound.expectExactlyOnceInOrder();
    expect(rebound.echoNodes).toEqual(['second']);
    expect((await chatState(second, 'chat-3')).up).toEqual({ new: rebound.echoes });
  });

  test('sessions bound to the member Actors of a SpotWide User Spot move with the aggregate, each exactly once and in order', async () => {
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: [Chat, Room], sessions: { listen: LOOPBACK } });
    const target = await stack.host({ nodeId: 'target', applicationVersion: 1, types: [Chat, Room], sessions: { listen: LOOPBACK } });
    await source.createSpot('Room', 'room-1');
    await source.createActor('Chat', 'm1', { spot: 'room-1' });
    await source.createActor('Chat', 'm2', { spot: 'room-1' });
    const one = await open(source.sessionEndpoint!, 'm1', 'one');
    const two = await open(target.sessionEndpoint!, 'm2', 'two');
    one.pump(2);
    two.pump(3);
    await Promise.all([one.more(20), two.more(20)]);
    expect(await source.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 20_000 })).toMatchObject({ outcome: RelocationOutcome.Relocated });
    await eventually(() => one.echoNodes.includes('target') && two.echoNodes.includes('target'), 15_000, 'both members answer from the target');
    await Promise.all([one.more(20), two.more(20)]);
    await Promise.all([one.stop(), two.stop()]);
    for (const r of [one, two]) {
      r.expectExactlyOnceInOrder();
      expect(r.echoNodes).toEqual(['source', 'target']);
      expect(r.session.connections).toBe(1);
    }
    expect((await chatState(target, 'm1')).up['one']).toEqual(one.echoes);
    expect((await chatState(target, 'm2')).up['two']).toEqual(two.echoes);
    expect(sessionsStats(target).bindings).toBe(2);
  });
});
