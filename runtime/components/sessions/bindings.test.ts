/**
 * The Actor side of sessions on fake ports: a real Object Server (lanes, turns, ctx) and a SimulatedClock; what
 * goes to session owners and the request terminals are recorded. Proves exactly-once upstream delivery, the
 * downstream buffer (acknowledge, resend, resume), the binding moving with its Actor (capture → restore, seal at
 * S0, route update after S3) and that one session owner's undeliverable route update holds no other.
 */
import { memoryStores } from '../../../stores/memory/memory-stores';
import type { NodeRef } from '../../../stores/types';
import type { RuntimeMessage } from '../../../transport/types';
import { FrameworkRuntimeState } from '../../../vocabulary';
import { SimulatedClock } from '../../clock';
import { decodeValue, encodeValue } from '../../codec';
import type { SessionEvent } from '../../context';
import { defineActor, recreateOnRelocation, type ObjectDefinition } from '../../definitions';
import type { Envelope } from '../../envelope';
import { AdmissionError } from '../../errors';
import { silentLog } from '../../logger';
import { captureExtensions, ObjectServer, type Hosted, type Terminal } from '../../objects';
import type { UnitEvent } from '../../relocation/events';
import { ActorSessions, RETRANSMIT_MS, SWEEP_MS } from './bindings';
import { encodeSessionEnvelope, SESSION_MESSAGE, SESSIONS, type SessionEnvelope, type SessionReply } from './protocol';

const SELF = { nodeId: 'actor-host', lifecycleGeneration: 1 };
const OWNER = { nodeId: 'owner-1', lifecycleGeneration: 1 };
const OWNER2 = { nodeId: 'owner-2', lifecycleGeneration: 1 };
const SEAL_MS = 7000;

const flush = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

function host(self: NodeRef = SELF) {
  const clock = new SimulatedClock();
  let state: FrameworkRuntimeState = FrameworkRuntimeState.Serving;
  const events: SessionEvent['type'][] = [];
  const frames: unknown[] = [];
  const Chat = defineActor<{ n: number }>({
    type: 'Chat',
    relocation: recreateOnRelocation(),
    create: () => ({ n: 0 }),
    receive: () => undefined,
    onSession: (_s, event) => {
      events.push(event.type);
      if (event.type === 'open' && refuseNext) {
        refuseNext = false;
        throw new Error('not today');
      }
      if (event.type === 'frame') frames.push(event.frame);
    },
  });
  const Mute = defineActor<object>({ type: 'Mute', relocation: recreateOnRelocation(), create: () => ({}), receive: () => undefined });
  let refuseNext = false;
  const stores = memoryStores();
  const terminals: { id: string; terminal: Terminal }[] = [];
  const objects = new ObjectServer({
    self,
    clock,
    location: stores.location,
    relocationStore: stores.relocation,
    types: new Map<string, ObjectDefinition>([
      ['Chat', Chat],
      ['Mute', Mute],
    ]),
    reply: (env, terminal) => void terminals.push({ id: env.id, terminal }),
    rejectStaleGeneration: () => undefined,
    send: () => undefined,
    request: async () => undefined,
    logger: silentLog,
  });
  const sent: { to: NodeRef; message: RuntimeMessage }[] = [];
  const unreachable = new Set<string>();
  const listeners = new Set<(e: UnitEvent) => void>();
  const sessions = new ActorSessions({
    self,
    clock,
    logger: silentLog,
    state: () => state,
    toOwner: (to, message) => {
      if (unreachable.has(to.nodeId)) return false;
      sent.push({ to, message });
      return true;
    },
    reply: (env, terminal) => void terminals.push({ id: env.id, terminal }),
    inTurn: (hosted, fn) => hosted.lane.push({ k: 'ctl', to: hosted.key, run: fn }),
    hosted: (key) => objects.get(key),
    onUnitEvent: (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    sealTimeoutMs: SEAL_MS,
  });
  objects.extensions.set(SESSIONS, sessions.restore);
  objects.sessionHandler = sessions.onEnvelope;
  objects.sessionsApi = sessions.api;

  const actor = (id = 'a1', type = 'Chat'): Hosted => {
    const hosted = objects.newHosted(`a:${id}`, objects.definition(type), 'entry', objects.newLane(), 1, 1, undefined);
    objects.adopt(hosted);
    return hosted;
  };
  let n = 0;
  /** Delivers a session envelope to `a:<id>` and returns its decoded reply (undefined for one-way). */
  const deliver = async (body: SessionEnvelope, req = true, id = 'a1', from: NodeRef = OWNER): Promise<SessionReply | undefined> => {
    const env: Envelope = { id: `e${++n}`, to: `a:${id}`, gen: 1, body: encodeSessionEnvelope(body), from, ses: 1, ...(req ? { req: 1 as const } : {}) };
    objects.deliver(env);
    await flush();
    const t = terminals.find((x) => x.id === env.id);
    return t?.terminal.ok ? (decodeValue(t.terminal.value!) as SessionReply) : undefined;
  };
  const downs = (to?: NodeRef) =>
    sent
      .filter((s) => s.message.t === SESSION_MESSAGE.down && (!to || s.to.nodeId === to.nodeId))
      .flatMap((s) => {
        const m = s.message as unknown as { s: number; d: Uint8Array[] };
        return m.d.map((d, i) => [m.s + i, decodeValue(d)]);
      });
  const emit = (event: Partial<UnitEvent>) => {
    for (const l of listeners) l({ kind: 'actor', unit: 'u1', objects: ['a:a1'], at: clock.now(), ...event } as UnitEvent);
  };
  return {
    clock, objects, sessions, sent, unreachable, events, frames, terminals, actor, deliver, downs, emit, listeners,
    setState: (s: FrameworkRuntimeState) => (state = s),
    refuse: () => (refuseNext = true),
  };
}

test('upstream frames reach onSession exactly once and in order: a duplicate or a frame after a gap is only answered', async () => {
  const t = host();
  t.actor();
  expect(await t.deliver({ k: 'open', sid: 's1', owner: OWNER })).toEqual({ gen: 1, up: 0, node: SELF });
  const frame = (s: number) => t.deliver({ k: 'f', sid: 's1', s, d: encodeValue(`u${s}`, 'frame'), da: 0 });
  expect(await frame(1)).toEqual({ up: 1 });
  expect(await frame(2)).toEqual({ up: 2 });
  expect(await frame(1)).toEqual({ up: 2 });
  expect(await frame(4)).toEqual({ up: 2 });
  expect(await frame(3)).toEqual({ up: 3 });
  expect(t.frames).toEqual(['u1', 'u2', 'u3']);
  expect(await t.deliver({ k: 'f', sid: 'nope', s: 1, d: encodeValue(0, 'frame'), da: 0 })).toMatchObject({ closed: 'expired' });
});

test('downstream: frames are numbered and kept until acknowledged; a resend request and a resume send the rest again', async () => {
  const t = host();
  const a = t.actor();
  await t.deliver({ k: 'open', sid: 's1', owner: OWNER });
  const session = a.ctx.sessions.get('s1')!;
  for (const v of ['d1', 'd2', 'd3']) session.send(v);
  expect(t.downs(OWNER)).toEqual([
    [1, 'd1'],
    [2, 'd2'],
    [3, 'd3'],
  ]);
  expect(() => session.send(() => 1)).toThrow(/frame: a function cannot be encoded/);
  await t.deliver({ k: 'ack', sid: 's1', da: 1 }, false);
  t.sent.length = 0;
  await t.deliver({ k: 'resend', sid: 's1', from: 1 }, false);
  expect(t.downs(OWNER)).toEqual([
    [2, 'd2'],
    [3, 'd3'],
  ]);
  // The client resumed at another session owner having delivered up to 2.
  t.sent.length = 0;
  expect(await t.deliver({ k: 'resume', sid: 's1', owner: OWNER2, attach: 2, da: 2 }, true, 'a1', OWNER2)).toEqual({ up: 0, gen: 1, node: SELF });
  expect(t.downs(OWNER2)).toEqual([[3, 'd3']]);
  session.send('d4');
  expect(t.downs(OWNER2).at(-1)).toEqual([4, 'd4']);
  // A resume older than the one that took (a retry the client already gave up) is refused.
  expect(await t.deliver({ k: 'resume', sid: 's1', owner: OWNER, attach: 2, da: 2 })).toMatchObject({ closed: 'expired' });
  // Unacknowledged frames go again once they are old enough (lost on the way, no gap reported).
  t.sent.length = 0;
  t.clock.increment(RETRANSMIT_MS + SWEEP_MS);
  expect(t.downs(OWNER2)).toEqual([
    [3, 'd3'],
    [4, 'd4'],
  ]);
});

test('the binding moves with its Actor: sealed at S0 (seal notice), captured, restored on the target, route update after S3', async () => {
  const source = host();
  const a = source.actor();
  await source.deliver({ k: 'open', sid: 's1', owner: OWNER });
  await source.deliver({ k: 'f', sid: 's1', s: 1, d: encodeValue('u1', 'frame'), da: 0 });
  a.ctx.sessions.get('s1')!.send('d1');
  a.ctx.sessions.get('s1')!.send('d2');
  source.emit({ side: 'source', state: 'sealed', point: 'S0' });
  expect(source.sent.at(-1)).toEqual({ to: OWNER, message: { t: SESSION_MESSAGE.seal, sid: 's1', e: 1, ms: SEAL_MS } });
  a.hold = []; // sealed: the Actor sends nothing from here
  expect(() => a.ctx.sessions.get('s1')!.send('late')).toThrow(AdmissionError);
  const bytes = captureExtensions(a)![SESSIONS]!;

  const target = host({ nodeId: 'target-host', lifecycleGeneration: 1 });
  const moved = target.objects.newHosted('a:a1', target.objects.definition('Chat'), 'entry', target.objects.newLane(), 1, 1, undefined);
  target.objects.restoreExtensions(moved, { [SESSIONS]: bytes });
  target.objects.adopt(moved);
  target.emit({ side: 'target', state: 'opened', point: 'S3' });
  expect(target.sent).toEqual([
    { to: OWNER, message: { t: SESSION_MESSAGE.route, sid: 's1', e: 1, node: { nodeId: 'target-host', lifecycleGeneration: 1 }, gen: 1 } },
  ]);
  // Both sequences continue where the source stopped.
  expect(await target.deliver({ k: 'f', sid: 's1', s: 1, d: encodeValue('u1', 'frame'), da: 1 })).toEqual({ up: 1 });
  expect(await target.deliver({ k: 'f', sid: 's1', s: 2, d: encodeValue('u2', 'frame'), da: 1 })).toEqual({ up: 2 });
  expect(target.frames).toEqual(['u2']);
  moved.ctx.sessions.get('s1')!.send('d3');
  expect(target.downs(OWNER)).toEqual([[3, 'd3']]);
  await target.deliver({ k: 'resend', sid: 's1', from: 1 }, false);
  expect(target.downs(OWNER).slice(1)).toEqual([
    [2, 'd2'],
    [3, 'd3'],
  ]);
});

test("one session owner's undeliverable route update holds no other: it is sent at once to the reachable one and retried for the other", async () => {
  const t = host();
  t.actor('a1');
  t.actor('a2');
  await t.deliver({ k: 'open', sid: 's1', owner: OWNER }, true, 'a1');
  await t.deliver({ k: 'open', sid: 's2', owner: OWNER2 }, true, 'a2', OWNER2);
  t.unreachable.add(OWNER.nodeId);
  t.emit({ side: 'source', state: 'restored', objects: ['a:a1', 'a:a2'] });
  expect(t.sent.map((s) => [s.to.nodeId, s.message.t])).toEqual([[OWNER2.nodeId, SESSION_MESSAGE.route]]);
  t.unreachable.clear();
  t.clock.increment(SWEEP_MS);
  expect(t.sent.map((s) => [s.to.nodeId, s.message.t])).toEqual([
    [OWNER2.nodeId, SESSION_MESSAGE.route],
    [OWNER.nodeId, SESSION_MESSAGE.route],
  ]);
});

test('§15: no new binding outside Serving; an Actor without onSession, or whose onSession throws, refuses it', async () => {
  const t = host();
  t.actor('a1');
  t.actor('m1', 'Mute');
  t.setState(FrameworkRuntimeState.Relocating);
  expect(await t.deliver({ k: 'open', sid: 's1', owner: OWNER })).toMatchObject({ closed: 'admission', reason: expect.stringContaining('Relocating') });
  t.setState(FrameworkRuntimeState.Serving);
  expect(await t.deliver({ k: 'open', sid: 's1', owner: OWNER }, true, 'm1')).toMatchObject({ closed: 'refused', reason: expect.stringContaining('onSession') });
  t.refuse();
  expect(await t.deliver({ k: 'open', sid: 's2', owner: OWNER })).toEqual({ closed: 'refused', reason: 'not today' });
  expect(t.objects.get('a:a1')!.ctx.sessions.list()).toEqual([]);
  // A resumed binding is not new: it goes on in any state.
  expect(await t.deliver({ k: 'open', sid: 's3', owner: OWNER })).toMatchObject({ gen: 1 });
  t.setState(FrameworkRuntimeState.Relocated);
  expect(await t.deliver({ k: 'resume', sid: 's3', owner: OWNER2, attach: 2, da: 0 })).toMatchObject({ up: 0 });
});

test('a detached binding nobody resumes expires (onSession closed, reason expired); a resume in time keeps it', async () => {
  const t = host();
  t.actor('a1');
  await t.deliver({ k: 'open', sid: 's1', owner: OWNER });
  await t.deliver({ k: 'open', sid: 's2', owner: OWNER });
  await t.deliver({ k: 'detach', sid: 's1', attach: 1, ms: 1000 }, false);
  await t.deliver({ k: 'detach', sid: 's2', attach: 1, ms: 1000 }, false);
  await t.deliver({ k: 'resume', sid: 's2', owner: OWNER2, attach: 2, da: 0 });
  t.clock.increment(1000 + SWEEP_MS);
  await flush();
  expect(t.events.filter((e) => e === 'closed')).toHaveLength(1);
  expect(t.objects.get('a:a1')!.ctx.sessions.list().map((s) => s.id)).toEqual(['s2']);
  // An older owner's detach after the resume changes nothing.
  await t.deliver({ k: 'detach', sid: 's2', attach: 1, ms: 1 }, false);
  t.clock.increment(SWEEP_MS * 4);
  await flush();
  expect(t.objects.get('a:a1')!.ctx.sessions.list().map((s) => s.id)).toEqual(['s2']);
  // A connection loss to its session owner starts the window; traffic from that owner shows it still holds the client.
  t.sessions.onOwnerLost(OWNER2, 500);
  await t.deliver({ k: 'ack', sid: 's2', da: 0 }, false, 'a1', OWNER2);
  t.clock.increment(500 + SWEEP_MS);
  await flush();
  expect(t.objects.get('a:a1')!.ctx.sessions.list().map((s) => s.id)).toEqual(['s2']);
  // Its session owner leaves the cluster without detaching it: the binding waits its window, then expires.
  t.sessions.onOwnerLost(OWNER2, 500);
  t.clock.increment(500 + SWEEP_MS);
  await flush();
  expect(t.objects.get('a:a1')!.ctx.sessions.list()).toEqual([]);
  t.sessions.close();
  expect(t.listeners.size).toBe(0);
});
