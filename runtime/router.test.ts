/**
 * Router unit tests with fake neighbours (RouterDeps) and a SimulatedClock: the [5/10] delivery rules that do not
 * need a host — per-sender order through re-routes, convergence instead of hop counts, ObjectGeneration through
 * every hop, requests ending at once on connection loss, redirects with the moved-to hint.
 */
import type { NodeRef, OwnerRecord } from '../stores/types';
import type { RuntimeMessage, Transport } from '../transport/types';
import { SimulatedClock } from './clock';
import { decodeValue, encodeValue } from './codec';
import type { Envelope } from './envelope';
import { nodeKey } from './keys';
import { silentLog } from './logger';
import type { ObjectServer } from './objects';
import { Router, type RouterDeps } from './router';

const SELF: NodeRef = { nodeId: 'c', lifecycleGeneration: 1 };
const P: NodeRef = { nodeId: 'p', lifecycleGeneration: 1 };
const Q: NodeRef = { nodeId: 'q', lifecycleGeneration: 1 };
const RESTORE_VALIDITY_MS = 1000;

const record = (owner: NodeRef, objectGeneration = 1): OwnerRecord =>
  ({ kind: 'actor', id: 'x', type: 'T', owner, objectGeneration, authorityGeneration: 1 }) as OwnerRecord;

function setup() {
  const clock = new SimulatedClock();
  const sent: { to: NodeRef; message: RuntimeMessage }[] = [];
  const down = new Set<string>();
  const known = new Set<string>([nodeKey(P), nodeKey(Q)]);
  const owners = new Map<string, OwnerRecord | undefined>();
  let reads = 0;
  const delivered: Envelope[] = [];
  const transport = {
    send: (to: NodeRef, message: RuntimeMessage) => {
      if (down.has(nodeKey(to))) return false;
      sent.push({ to, message });
      return true;
    },
  } as unknown as Transport;
  const deps: RouterDeps = {
    self: SELF,
    clock,
    location: {
      get: async (id: { id: string }) => {
        reads++;
        return owners.get(id.id);
      },
    } as unknown as RouterDeps['location'],
    objects: { get: () => undefined, deliver: (env: Envelope) => void delivered.push(env) } as unknown as ObjectServer,
    transport: () => transport,
    instanceTypeFor: () => undefined,
    canPlaceInstances: () => false,
    placementNode: () => undefined,
    inboundRefusal: () => undefined,
    staging: () => undefined,
    connectWaitMs: 500,
    restoreValidityMs: RESTORE_VALIDITY_MS,
    requestDiscovery: () => undefined,
    recordMovedTerminal: () => undefined,
    isKnownPeer: (peer) => known.has(nodeKey(peer)),
    onControl: () => undefined,
    beforeFollow: () => undefined,
    logger: silentLog,
  };
  const router = new Router(deps);
  const msgsTo = (node: NodeRef) =>
    sent.filter((s) => s.to.nodeId === node.nodeId && s.message.t === 'msg').map((s) => (s.message as unknown as { env: Envelope }).env);
  return { clock, sent, down, known, owners, router, delivered, msgsTo, reads: () => reads };
}

/** Lets pending store reads (promises) settle. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

async function advance(clock: SimulatedClock, ms: number, step = 5): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    clock.increment(step);
    await settle();
  }
}

describe('Router', () => {
  test('a message re-routed from an unreachable owner is not overtaken by later sends to the same object (item 10)', async () => {
    const t = setup();
    t.owners.set('x', record(P));
    t.router.send({ actor: 'x' }, 1);
    await settle();
    expect(t.msgsTo(P).map((e) => decodeValue(e.body))).toEqual([1]);
    // P goes away: the next sends park, then discovery finds P gone and they are re-routed…
    t.down.add(nodeKey(P));
    t.router.send({ actor: 'x' }, 2);
    t.router.send({ actor: 'x' }, 3);
    t.known.delete(nodeKey(P));
    t.owners.set('x', record(Q));
    t.router.revalidateParked();
    // …while the application keeps sending.
    t.router.send({ actor: 'x' }, 4);
    await advance(t.clock, 50);
    t.router.send({ actor: 'x' }, 5);
    await advance(t.clock, 50);
    expect(t.msgsTo(Q).map((e) => decodeValue(e.body))).toEqual([2, 3, 4, 5]);
  });

  test('a bounced sender waits for the owner record to move on instead of counting hops (item 11)', async () => {
    const t = setup();
    t.owners.set('x', record(P));
    t.router.send({ actor: 'x' }, 'a');
    const reply = t.router.request({ actor: 'x' }, 'b', { timeoutMs: 60_000 });
    await settle();
    const [a, b] = t.msgsTo(P);
    // P's Message Follow window ended before Q's CAS landed: P bounces both, the store still names P.
    t.router.onMessage(P, { t: 'bounce', env: a } as unknown as RuntimeMessage);
    t.router.onMessage(P, { t: 'bounce', env: b } as unknown as RuntimeMessage);
    await advance(t.clock, 300);
    expect(t.msgsTo(Q)).toEqual([]);
    expect(t.msgsTo(P)).toHaveLength(2); // nothing re-sent to the node that turned them away
    t.router.send({ actor: 'x' }, 'c'); // waits behind them
    t.owners.set('x', record(Q)); // the CAS lands
    await advance(t.clock, 300);
    expect(t.msgsTo(Q).map((e) => decodeValue(e.body))).toEqual(['a', 'b', 'c']);
    t.router.onMessage(Q, { t: 'reply', id: t.msgsTo(Q)[1]!.id, ok: true, value: encodeValue('done', 'reply') } as unknown as RuntimeMessage);
    await expect(reply).resolves.toBe('done');
  });

  test('convergence is bounded by restoreValidityMs: a request then ends unavailable', async () => {
    const t = setup();
    t.owners.set('x', record(P));
    const reply = t.router.request({ actor: 'x' }, 'r', { timeoutMs: 60_000 });
    await settle();
    t.router.onMessage(P, { t: 'bounce', env: t.msgsTo(P)[0] } as unknown as RuntimeMessage);
    const outcome = reply.catch((error: unknown) => error);
    await advance(t.clock, RESTORE_VALIDITY_MS + 300, 20);
    expect(await outcome).toMatchObject({ kind: 'unavailable' });
  });

  test("a redirect naming where the old owner moved the object goes there directly, in order", async () => {
    const t = setup();
    t.owners.set('x', record(P));
    t.router.send({ actor: 'x' }, 1);
    t.router.send({ actor: 'x' }, 2);
    await settle();
    const [m1, m2] = t.msgsTo(P);
    t.router.onMessage(P, { t: 'bounce', env: m1, moved: Q } as unknown as RuntimeMessage);
    t.router.send({ actor: 'x' }, 3);
    t.router.onMessage(P, { t: 'bounce', env: m2, moved: Q } as unknown as RuntimeMessage);
    await settle();
    expect(t.msgsTo(Q).map((e) => decodeValue(e.body))).toEqual([1, 2, 3]);
    expect(t.reads()).toBe(1); // the first lookup only: the hint needed no store read
  });

  test('ObjectGeneration survives a bounce: a re-created object of the same id never gets the message (item 6)', async () => {
    const t = setup();
    t.owners.set('x', record(P, 3));
    const reply = t.router.request({ actor: 'x' }, 'r', { timeoutMs: 60_000 });
    await settle();
    const env = t.msgsTo(P)[0]!;
    expect(env.gen).toBe(3);
    // Deleted on P and created again on Q as generation 4.
    t.owners.set('x', record(Q, 4));
    t.router.onMessage(P, { t: 'bounce', env } as unknown as RuntimeMessage);
    await advance(t.clock, 50);
    await expect(reply).rejects.toMatchObject({ kind: 'stale-generation' });
    expect(t.msgsTo(Q)).toEqual([]);
    // The cached route went with it: a new send resolves generation 4.
    t.router.send({ actor: 'x' }, 'new');
    await settle();
    expect(t.msgsTo(Q).map((e) => [decodeValue(e.body), e.gen])).toEqual([['new', 4]]);
  });

  test('a message that reached an object of another generation: a request ends stale-generation, a one-way sender drops its route', () => {
    const t = setup();
    const env = { id: 'i1', to: 'a:x', gen: 4, body: encodeValue(1, 'message'), from: P, seq: 1 };
    t.router.rejectStaleGeneration(env as Envelope, 5);
    expect(t.sent.map((s) => s.message)).toEqual([{ t: 'stale', to: 'a:x', gen: 4 }]);
    t.router.rejectStaleGeneration({ ...env, id: 'i2', req: 1 } as Envelope, 5);
    expect(t.sent[1]!.message).toMatchObject({ t: 'reply', id: 'i2', ok: false, kind: 'stale-generation' });
  });

  test('requests that went over a lost connection end unavailable at once; after an announced close they wait (item 8, 12)', async () => {
    const t = setup();
    t.owners.set('x', record(P));
    const lost = t.router.request({ actor: 'x' }, 'r1', { timeoutMs: 60_000 }).catch((e: unknown) => e);
    await settle();
    t.router.onConnectionLost(P, { announced: false, unwritten: [] });
    expect(await lost).toMatchObject({ kind: 'unavailable' });

    const kept = t.router.request({ actor: 'x' }, 'r2', { timeoutMs: 60_000 });
    await settle();
    t.router.onPeerLeaving(P);
    t.router.onConnectionLost(P, { announced: true, unwritten: [] });
    expect(t.router.pendingRequests).toBe(1);
    // The request was forwarded: its answer comes from the new holder.
    const id = t.msgsTo(P).at(-1)!.id;
    t.router.onMessage(Q, { t: 'reply', id, ok: true, value: encodeValue('late', 'reply') } as unknown as RuntimeMessage);
    await expect(kept).resolves.toBe('late');
  });

  test('a Message Follow forward tells the request origin which node holds it now', () => {
    const t = setup();
    t.router.setFollow('a:x', Q);
    t.router.dispatch({ id: 'r9', to: 'a:x', gen: 1, body: encodeValue(0, 'message'), from: P, seq: 7, req: 1 } as Envelope, true);
    expect(t.sent.map((s) => [s.to.nodeId, s.message.t])).toEqual([
      ['q', 'msg'],
      ['p', 'via'],
    ]);
    expect(t.sent[1]!.message).toMatchObject({ id: 'r9', node: Q });
  });

  test("this node's own message whose follow route names a node that is leaving re-reads the owner instead of coming back to the route", async () => {
    const t = setup();
    t.router.setFollow('a:x', Q);
    t.router.onPeerLeaving(Q); // the node the object moved to announced its close within this node's window
    t.owners.set('x', record(P)); // …after the object moved on to P
    t.router.dispatch({ id: 'm1', to: 'a:x', gen: 1, body: encodeValue(0, 'message'), from: SELF, seq: 1 } as Envelope);
    await advance(t.clock, 50);
    expect(t.msgsTo(P).map((e) => e.id)).toEqual(['m1']);
    // The next message goes by the owner record too, not by the route to the node that left.
    t.router.dispatch({ id: 'm2', to: 'a:x', gen: 1, body: encodeValue(0, 'message'), from: SELF, seq: 2 } as Envelope);
    await advance(t.clock, 50);
    expect(t.msgsTo(P).map((e) => e.id)).toEqual(['m1', 'm2']);
  });

  test("this node's own message bounced by the node its follow route names re-reads the owner instead of going back there", async () => {
    const t = setup();
    t.router.setFollow('a:x', Q);
    t.owners.set('x', record(P)); // the object moved on from Q to P, and Q's window ended
    t.router.dispatch({ id: 'm1', to: 'a:x', gen: 1, body: encodeValue(0, 'message'), from: SELF, seq: 1 } as Envelope);
    const [followed] = t.msgsTo(Q);
    expect(followed?.id).toBe('m1');
    t.router.onMessage(Q, { t: 'bounce', env: followed } as unknown as RuntimeMessage); // Q neither hosts nor follows it
    await advance(t.clock, 50);
    expect(t.msgsTo(P).map((e) => e.id)).toEqual(['m1']);
    expect(t.msgsTo(Q).map((e) => e.id)).toEqual(['m1']); // once, not back and forth
  });

  test('after S4 a stale-route message is redirected with the moved-to hint, never dropped in silence', () => {
    const t = setup();
    t.router.setFollow('a:x', Q);
    t.router.removeFollow('a:x');
    t.router.dispatch({ id: 'm1', to: 'a:x', gen: 1, body: encodeValue(0, 'message'), from: P, seq: 1 } as Envelope, true);
    expect(t.sent).toEqual([{ to: P, message: expect.objectContaining({ t: 'bounce', moved: Q }) }]);
    // The hint lasts restoreValidityMs (the new owner's CAS window), then a plain redirect.
    t.clock.increment(RESTORE_VALIDITY_MS + 1);
    t.router.dispatch({ id: 'm2', to: 'a:x', gen: 1, body: encodeValue(0, 'message'), from: P, seq: 2 } as Envelope, true);
    expect(t.sent[1]!.message).toMatchObject({ t: 'bounce' });
    expect(t.sent[1]!.message).not.toHaveProperty('moved');
  });

  test('S4 ends the follow route and leaves only the hint; a later move of the key follows again (one entry per key)', () => {
    const t = setup();
    const R: NodeRef = { nodeId: 'r', lifecycleGeneration: 1 };
    t.known.add(nodeKey(R));
    const inbound = (id: string) => t.router.dispatch({ id, to: 'a:x', gen: 1, body: encodeValue(0, 'message'), from: P, seq: 1 } as Envelope, true);
    t.router.setFollow('a:x', Q);
    t.router.setFollow('a:y', Q);
    expect(t.router.followCount).toBe(2);
    t.router.removeFollow('a:x');
    t.router.removeFollow('a:x'); // a second S4 of the same key changes nothing
    expect(t.router.followCount).toBe(1);
    inbound('m1');
    expect(t.sent.at(-1)).toEqual({ to: P, message: expect.objectContaining({ t: 'bounce', moved: Q }) });
    // The object came back and moved again while the hint lasts: messages follow to the new node, counted once.
    t.router.setFollow('a:x', R);
    t.router.setFollow('a:x', R);
    expect(t.router.followCount).toBe(2);
    inbound('m2');
    expect(t.sent.at(-1)).toEqual({ to: R, message: expect.objectContaining({ t: 'msg' }) });
  });

  test('a moved-to hint expires in its own turn: an earlier move of the same key does not take a later hint away', () => {
    const t = setup();
    const bounceOf = (id: string, to: string) => {
      t.router.dispatch({ id, to, gen: 1, body: encodeValue(0, 'message'), from: P, seq: 1 } as Envelope, true);
      return t.sent[t.sent.length - 1]!.message;
    };
    t.router.setFollow('a:x', Q);
    t.router.removeFollow('a:x'); // hint until RESTORE_VALIDITY_MS
    t.clock.increment(RESTORE_VALIDITY_MS / 2);
    // a:x came back and moved again: its hint now lasts until 1.5 × RESTORE_VALIDITY_MS
    t.router.setFollow('a:x', P);
    t.router.removeFollow('a:x');
    t.clock.increment(RESTORE_VALIDITY_MS / 2 + 1);
    // another unit's S4 drops what expired by now: the first hint of a:x, not its second
    t.router.setFollow('a:y', Q);
    t.router.removeFollow('a:y');
    expect(bounceOf('m1', 'a:x')).toMatchObject({ t: 'bounce', moved: P });
    expect(bounceOf('m2', 'a:y')).toMatchObject({ t: 'bounce', moved: Q });
    t.clock.increment(RESTORE_VALIDITY_MS);
    expect(bounceOf('m3', 'a:x')).not.toHaveProperty('moved');
  });

  test('while a follow route is set, a message that cannot be forwarded is bounced with its target as the hint', () => {
    const t = setup();
    t.router.setFollow('a:x', Q);
    t.router.onPeerLeaving(Q); // it announced its close: nothing more is sent there
    t.router.dispatch({ id: 'm1', to: 'a:x', gen: 1, body: encodeValue(0, 'message'), from: P, seq: 1 } as Envelope, true);
    expect(t.sent[t.sent.length - 1]!.message).toMatchObject({ t: 'bounce', moved: Q });
  });

  test('a peer that announced its close gets nothing more: what waited for it is re-routed', async () => {
    const t = setup();
    t.owners.set('x', record(P));
    t.router.send({ actor: 'x' }, 1);
    await settle();
    t.router.onPeerLeaving(P);
    t.owners.set('x', record(Q));
    t.router.send({ actor: 'x' }, 2);
    t.router.onMessage(P, { t: 'marked', to: 'a:x' } as unknown as RuntimeMessage); // P turned 1 away or passed it on
    await advance(t.clock, 50);
    expect(t.msgsTo(P).map((e) => decodeValue(e.body))).toEqual([1]);
    expect(t.msgsTo(Q).map((e) => decodeValue(e.body))).toEqual([2]);
  });

  test('when the object moves to the sender itself, its new messages wait behind those still on the old route', async () => {
    const t = setup();
    let hosted: { objectGeneration: number } | undefined;
    const objects = { get: () => hosted, deliver: (env: Envelope) => void t.delivered.push(env) };
    const router = new Router({ ...(t.router as unknown as { deps: RouterDeps }).deps, objects: objects as unknown as ObjectServer });
    t.owners.set('x', record(P));
    router.send({ actor: 'x' }, 1);
    router.send({ actor: 'x' }, 2);
    await settle();
    const onTheWay = t.msgsTo(P);
    hosted = { objectGeneration: 1 }; // the unit arrived here and dispatch opened
    router.send({ actor: 'x' }, 3);
    expect(t.delivered).toEqual([]);
    expect(t.sent.at(-1)).toEqual({ to: P, message: { t: 'mark', to: 'a:x', origin: SELF } });
    // P's Message Follow passes 1 and 2 back here, then answers the marker on the same connection.
    for (const env of onTheWay) router.dispatch(env, true);
    router.send({ actor: 'x' }, 4);
    router.onMessage(P, { t: 'marked', to: 'a:x' } as unknown as RuntimeMessage);
    router.send({ actor: 'x' }, 5);
    expect(t.delivered.map((e) => decodeValue(e.body))).toEqual([1, 2, 3, 4, 5]);
    expect(router.idle).toBe(true);
  });

  test('whenIdle resolves only once an accepted message left the router (Shutdown step 3 waits for it)', async () => {
    const t = setup();
    t.owners.set('x', record(P));
    t.router.send({ actor: 'x' }, 1);
    const idle = t.router.whenIdle();
    let done = false;
    void idle.then(() => (done = true));
    await settle();
    expect(done).toBe(false);
    await advance(t.clock, 10);
    expect(done).toBe(true);
  });

  test('messages handed back unwritten by a lost connection go again, first, once the peer is Ready (their requests stay pending)', async () => {
    const t = setup();
    t.owners.set('x', record(P));
    t.router.send({ actor: 'x' }, 1);
    const reply = t.router.request({ actor: 'x' }, 2, { timeoutMs: 60_000 });
    await settle();
    const unwritten = t.sent.splice(0).map((s) => s.message);
    t.down.add(nodeKey(P)); // reconnecting
    t.router.onConnectionLost(P, { announced: false, unwritten });
    t.router.send({ actor: 'x' }, 3);
    expect(t.router.pendingRequests).toBe(1);
    t.down.delete(nodeKey(P));
    t.router.onPeerReady(P);
    expect(t.msgsTo(P).map((e) => decodeValue(e.body))).toEqual([1, 2, 3]);
    t.router.onMessage(P, { t: 'reply', id: t.msgsTo(P)[1]!.id, ok: true, value: encodeValue('ok', 'reply') } as unknown as RuntimeMessage);
    await expect(reply).resolves.toBe('ok');
  });

  test('a sender whose old owner is leaving sends a marker down the old path; new messages wait for the answer from the new holder', async () => {
    const t = setup();
    t.owners.set('x', record(P));
    t.router.send({ actor: 'x' }, 1);
    await settle();
    // P announces its close: its Message Follow may still be carrying 1 to Q.
    t.router.onPeerLeaving(P);
    expect(t.sent.at(-1)).toEqual({ to: P, message: { t: 'mark', to: 'a:x', origin: SELF } });
    t.owners.set('x', record(Q));
    t.router.send({ actor: 'x' }, 2);
    await advance(t.clock, 20);
    expect(t.msgsTo(Q)).toEqual([]); // would overtake 1
    t.router.onMessage(Q, { t: 'marked', to: 'a:x' } as unknown as RuntimeMessage);
    await advance(t.clock, 20);
    expect(t.msgsTo(Q).map((e) => decodeValue(e.body))).toEqual([2]);
  });

  test('Message Follow: what relocation batched for the target (its cutovers) goes before a followed message or marker (§13)', () => {
    const t = setup();
    const deps = (t.router as unknown as { deps: { beforeFollow(to: NodeRef): void } }).deps;
    deps.beforeFollow = (to) => void t.sent.push({ to, message: { t: 'r.cutovers' } });
    t.router.setFollow('a:x', Q);
    t.router.dispatch({ id: 'm1', to: 'a:x', gen: 1, body: encodeValue(0, 'message'), from: P, seq: 1 } as Envelope, true);
    t.router.onMessage(P, { t: 'mark', to: 'a:x', origin: P } as unknown as RuntimeMessage);
    expect(t.sent.map((s) => [s.to.nodeId, s.message.t])).toEqual([
      ['q', 'r.cutovers'],
      ['q', 'msg'],
      ['q', 'r.cutovers'],
      ['q', 'mark'],
    ]);
  });

  test('a node forwards a marker behind the messages it relays, and the holder answers the origin', () => {
    const t = setup();
    t.router.setFollow('a:x', Q);
    t.router.onMessage(P, { t: 'mark', to: 'a:x', origin: P } as unknown as RuntimeMessage);
    expect(t.sent).toEqual([{ to: Q, message: { t: 'mark', to: 'a:x', origin: P } }]);
    t.router.removeFollow('a:x');
    t.router.onMessage(P, { t: 'mark', to: 'a:x', origin: P } as unknown as RuntimeMessage);
    expect(t.sent[1]).toEqual({ to: P, message: { t: 'marked', to: 'a:x' } });
  });

  test('a message sent while a bounce is being re-routed is addressed to the generation last sent to (§12)', async () => {
    const t = setup();
    t.owners.set('x', record(P, 3));
    t.router.send({ actor: 'x' }, 'first');
    await settle();
    t.owners.set('x', record(Q, 4)); // deleted on P, created again on Q
    t.router.onMessage(P, { t: 'bounce', env: t.msgsTo(P)[0] } as unknown as RuntimeMessage);
    const reply = t.router.request({ actor: 'x' }, 'second', { timeoutMs: 60_000 }).catch((error: unknown) => error);
    await advance(t.clock, 50);
    expect(await reply).toMatchObject({ kind: 'stale-generation' });
    expect(t.msgsTo(Q)).toEqual([]);
  });

  test('after the old owner left (its marker answered), a message queued behind a re-read keeps the generation', async () => {
    const t = setup();
    t.owners.set('x', record(P, 3));
    t.router.send({ actor: 'x' }, 'first');
    await settle();
    t.router.onPeerLeaving(P);
    t.router.onMessage(P, { t: 'marked', to: 'a:x' } as unknown as RuntimeMessage);
    t.owners.set('x', record(Q, 4)); // deleted with P's shutdown, created again on Q
    t.router.send({ actor: 'x' }, 'second'); // the cached route fails (P is leaving): re-read with generation 3
    const reply = t.router.request({ actor: 'x' }, 'third', { timeoutMs: 60_000 }).catch((error: unknown) => error);
    await advance(t.clock, 50);
    expect(await reply).toMatchObject({ kind: 'stale-generation' });
    expect(t.msgsTo(Q)).toEqual([]);
  });
});
