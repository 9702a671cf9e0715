/**
 * The session owner on fake ports (SimulatedClock): requests to the Actor are scripted, one-way envelopes and what
 * the client link receives are recorded. Proves the sequencing: downstream put in order and deduplicated whatever
 * node sends it, a gap asking for a resend, upstream go-back-N after a gap reply, coalesced acknowledgements, the
 * seal timeout and its route update (command 44), §12 generations, resume and §15 Draining.
 */
import { SimulatedClock } from '../../clock';
import { decodeValue, encodeValue } from '../../codec';
import { RequestError } from '../../errors';
import { silentLog } from '../../logger';
import { FrameworkRuntimeState } from '../../../vocabulary';
import { ACTOR_ACK_MS, CLIENT_ACK_MS, GAP_MS, SessionOwner, type ClientLink, type ConnectionHandlers } from './owner';
import { decodeSessionEnvelope, SESSION_MESSAGE, type SessionEnvelope, type SessionReply } from './protocol';
import { encodeWire, type ClientMessage, type ServerMessage } from './wire';

const SELF = { nodeId: 'owner', lifecycleGeneration: 1 };
const OLD = { nodeId: 'old', lifecycleGeneration: 1 };
const NEW = { nodeId: 'new', lifecycleGeneration: 1 };
const SEAL_MS = 10_000;

const flush = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

interface PendingRequest {
  body: SessionEnvelope;
  gen: number;
  resolve(reply: SessionReply): void;
  reject(error: Error): void;
}

/** A SimulatedClock that also knows which of its timers are still pending. */
function countingClock() {
  const inner = new SimulatedClock();
  const pending = new Set<unknown>();
  const clock = {
    now: () => inner.now(),
    setTimeout: (fn: () => void, ms: number) => {
      const handle: unknown = inner.setTimeout(() => {
        pending.delete(handle);
        fn();
      }, ms);
      pending.add(handle);
      return handle;
    },
    clearTimeout: (handle: unknown) => {
      pending.delete(handle);
      inner.clearTimeout(handle as never);
    },
    increment: (ms: number) => inner.increment(ms),
    pending,
  };
  return clock;
}

function setup() {
  const clock = countingClock();
  let state: FrameworkRuntimeState = FrameworkRuntimeState.Serving;
  const requests: PendingRequest[] = [];
  const posts: SessionEnvelope[] = [];
  const owner = new SessionOwner({
    self: SELF,
    clock,
    logger: silentLog,
    state: () => state,
    request: (_actor, body, gen) =>
      new Promise((resolve, reject) => {
        requests.push({
          body: decodeSessionEnvelope(body)!,
          gen,
          // The router decodes replies with the runtime codec: the same round trip here.
          resolve: (reply) => resolve(decodeValue(encodeValue(reply, 'reply'))),
          reject,
        });
      }),
    post: (_actor, body) => void posts.push(decodeSessionEnvelope(body)!),
    otherEndpoints: () => ['ws://other:1/'],
    sealTimeoutMs: SEAL_MS,
    resumeWindowMs: 30_000,
  });
  const connect = () => {
    const received: ServerMessage[] = [];
    const closes: number[] = [];
    const link: ClientLink = { send: (m) => void received.push(m), close: (code) => void closes.push(code), identity: undefined };
    const handlers: ConnectionHandlers = owner.accept(link);
    const send = (m: ClientMessage) => handlers.onMessage(encodeWire(m));
    const frames = () => received.filter((m): m is Extract<ServerMessage, { t: 'f' }> => m.t === 'f').map((m) => decodeValue(m.d));
    return { received, closes, handlers, send, frames };
  };
  /** A client with an open session bound to generation 1 of actor 'a1'. */
  const opened = async () => {
    const client = connect();
    client.send({ t: 'open', v: 1, actor: 'a1' });
    const open = requests.shift()!;
    expect(open.body).toMatchObject({ k: 'open', owner: SELF });
    open.resolve({ gen: 1, up: 0, node: OLD });
    await flush();
    const sid = (client.received[0] as { sid: string }).sid;
    expect(client.received[0]).toEqual({ t: 'opened', sid, gen: 1 });
    return { ...client, sid };
  };
  const down = (sid: string, s: number, values: unknown[], gen = 1, from = OLD) =>
    owner.onNodeMessage(from, { t: SESSION_MESSAGE.down, sid, gen, s, d: values.map((v) => encodeValue(v, 'frame')) });
  return { clock, owner, requests, posts, connect, opened, down, setState: (s: FrameworkRuntimeState) => (state = s) };
}

test('downstream frames from the old and the new owner reach the client once and in order; a lasting gap asks for a resend', async () => {
  const t = setup();
  const c = await t.opened();
  // After a move the new owner's frames (3, 4) overtake the old owner's last one (2).
  t.down(c.sid, 1, ['d1']);
  t.down(c.sid, 3, ['d3', 'd4'], 1, NEW);
  expect(c.frames()).toEqual(['d1']);
  t.clock.increment(GAP_MS);
  expect(t.posts).toContainEqual({ k: 'resend', sid: c.sid, from: 1 });
  t.down(c.sid, 2, ['d2'], 1, OLD);
  t.down(c.sid, 1, ['d1', 'd2', 'd3'], 1, NEW); // the resend: all duplicates
  expect(c.frames()).toEqual(['d1', 'd2', 'd3', 'd4']);
  // §12: frames of another ObjectGeneration are not this session's.
  t.down(c.sid, 5, ['from a re-created actor'], 2, NEW);
  expect(c.frames()).toEqual(['d1', 'd2', 'd3', 'd4']);
});

test("upstream: a reply below the frame (a gap at the Actor) sends every unacknowledged frame again, in order; acknowledgements reach the client coalesced", async () => {
  const t = setup();
  const c = await t.opened();
  for (let s = 1; s <= 3; s++) c.send({ t: 'f', s, d: encodeValue(`u${s}`, 'frame') });
  expect(t.requests.map((r) => [r.body.k, (r.body as { s: number }).s, r.gen])).toEqual([
    ['f', 1, 1],
    ['f', 2, 1],
    ['f', 3, 1],
  ]);
  const [r1, r2, r3] = t.requests.splice(0);
  r1!.resolve({ up: 1 });
  r2!.reject(new RequestError('unavailable', 'connection lost')); // frame 2 lost on the way
  r3!.resolve({ up: 1 }); // so the Actor did not take 3 either
  await flush();
  t.clock.increment(CLIENT_ACK_MS);
  expect(c.received.filter((m) => m.t === 'a')).toEqual([{ t: 'a', u: 1 }]);
  t.clock.increment(1000);
  // One resend round: 2 and 3, in order (never 1 again).
  const round = t.requests.splice(0);
  expect(round.map((r) => (r.body as { s: number }).s)).toEqual([2, 3]);
  round[0]!.resolve({ up: 2 });
  round[1]!.resolve({ up: 3 });
  await flush();
  t.clock.increment(CLIENT_ACK_MS);
  expect(c.received.filter((m) => m.t === 'a').at(-1)).toEqual({ t: 'a', u: 3 });
  // A frame the client sends again (after its own reconnect logic) is not forwarded twice.
  c.send({ t: 'f', s: 3, d: encodeValue('u3', 'frame') });
  expect(t.requests.splice(0).map((r) => (r.body as { s: number }).s)).toEqual([]);
});

test("the client's downstream acknowledgement rides on the next frame, or goes alone after a short delay", async () => {
  const t = setup();
  const c = await t.opened();
  t.down(c.sid, 1, ['d1', 'd2']);
  c.send({ t: 'a', d: 2 });
  c.send({ t: 'f', s: 1, d: encodeValue('u1', 'frame') });
  expect(t.requests.at(-1)!.body).toMatchObject({ k: 'f', s: 1, da: 2 });
  t.clock.increment(ACTOR_ACK_MS);
  expect(t.posts.filter((p) => p.k === 'ack')).toEqual([]); // already carried
  t.down(c.sid, 3, ['d3']);
  c.send({ t: 'a', d: 3 });
  t.clock.increment(ACTOR_ACK_MS);
  expect(t.posts.filter((p) => p.k === 'ack')).toEqual([{ k: 'ack', sid: c.sid, da: 3 }]);
  // An acknowledgement of frames never delivered is ignored.
  c.send({ t: 'a', d: 99 });
  t.clock.increment(ACTOR_ACK_MS);
  expect(t.posts.filter((p) => p.k === 'ack')).toHaveLength(1);
});

test('a sealed session waits for its route update (command 44); without one it ends at the seal timeout', async () => {
  const t = setup();
  const a = await t.opened();
  const b = await t.opened();
  t.owner.onNodeMessage(OLD, { t: SESSION_MESSAGE.seal, sid: a.sid, e: 1, ms: SEAL_MS });
  t.owner.onNodeMessage(OLD, { t: SESSION_MESSAGE.seal, sid: b.sid, e: 1, ms: SEAL_MS });
  t.clock.increment(SEAL_MS - 1);
  t.owner.onNodeMessage(NEW, { t: SESSION_MESSAGE.route, sid: a.sid, e: 1, node: NEW, gen: 1 });
  // A seal of the move that already ended (it arrived late, on another connection) does not seal again.
  t.owner.onNodeMessage(OLD, { t: SESSION_MESSAGE.seal, sid: a.sid, e: 1, ms: SEAL_MS });
  t.clock.increment(SEAL_MS);
  expect(a.received.filter((m) => m.t === 'closed')).toEqual([]);
  expect(b.received.filter((m) => m.t === 'closed')).toEqual([{ t: 'closed', code: 'unavailable', reason: expect.stringContaining('seal timeout') }]);
  expect(t.owner.sessionCount).toBe(1);
});

test("an Actor's end is applied once every frame before it was delivered; a re-created Actor (stale generation) ends the session", async () => {
  const t = setup();
  const c = await t.opened();
  t.owner.onNodeMessage(NEW, { t: SESSION_MESSAGE.end, sid: c.sid, last: 2, reason: 'bye' });
  t.down(c.sid, 1, ['d1']);
  expect(c.received.filter((m) => m.t === 'closed')).toEqual([]);
  t.down(c.sid, 2, ['d2']);
  expect(c.frames()).toEqual(['d1', 'd2']);
  expect(c.received.at(-1)).toEqual({ t: 'closed', code: 'closed', reason: 'bye' });
  expect(t.posts.at(-1)).toEqual({ k: 'close', sid: c.sid, why: 'actor' });

  const d = await t.opened();
  d.send({ t: 'f', s: 1, d: encodeValue('x', 'frame') });
  t.requests.shift()!.reject(new RequestError('stale-generation', 'object a:a1 is now generation 2, not 1'));
  await flush();
  expect(d.received.at(-1)).toMatchObject({ t: 'closed', code: 'stale-generation' });
});

test('resume: the owner waits at the next downstream frame, answers with the last upstream frame delivered, and the client sends the rest again', async () => {
  const t = setup();
  const c = t.connect();
  c.send({ t: 'resume', v: 1, sid: 's-1', actor: 'a1', gen: 1, attach: 3, down: 5 });
  const resume = t.requests.shift()!;
  expect(resume.body).toEqual({ k: 'resume', sid: 's-1', owner: SELF, attach: 3, da: 5 });
  expect(resume.gen).toBe(1);
  // The Actor's retransmission may arrive before the reply: kept in order, duplicates dropped.
  t.down('s-1', 4, ['d4', 'd5', 'd6']);
  resume.resolve({ up: 7, gen: 1, node: NEW });
  await flush();
  expect(c.received[0]).toEqual({ t: 'resumed', up: 7 });
  expect(c.frames()).toEqual(['d6']);
  c.send({ t: 'f', s: 8, d: encodeValue('u8', 'frame') });
  expect(t.requests.at(-1)!.body).toMatchObject({ k: 'f', s: 8 });
  // The client leaves without closing: the Actor keeps the binding for the resume window.
  c.handlers.onClose();
  expect(t.posts.at(-1)).toEqual({ k: 'detach', sid: 's-1', attach: 3, ms: 30_000 });
  expect(t.owner.sessionCount).toBe(0);
});

test('§15: a host that is not Serving binds no new session; Draining answers a pending binding, then tells every client to move', async () => {
  const t = setup();
  const c = await t.opened();
  const pending = t.connect();
  pending.send({ t: 'open', v: 1, actor: 'a2' });
  const open = t.requests.shift()!;

  t.setState(FrameworkRuntimeState.Relocating);
  const refused = t.connect();
  refused.send({ t: 'open', v: 1, actor: 'a1' });
  expect(refused.received).toEqual([{ t: 'closed', code: 'admission', reason: expect.stringContaining('Relocating'), endpoints: ['ws://other:1/'] }]);

  t.setState(FrameworkRuntimeState.Draining);
  const abort = new AbortController();
  let drained = false;
  const draining = t.owner.drain(abort.signal).then(() => (drained = true));
  expect(c.received.at(-1)).toEqual({ t: 'move', endpoints: ['ws://other:1/'] });
  await flush();
  expect(drained).toBe(false); // the pending binding's reply is still due
  open.resolve({ gen: 4, up: 0, node: OLD });
  await flush();
  expect(pending.received.map((m) => m.t)).toEqual(['opened', 'move']);
  c.handlers.onClose();
  pending.handlers.onClose();
  await draining;
  expect(t.posts.filter((p) => p.k === 'detach').map((p) => p.sid)).toEqual([c.sid, (pending.received[0] as { sid: string }).sid]);
});

test('teardown: no reply after close touches a session, and no timer of the owner is left', async () => {
  const t = setup();
  const c = await t.opened();
  c.send({ t: 'f', s: 1, d: encodeValue('u1', 'frame') });
  t.owner.onNodeMessage(OLD, { t: SESSION_MESSAGE.seal, sid: c.sid, e: 1, ms: SEAL_MS });
  t.down(c.sid, 2, ['d2']); // a gap timer runs
  expect(t.clock.pending.size).toBeGreaterThan(0);
  t.owner.close();
  expect(t.clock.pending.size).toBe(0);
  expect(c.received.at(-1)).toEqual({ t: 'move', endpoints: ['ws://other:1/'] });
  expect(c.closes).toEqual([1001]);
  const before = c.received.length;
  t.requests.shift()!.resolve({ up: 1 });
  await flush();
  t.clock.increment(60_000);
  c.handlers.onMessage(encodeWire({ t: 'f', s: 2, d: encodeValue('late', 'frame') }));
  expect(c.received.length).toBe(before);
  expect(t.requests).toEqual([]);
});
