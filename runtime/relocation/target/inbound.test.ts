/**
 * The target side on fake ports (issue [6/10] item 4): a real Object Server and SimulatedClock; routing, the owner
 * CAS and the replies to the source are recorded or scripted. Proves the per-unit semantics of one machine per
 * inbound parcel: each unit its own reply, cutover, CAS outcome and failure.
 */
import { memoryStores } from '../../../stores/memory/memory-stores';
import type { CasResult, OwnerCommitEntry } from '../../../stores/types';
import { StoreUnavailableError } from '../../../stores/types';
import { SimulatedClock } from '../../clock';
import { decodeValue, encodeValue } from '../../codec';
import { defineActor, preserveState } from '../../definitions';
import type { Envelope } from '../../envelope';
import { silentLog } from '../../logger';
import { ObjectServer } from '../../objects';
import type { CommitOutcome } from '../owner-commit-batcher';
import type { UnitEvent } from '../events';
import { describeType } from '../compatibility';
import { encodeParcel } from '../parcel';
import { PARCEL_ID_PREFIX } from '../source/parcel-sender';
import { encodePayload, PAYLOAD_VERSION } from '../payload';
import type { InboundPorts } from '../ports';
import { RELOCATION_MESSAGE, type CutoverMessage } from '../protocol';
import { Inbound } from './inbound';

const SOURCE = { nodeId: 'source', lifecycleGeneration: 1 };
const SELF = { nodeId: 'target', lifecycleGeneration: 1 };
const VALIDITY_MS = 5000;
const CUTOVER_WAIT_MS = 1000;

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const settle = async () => {
  for (let i = 0; i < 5; i++) await turn();
};

function setup(options: { cas?: (entries: readonly OwnerCommitEntry[], call: number) => CommitOutcome[]; events?: UnitEvent[] } = {}) {
  const clock = new SimulatedClock();
  const seen: string[] = [];
  const Counter = defineActor<{ n: number }>({
    type: 'Counter',
    relocation: preserveState({ capture: (s) => encodeValue(s, 'state'), restore: (b) => decodeValue(b) as { n: number } }),
    create: () => ({ n: 0 }),
    receive: (_s, m) => void seen.push(String(m)),
  });
  const types = new Map([['Counter', Counter]]);
  const stores = memoryStores();
  const objects = new ObjectServer({
    self: SELF,
    clock,
    location: stores.location,
    relocationStore: stores.relocation,
    types,
    reply: () => undefined,
    rejectStaleGeneration: () => undefined,
    send: () => undefined,
    request: async () => undefined,
    logger: silentLog,
  });
  const replies: string[] = [];
  /** How many replies there were at each flush (a payload's replies go at the end of its intake). */
  const flushes: number[] = [];
  const routed: string[] = [];
  const ended: string[] = [];
  const casCalls: string[][] = [];
  let closed = false;
  const ports: InboundPorts = {
    self: SELF,
    clock,
    timing: { restoreValidityMs: VALIDITY_MS, relocationCutoverWaitTimeoutMs: CUTOVER_WAIT_MS },
    capacity: 1000,
    types,
    objects,
    routes: {
      dispatch: (env) => void routed.push(env.id),
      invalidate: () => undefined,
      terminal: (env, t) => void ended.push(`${env.id}:${t.kind}`),
    },
    location: stores.location,
    owners: {
      submit: (entries, done) => {
        const call = casCalls.push(entries.map((r) => r.object.id)) - 1;
        const script = options.cas ?? ((rs: readonly OwnerCommitEntry[]) => rs.map((): CasResult => ({ status: 'applied', record: { authorityGeneration: 9 } as CasResult['record'] })));
        setImmediate(() => done(script(entries, call)));
      },
    },
    replies: {
      prepared: (_s, u) => void replies.push(`prepared ${u}`),
      ready: (_s, u) => void replies.push(`ready ${u}`),
      fail: (_s, u, _r, error) => void replies.push(`fail ${u}: ${error}`),
      flush: () => void (flushes.push(replies.length)),
    },
    logger: silentLog,
    unitEvents: { active: !!options.events, emit: (e) => void options.events?.push(e) },
    inspect: undefined,
    refusal: () => undefined,
    closed: () => closed,
    unitsEnded: () => undefined,
  };
  const inbound = new Inbound(ports);
  const env = (id: string, to: string): Envelope => ({ id, to, gen: 1, body: encodeValue(id, 'message'), from: SOURCE, seq: 1 });
  const prepare = (...ids: string[]) =>
    inbound.onPrepare(SOURCE, {
      t: RELOCATION_MESSAGE.prepare,
      units: ids.map((id) => ({ u: `u-${id}`, kind: 'actor', keys: [`a:${id}`], ty: [0] })),
      types: [describeType(Counter)],
    });
  const payload = (id: string, queued: string[] = []) =>
    encodePayload({
      v: PAYLOAD_VERSION,
      unit: `u-${id}`,
      kind: 'actor',
      objects: [{ key: `a:${id}`, type: 'Counter', gen: 1, auth: 4, mode: 'entry', state: encodeValue({ n: 7 }, 'state'), timers: [] }],
      queue: queued.map((q) => ({ k: 'msg', to: `a:${id}`, env: env(q, `a:${id}`) })),
    });
  /** A parcel arrives; its intake runs in the next turn (onPayload), awaited here. */
  const parcel = async (...ids: string[]) => {
    inbound.onPayload(SOURCE, `${PARCEL_ID_PREFIX}p-${ids.join('')}`, { ok: true, bytes: encodeParcel(ids.map((id) => ({ unit: `u-${id}`, payload: payload(id, [`${id}-saved`]) }))) });
    await turn();
  };
  const cutover = (id: string, relay: string[] = []) => {
    const message: CutoverMessage = { t: RELOCATION_MESSAGE.cutover, u: `u-${id}`, relay: relay.map((r) => env(r, `a:${id}`)), first: true };
    inbound.onCutover(message);
  };
  return {
    clock, inbound, objects, replies, flushes, routed, ended, casCalls, seen, prepare, parcel, cutover, env, payload,
    close: () => {
      closed = true;
      inbound.close();
      return stores.close();
    },
  };
}

test('a parcel of three units: one reply each, one CAS call for all, then each opens with saved → relay → temporary work in order', async () => {
  const t = setup();
  t.prepare('a', 'b', 'c');
  expect(t.replies).toEqual(['prepared u-a', 'prepared u-b', 'prepared u-c']);
  t.inbound.staging('a:b')!(t.env('b-temp', 'a:b')); // direct work while staged
  await t.parcel('a', 'b', 'c');
  expect(t.replies.slice(3)).toEqual(['ready u-a', 'ready u-b', 'ready u-c']);
  expect(t.flushes).toEqual([6]); // the parcel's replies went at the end of its intake, not at the end of the turn
  expect(t.objects.get('a:a')).toBeUndefined(); // nothing runs before the owner CAS
  for (const id of ['a', 'b', 'c']) t.cutover(id, [`${id}-relay`]);
  await settle();
  expect(t.casCalls).toEqual([['a', 'b', 'c']]);
  expect(t.inbound.inFlight).toBe(0);
  expect(t.objects.get('a:b')!.authorityGeneration).toBe(9);
  await settle();
  expect(t.seen.filter((s) => s.startsWith('b-'))).toEqual(['b-saved', 'b-relay', 'b-temp']);
  expect(t.inbound.staging('a:a')).toBeUndefined();
  await t.close();
});

test('payloads are taken in one per turn, oldest first, each with its own relay-ready; a cutover that came with them goes first', async () => {
  const t = setup();
  t.prepare('a', 'b', 'c');
  await t.parcel('a');
  const arrive = (id: string) => t.inbound.onPayload(SOURCE, `${PARCEL_ID_PREFIX}p-${id}`, { ok: true, bytes: encodeParcel([{ unit: `u-${id}`, payload: t.payload(id) }]) });
  const before = t.replies.length;
  arrive('b');
  arrive('c');
  t.cutover('a'); // read with them: its owner CAS does not wait for their restore
  expect(t.casCalls).toEqual([['a']]);
  expect(t.replies.length).toBe(before);
  await turn();
  expect(t.replies.slice(before)).toEqual(['ready u-b']);
  await turn();
  expect(t.replies.slice(before)).toEqual(['ready u-b', 'ready u-c']);
  expect(t.flushes.slice(-2)).toEqual([before + 1, before + 2]);
  await t.close();
});

test('a payload received before the close (§14) is taken in at the close, as it would have been at once', async () => {
  const t = setup();
  t.prepare('a');
  t.inbound.onPayload(SOURCE, `${PARCEL_ID_PREFIX}p-a`, { ok: true, bytes: encodeParcel([{ unit: 'u-a', payload: t.payload('a') }]) });
  expect(t.replies).toEqual(['prepared u-a']);
  await t.close();
  expect(t.replies).toEqual(['prepared u-a', 'ready u-a']);
});

test('a cutover read before its payload was taken in (the source cut over at the end of its reply wait, §8): the unit commits once restored, not at the fallback', async () => {
  const events: UnitEvent[] = [];
  const t = setup({ events });
  t.prepare('a');
  t.inbound.onPayload(SOURCE, `${PARCEL_ID_PREFIX}p-a`, { ok: true, bytes: encodeParcel([{ unit: 'u-a', payload: t.payload('a', ['a-saved']) }]) });
  t.cutover('a', ['a-relay']);
  await settle();
  expect(t.casCalls).toEqual([['a']]);
  expect(events.filter((e) => e.state === 'committed').map((e) => e.fellBack)).toEqual([false]);
  await settle();
  expect(t.seen.filter((s) => s.startsWith('a-'))).toEqual(['a-saved', 'a-relay']);
  await t.close();
});

test('cutovers in two turns: the units that have theirs commit at once, the others keep waiting (split parcel)', async () => {
  const t = setup();
  t.prepare('a', 'b');
  await t.parcel('a', 'b');
  t.cutover('a');
  await settle();
  expect(t.casCalls).toEqual([['a']]);
  expect(t.objects.get('a:a')).toBeDefined();
  expect(t.objects.get('a:b')).toBeUndefined();
  expect(t.inbound.inFlight).toBe(1);
  t.cutover('b');
  await settle();
  expect(t.casCalls).toEqual([['a'], ['b']]);
  expect(t.objects.get('a:b')).toBeDefined();
  await t.close();
});

test('one CAS conflict in a parcel: that unit alone is discarded (its requests end unavailable), the others open', async () => {
  const t = setup({ cas: (rs) => rs.map((r): CasResult => (r.object.id === 'b' ? { status: 'conflict' } : { status: 'applied', record: { authorityGeneration: 9 } as CasResult['record'] })) });
  t.prepare('a', 'b', 'c');
  await t.parcel('a', 'b', 'c');
  for (const id of ['a', 'b', 'c']) t.cutover(id, [`${id}-relay`]);
  t.inbound.staging('a:b')!({ ...t.env('b-req', 'a:b'), req: 1 });
  await settle();
  expect(t.objects.get('a:a')).toBeDefined();
  expect(t.objects.get('a:c')).toBeDefined();
  expect(t.objects.get('a:b')).toBeUndefined();
  expect(t.ended.sort()).toEqual(['b-relay:unavailable', 'b-req:unavailable']);
  expect(t.inbound.inFlight).toBe(0);
  await t.close();
});

test('no cutover within the wait: the parcel falls back to the CAS (§13)', async () => {
  const t = setup();
  t.prepare('a');
  await t.parcel('a');
  t.clock.increment(CUTOVER_WAIT_MS + 1);
  await settle();
  expect(t.casCalls).toEqual([['a']]);
  expect(t.objects.get('a:a')).toBeDefined();
  await t.close();
});

test('store unavailable: the CAS is retried until restore validity ends, then the units are discarded (§11)', async () => {
  const t = setup({ cas: (rs) => rs.map(() => ({ error: new StoreUnavailableError('down') })) });
  t.prepare('a');
  await t.parcel('a');
  t.cutover('a');
  for (let i = 0; i < 12 && t.inbound.inFlight > 0; i++) {
    await settle();
    t.clock.increment(1000);
  }
  expect(t.casCalls.length).toBeGreaterThan(2);
  expect(t.inbound.inFlight).toBe(0);
  expect(t.objects.get('a:a')).toBeUndefined();
  await t.close();
});

test('staging expiry: a unit whose payload never came is abandoned, its temporary work goes back to routing, a late payload is refused', async () => {
  const t = setup();
  t.prepare('a');
  t.inbound.staging('a:a')!(t.env('temp', 'a:a'));
  t.clock.increment(VALIDITY_MS + 1);
  expect(t.routed).toEqual(['temp']);
  expect(t.inbound.inFlight).toBe(0);
  await t.parcel('a');
  expect(t.replies.at(-1)).toMatch(/^fail u-a: the target unit expired/);
  await t.close();
});

test('a unit whose own checksum fails in a parcel fails alone; a resent payload restores nothing twice', async () => {
  const t = setup();
  t.prepare('a', 'b');
  const bytes = encodeParcel([
    { unit: 'u-a', payload: t.payload('a') },
    { unit: 'u-b', payload: t.payload('b') },
  ]);
  bytes[bytes.length - 1]! ^= 0xff; // corrupt u-b's last payload byte
  t.inbound.onPayload(SOURCE, `${PARCEL_ID_PREFIX}x`, { ok: true, bytes });
  await turn();
  expect(t.replies.slice(2, 3)).toEqual(['ready u-a']);
  expect(t.replies[3]).toMatch(/^fail u-b: payload rejected/);
  await t.parcel('a'); // resent
  expect(t.replies.at(-1)).toBe('ready u-a');
  t.cutover('a');
  await settle();
  expect(t.casCalls).toEqual([['a']]);
  await t.close();
});

test('an ended unit is kept as a small record: resent prepare and payload are answered, a late cutover delivers only what is new', async () => {
  const t = setup({ cas: (rs) => rs.map((r): CasResult => (r.object.id === 'b' ? { status: 'conflict' } : { status: 'applied', record: { authorityGeneration: 9 } as CasResult['record'] })) });
  t.prepare('a', 'b');
  await t.parcel('a', 'b');
  t.cutover('a', ['a-1']);
  t.cutover('b', ['b-1']);
  await settle();
  expect(t.inbound.inFlight).toBe(0);
  expect(t.objects.get('a:a')).toBeDefined();
  expect(t.ended).toEqual(['b-1:unavailable']);
  const replies = t.replies.length;
  t.prepare('a'); // resent prepare: nothing created twice
  await t.parcel('a', 'b'); // resent payload: relay-ready again (opened, or discarded after relay-ready), nothing restored twice
  expect(t.replies.slice(replies)).toEqual(['prepared u-a', 'ready u-a', 'ready u-b']);
  // §13 retransmission of the relay batch after dispatch opened: a-1 ran already; a-2 is new and is routed.
  const routed = t.routed.length;
  t.cutover('a', ['a-1', 'a-2']);
  expect(t.routed.slice(routed)).toEqual(['a-2']);
  // The discarded unit gave its relayed request a terminal once; the same batch again gives none twice.
  t.cutover('b', ['b-1']);
  expect(t.ended).toEqual(['b-1:unavailable']);
  expect(t.routed.slice(routed)).toEqual(['a-2']);
  expect(t.casCalls.flat().sort()).toEqual(['a', 'b']);
  await t.close();
});

test('the finished window: units in flight are listed until they end, the ended record answers until the window ends, then is dropped', async () => {
  const t = setup();
  t.prepare('a', 'b');
  expect([...t.inbound.inFlightUnits()].map((u) => u.id)).toEqual(['u-a', 'u-b']);
  await t.parcel('a', 'b');
  t.cutover('a', []);
  t.cutover('b', []);
  await settle();
  expect(t.inbound.inFlight).toBe(0);
  expect([...t.inbound.inFlightUnits()]).toEqual([]);
  const replies = t.replies.length;
  await t.parcel('a'); // within the finished window: relay-ready again, nothing restored twice
  expect(t.replies.slice(replies)).toEqual(['ready u-a']);
  t.clock.increment(Math.max(2 * CUTOVER_WAIT_MS, 5000) + 1); // the finished window (inbound.ts) ends
  await t.parcel('b');
  expect(t.replies.at(-1)).toBe('fail u-b: no prepared unit on the target');
  // A resent prepare is no longer answered from the record: it is taken as new, and refused, its object being here now.
  t.prepare('a');
  expect(t.replies.at(-1)).toBe('fail u-a: object a:a already exists on the target');
  expect([...t.inbound.inFlightUnits()]).toEqual([]);
  await t.close();
});

test('unit events: one per unit and step, relay-ready without a point, S2 with fellBack, S3 after it', async () => {
  const events: UnitEvent[] = [];
  const t = setup({ events });
  t.prepare('a', 'b');
  await t.parcel('a', 'b');
  for (const id of ['a', 'b']) t.cutover(id);
  await settle();
  expect(events.map((e) => [e.unit, e.state, e.point, e.fellBack])).toEqual([
    ['u-a', 'relayReady', undefined, undefined],
    ['u-b', 'relayReady', undefined, undefined],
    ['u-a', 'committed', 'S2', false],
    ['u-b', 'committed', 'S2', false],
    ['u-a', 'opened', 'S3', undefined],
    ['u-b', 'opened', 'S3', undefined],
  ]);
  for (const e of events) {
    expect(e).toMatchObject({ side: 'target', kind: 'actor', objects: [`a:${e.unit.slice(2)}`] });
    expect(Object.keys(e)).not.toContain(e.point === undefined ? 'point' : 'none');
  }
  expect(events[4]!.at).toBeGreaterThanOrEqual(events[2]!.at);
  await t.close();
});

test('unit events: a CAS that came from the cutover-wait fallback says so on its S2 event', async () => {
  const events: UnitEvent[] = [];
  const t = setup({ events });
  t.prepare('a');
  await t.parcel('a');
  t.clock.increment(CUTOVER_WAIT_MS + 1); // no cutover within the wait (§13)
  await settle();
  expect(events.filter((e) => e.state === 'committed').map((e) => [e.unit, e.point, e.fellBack])).toEqual([['u-a', 'S2', true]]);
  expect(events.at(-1)!.state).toBe('opened');
  await t.close();
});
