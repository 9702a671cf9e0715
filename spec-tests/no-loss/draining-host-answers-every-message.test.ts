/**
 * §14/§15: a source that relocated everything and reported SafeToShutdown may still receive traffic from a client
 * whose cached routes name it. Its Shutdown must not swallow any of it: every message sent while the source shuts
 * down is processed exactly once by the object's new owner, in the sender's order, and every request ends with an
 * explicit terminal (its reply, or RequestError `shutdown` / `unavailable`) far before its timeout.
 *
 * Hosts: client c, source a, target b. Actors live on a and c caches a route naming a for each. a relocates to b,
 * waits for safeToShutdown, then shuts down while c sends: a continuous stream (one-way with a per-sender sequence
 * number, and requests) to one group of actors, and — at the moment a's Shutdown closes its transport (a wrapper
 * around a's real transport runs a callback synchronously inside close(), before the real close) — a burst to the
 * actors c has not contacted since the relocation, whose cached route still names a.
 */
import { RelocationMode, RelocationOutcome, RequestError, TerminationOutcome, type ObjectRef } from '../../runtime';
import { eventually, FAST_TIMING, makeStack, STACKS, type Stack } from '../support/stack';
import { ALL_TYPES, checkSequence, type Ledger } from '../support/workload';
import { atMost, closeObservedTransport, quietLog, sleep } from './support';

const timing = { ...FAST_TIMING, messageFollowDurationMs: 200 };
const { log } = quietLog();
const STREAMED = 10; // actors c sends to continuously through a's Shutdown
const FRESH = 20; // actors c first sends to while a's transport closes
const TIMEOUT_MS = 20_000;
const AT_ONCE_MS = 2000;

interface Outcome {
  tag: string;
  sentAt: number;
  settledAt?: number;
  error?: unknown;
}

describe.each(STACKS)('a draining host answers every message on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await stack.close();
  });

  test("traffic from a client with a cached route to the source is processed once by the new owner, or answered, during the source's Shutdown", async () => {
    let onTransportClose = () => undefined as void;
    const a = await stack.host({ nodeId: 'a', applicationVersion: 1, types: ALL_TYPES, timing, log, transport: closeObservedTransport(() => onTransportClose()) });
    await stack.host({ nodeId: 'b', applicationVersion: 2, types: ALL_TYPES, timing, log });
    const c = await stack.host({ nodeId: 'c', applicationVersion: 1, types: ALL_TYPES, timing, log });
    const streamed: ObjectRef[] = [];
    const fresh: ObjectRef[] = [];
    for (let i = 0; i < STREAMED + FRESH; i++) {
      await a.createActor('Counter', `o-${i}`);
      (i < STREAMED ? streamed : fresh).push({ actor: `o-${i}` });
    }
    await eventually(async () => (await c.request(streamed[0]!, { op: 'where' }, { timeoutMs: 500 }).catch(() => '')) === 'a', 5000, 'c reaches a');
    for (const ref of [...streamed, ...fresh]) expect(await c.request(ref, { op: 'where' })).toBe('a'); // routes cached

    expect((await a.relocate({ mode: RelocationMode.RollingUpdate, targetApplicationVersion: 2, deadlineMs: 10_000 })).outcome).toBe(RelocationOutcome.Relocated);
    await eventually(() => a.status.safeToShutdown, 5000, 'safeToShutdown');

    const outcomes: Outcome[] = [];
    const requests: Promise<void>[] = [];
    const sent = new Map<string, number>(); // actor → one-way messages sent
    const sendSeq = (ref: ObjectRef) => {
      const id = (ref as { actor: string }).actor;
      const n = sent.get(id) ?? 0;
      sent.set(id, n + 1);
      c.send(ref, { op: 'seq', from: 'c', n });
    };
    const request = (ref: ObjectRef, tag: string) => {
      const o: Outcome = { tag: `${(ref as { actor: string }).actor}/${tag}`, sentAt: Date.now() };
      outcomes.push(o);
      requests.push(
        c.request(ref, { op: 'where' }, { timeoutMs: TIMEOUT_MS }).then(
          () => void (o.settledAt = Date.now()),
          (error: unknown) => void Object.assign(o, { error, settledAt: Date.now() }),
        ),
      );
    };

    let closing = false;
    onTransportClose = () => {
      if (closing) return;
      closing = true;
      // a's router is closed by now; c's routes for these actors still name a.
      for (const ref of fresh) {
        for (let k = 0; k < 3; k++) sendSeq(ref);
        request(ref, 'at-close');
      }
    };
    let stop = false;
    let round = 0;
    const traffic = (async () => {
      while (!stop) {
        for (const ref of streamed) sendSeq(ref);
        if (round++ % 3 === 0) for (const ref of streamed) request(ref, `r${round}`);
        await sleep(1);
      }
    })();
    await sleep(20);
    expect((await a.shutdown({ deadlineMs: 5000 })).outcome).toBe(TerminationOutcome.Stopped);
    expect(closing).toBe(true);
    // After the Shutdown, c keeps sending for a while (to the fresh actors too).
    for (let k = 0; k < 3; k++) for (const ref of fresh) sendSeq(ref);
    await sleep(150);
    stop = true;
    await traffic;

    // Every request settled well before its timeout, with its reply or an explicit shutdown/unavailable.
    await atMost(Promise.all(requests), AT_ONCE_MS + 1000);
    const late = outcomes.filter((o) => o.settledAt === undefined || o.settledAt - o.sentAt > AT_ONCE_MS).map((o) => o.tag);
    expect({ late: late.length, of: outcomes.length, first: late.slice(0, 5) }).toEqual({ late: 0, of: outcomes.length, first: [] });
    const wrong = outcomes.filter((o) => o.error !== undefined && !(o.error instanceof RequestError && (o.error.kind === 'shutdown' || o.error.kind === 'unavailable')));
    expect(wrong.map((o) => `${o.tag}: ${String(o.error)}`)).toEqual([]);

    // Every one-way message processed exactly once, in order, by the new owner b.
    const ledger = (ref: ObjectRef) => c.request(ref, { op: 'ledger' }, { timeoutMs: 5000 }) as Promise<Ledger>;
    const problems: Record<string, string> = {};
    for (const ref of [...streamed, ...fresh]) {
      const id = (ref as { actor: string }).actor;
      const state = await ledger(ref);
      const problem = checkSequence(state.seen.c, sent.get(id)!);
      if (problem) problems[id] = `${problem}; processed ${(state.seen.c ?? []).slice(0, 8).join(',')}…`;
      else expect(state.nodes).toEqual(['b']);
    }
    expect(problems).toEqual({});
  }, 30_000);
});
