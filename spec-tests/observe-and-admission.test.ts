/**
 * Spec 05 §3 (IsReady), §16 (in-order observation, terminal never overwritten) and §15 (admission per state;
 * an accepted request ends exactly once: reply, handler error, timeout or shutdown). Public API only.
 */
import {
  defineActor,
  FrameworkRuntimeState,
  RelocationOutcome,
  RelocationReason,
  RemoteHandlerError,
  RequestError,
  TerminationOutcome,
  TerminationReason,
  type FrameworkRuntime,
  type RuntimeStatus,
} from '../runtime';
import { BASE_TYPES, Closer, closer, flush, hostSet, json, recordStatuses, settle, sleep, until, type HostSet } from './support/hosts';
import { expectAdmissionRejected as expectRejected, holdAtSafePoint, holdClosing, PM, rejection, thrown } from './support/s15-states';

const S = FrameworkRuntimeState;

// Signaled (support/hosts.ts): a SpotWide, ApplicationSignaled Spot whose unit waits in Relocating until a
// { op: 'defer' } turn registers the safe point; every turn answers { n, node }.
// Closer (support/hosts.ts): its HostShutdown closing callback holds the host in Draining (support/s15-states.ts holdClosing).

type WorkerMessage = { op: 'echo'; value: unknown } | { op: 'fail'; why: string } | { op: 'sleep'; ms: number; value: unknown };
const Worker = defineActor<{ handled: number }>({
  type: 'Worker',
  relocation: json(),
  create: () => ({ handled: 0 }),
  receive: async (state, message: WorkerMessage) => {
    state.handled++;
    if (message.op === 'fail') throw new Error(message.why);
    if (message.op === 'sleep') await sleep(message.ms);
    return message.value;
  },
});

const TYPES = [...BASE_TYPES, Closer, Worker];

let set: HostSet;
beforeEach(() => {
  set = hostSet();
});
afterEach(async () => {
  closer.reset();
  await set.close();
});

const host = (nodeId: string) => set.host({ nodeId, applicationVersion: 1, types: TYPES });

async function reaches(from: FrameworkRuntime, to: { actor: string } | { spot: string }, owner: string): Promise<void> {
  await until(async () => {
    const r = (await from.request(to, { op: 'count' }, { timeoutMs: 500 }).catch(() => undefined)) as { node?: string } | undefined;
    return r?.node === owner;
  }, `${from.nodeId} reaches ${JSON.stringify(to)}`);
}

async function expectAdmissionRejected(h: FrameworkRuntime, state: string): Promise<void> {
  await expectRejected(state, [
    ['createActor', () => h.createActor('Counter', 'new-actor')],
    ['createSpot', () => h.createSpot('Signaled', 'new-spot')],
    ['join', () => h.join('new-actor', 'new-spot')],
  ]);
  expect(await h.locate({ actor: 'new-actor' })).toBeUndefined();
  expect(await h.locate({ spot: 'new-spot' })).toBeUndefined();
}

test('status.isReady is true only in Serving', async () => {
  const source = await host('source');
  const target = await host('target');
  await source.createSpot('Signaled', 'g1');
  expect(source.status).toMatchObject({ state: S.Serving, isReady: true });
  const observed = recordStatuses(source);

  // Relocating → Serving: the unit never reached its safe point before the deadline (Blocked, source restored).
  const first = await source.relocate({ mode: PM, deadlineMs: 300 });
  expect(first).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Blocked, reason: RelocationReason.DeadlineExceeded });
  expect(source.status).toMatchObject({ state: S.Serving, isReady: true });

  // Relocating → Relocated: the application signals its safe point.
  const second = await holdAtSafePoint(source, 'g1', 5000);
  expect(source.status.isReady).toBe(false);
  expect(await second.release()).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
  expect(source.status).toMatchObject({ state: S.Relocated, isReady: false });
  await reaches(target, { spot: 'g1' }, 'target');

  const draining = settle(source.shutdown());
  expect(source.status).toMatchObject({ state: S.Draining, isReady: false });
  await draining.promise;
  expect(source.status).toMatchObject({ state: S.Stopped, isReady: false });
  await flush();
  expect(observed.states()).toEqual([S.Serving, S.Relocating, S.Serving, S.Relocating, S.Relocated, S.Draining, S.Stopped]);
  for (const status of observed.values) expect(status.isReady).toBe(status.state === S.Serving);
});

test('observe() yields in order; Stopped is the last value, never overwritten; the iterator ends on abort', async () => {
  const h = await host('solo');
  const all: RuntimeStatus[] = [];
  const whole = (async () => {
    for await (const s of h.observe()) all.push(s);
  })();
  const controller = new AbortController();
  const early: RuntimeStatus[] = [];
  const aborted = (async () => {
    for await (const s of h.observe({ signal: controller.signal })) early.push(s);
  })();
  await flush();
  expect(early.map((s) => s.state)).toEqual([S.Serving]); // the current value first
  controller.abort();
  await aborted; // ends without any new value
  expect(early.map((s) => s.state)).toEqual([S.Serving]);

  expect((await h.relocate({ mode: PM })).outcome).toBe(RelocationOutcome.Relocated); // empty host (§5.1)
  const termination = await h.shutdown();
  expect(termination).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
  await whole; // the iterator ended by itself after the terminal value
  const states = all.map((s) => s.state).filter((s, i, a) => i === 0 || a[i - 1] !== s);
  expect(states).toEqual([S.Serving, S.Relocating, S.Relocated, S.Draining, S.Stopped]);
  const last = all[all.length - 1]!;
  expect(last.state).toBe(S.Stopped);
  expect(all.filter((s) => s.state === S.Stopped)).toHaveLength(1);
  expect(last.lastTermination).toEqual(termination);
  expect(last.lastRelocation).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });

  // Later calls do not overwrite the terminal status.
  const events: RuntimeStatus[] = [];
  h.on('zlink.runtime.host.relocation_changed', (s) => events.push(s));
  h.on('zlink.runtime.host.termination_changed', (s) => events.push(s));
  expect((await h.relocate({ mode: PM })).reason).toBe(RelocationReason.RuntimeNotReady);
  expect(await h.shutdown({ deadlineMs: 10 })).toEqual(termination);
  expect(h.status).toBe(last);
  expect(events).toEqual([]);
  // A new observer after the end gets the terminal value once, then the iterator ends.
  const afterwards: RuntimeStatus[] = [];
  for await (const s of h.observe()) afterwards.push(s);
  expect(afterwards).toEqual([last]);
});

// The Relocated state and its Relocated/None result are published together.
test('every observed Relocated status carries its Relocated/None result', async () => {
  const h = await host('solo');
  await h.createActor('Counter', 'c1');
  expect((await h.relocate({ mode: PM, deadlineMs: 150 })).reason).toBe(RelocationReason.TargetUnavailable);
  await host('target');
  const seen: RuntimeStatus[] = [];
  h.on('zlink.runtime.host.relocation_changed', (s) => seen.push(s));
  expect((await h.relocate({ mode: PM, deadlineMs: 5000 })).outcome).toBe(RelocationOutcome.Relocated);
  const relocated = seen.filter((s) => s.state === S.Relocated);
  expect(relocated.length).toBeGreaterThan(0);
  for (const s of relocated) expect(s.lastRelocation).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
});

test('§15: create and join are rejected in Relocating, Relocated and Draining; unsealed work keeps running in Relocating', async () => {
  const source = await host('source');
  const target = await host('target');
  await source.createSpot('Signaled', 'g1');
  await source.createActor('Counter', 'member');
  await reaches(target, { spot: 'g1' }, 'source');

  // Relocating (the Signaled unit waits for its safe point).
  const pending = await holdAtSafePoint(source, 'g1', 5000);
  await expectAdmissionRejected(source, 'Relocating');
  // The Spot is not sealed yet: it keeps processing, for local and remote callers.
  expect(await source.request({ spot: 'g1' }, { op: 'count' })).toMatchObject({ node: 'source' });
  expect(source.status.state).toBe(S.Relocating);

  // Relocated.
  expect(await pending.release()).toMatchObject({ outcome: RelocationOutcome.Relocated });
  await expectAdmissionRejected(source, 'Relocated');
  // Infrastructure is kept: the source still forwards to the moved Spot.
  expect(await source.request({ spot: 'g1' }, { op: 'count' })).toMatchObject({ node: 'target' });

  // Draining (a closing callback holds the host there).
  const other = await host('other');
  const stopping = await holdClosing(other, 5000);
  expect(other.status.state).toBe(S.Draining);
  await expectAdmissionRejected(other, 'Draining');
  expect(await stopping.release()).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
});

// §3/§15: until the seal an object keeps processing for every caller; the target's temporary queue takes only
// what the source relays and follows to it (§11: the target creates no terminal from it).
test('§15: in Relocating an unsealed object answers every caller, the prepared target host included', async () => {
  const source = await host('source');
  const target = await host('target');
  await source.createSpot('Signaled', 'g1');
  await reaches(target, { spot: 'g1' }, 'source');
  const pending = settle(source.relocate({ mode: PM, deadlineMs: 800 }));
  await until(() => (source.diagnostics().units.sourceByState['safePoint'] ?? 0) > 0, 'target prepared, unit at its safe point');
  expect(await target.request({ spot: 'g1' }, { op: 'count' }, { timeoutMs: 300 })).toMatchObject({ node: 'source' });
  await pending.promise;
});

test('§15: send and request from a Draining host end with a shutdown error, and so do requests arriving at it', async () => {
  const draining = await host('draining');
  const peer = await host('peer');
  await draining.createActor('Worker', 'w-local');
  await peer.createActor('Worker', 'w-remote');
  expect(await peer.request({ actor: 'w-local' }, { op: 'echo', value: 1 })).toBe(1);
  expect(await draining.request({ actor: 'w-remote' }, { op: 'echo', value: 2 })).toBe(2);

  const stopping = await holdClosing(draining, 5000);
  expect(draining.status.state).toBe(S.Draining);

  const sendError = thrown(() => draining.send({ actor: 'w-remote' }, { op: 'echo', value: 3 }));
  expect(sendError).toBeInstanceOf(RequestError);
  expect((sendError as RequestError).kind).toBe('shutdown');
  for (const to of [{ actor: 'w-remote' }, { actor: 'w-local' }]) {
    const error = await rejection(draining.request(to, { op: 'echo', value: 4 }, { timeoutMs: 1000 }));
    expect(error).toBeInstanceOf(RequestError);
    expect((error as RequestError).kind).toBe('shutdown');
  }
  // A new request arriving at the Draining host ends with a shutdown result too (§15 Node direct / Spot-Actor direct).
  const inbound = await rejection(peer.request({ actor: 'w-local' }, { op: 'echo', value: 5 }, { timeoutMs: 1000 }));
  expect(inbound).toBeInstanceOf(RequestError);
  expect((inbound as RequestError).kind).toBe('shutdown');
  // Nothing of that reached the Workers.
  expect(await stopping.release()).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
});

test('§15: an accepted request ends exactly once — reply, handler error, timeout or shutdown', async () => {
  const caller = await host('caller');
  const owner = await host('owner');
  await owner.createActor('Worker', 'w1');
  await until(async () => (await caller.request({ actor: 'w1' }, { op: 'echo', value: 'hi' }, { timeoutMs: 500 }).catch(() => undefined)) === 'hi', 'caller reaches w1');

  const endings: string[] = [];
  const track = (name: string, p: Promise<unknown>) =>
    p.then(
      (value) => {
        endings.push(`${name}:reply`);
        return value;
      },
      (error: unknown) => {
        endings.push(`${name}:${(error as RequestError).kind}`);
        throw error;
      },
    );

  // Reply.
  expect(await track('reply', caller.request({ actor: 'w1' }, { op: 'echo', value: { a: [1, 2] } }))).toEqual({ a: [1, 2] });
  // Handler error → RemoteHandlerError carrying the handler's message.
  const failed = await track('error', caller.request({ actor: 'w1' }, { op: 'fail', why: 'no such item' })).catch((e: unknown) => e);
  expect(failed).toBeInstanceOf(RemoteHandlerError);
  expect(failed).toBeInstanceOf(RequestError);
  expect((failed as RequestError).kind).toBe('handler');
  expect((failed as Error).message).toContain('no such item');
  // Timeout: the handler replies later; the late reply does not make a second ending.
  const timedOut = await track('timeout', caller.request({ actor: 'w1' }, { op: 'sleep', ms: 200, value: 'late' }, { timeoutMs: 50 })).catch((e: unknown) => e);
  expect(timedOut).toBeInstanceOf(RequestError);
  expect((timedOut as RequestError).kind).toBe('timeout');
  await sleep(300);
  expect(await caller.request({ actor: 'w1' }, { op: 'echo', value: 'after' })).toBe('after');
  // Shutdown of the caller while the request is accepted and its handler still runs.
  const inFlight = track('shutdown', caller.request({ actor: 'w1' }, { op: 'sleep', ms: 300, value: 'too late' }, { timeoutMs: 5000 })).catch((e: unknown) => e);
  await sleep(30);
  expect(await caller.shutdown({ deadlineMs: 2000 })).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
  const shutdownError = await inFlight;
  expect(shutdownError).toBeInstanceOf(RequestError);
  expect((shutdownError as RequestError).kind).toBe('shutdown');
  await sleep(400); // the owner's handler finishes and replies into the stopped caller: nothing more happens
  expect(endings).toEqual(['reply:reply', 'error:handler', 'timeout:timeout', 'shutdown:shutdown']);
  expect(await owner.request({ actor: 'w1' }, { op: 'echo', value: 'owner still serves' })).toBe('owner still serves');
});
