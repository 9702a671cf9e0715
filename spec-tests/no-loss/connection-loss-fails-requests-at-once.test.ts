/**
 * A connection is lost while messages are on it (DESIGN.md "Values and delivery"). Host a cuts its connection to
 * client c (Transport.disconnect, as a network fault would; the dialing side reconnects) at the moment it receives
 * one message of a burst from c. What c sent over that connection and what c sends right after the cut (before c
 * has seen the connection close) must not vanish: every request ends at once — with its reply, or RequestError
 * `unavailable` — far before its 20 s timeout, and the one-way sends issued after the cut are re-routed and
 * processed exactly once, in order.
 */
import { RequestError, type ObjectRef } from '../../runtime';
import type { Transport } from '../../transport/types';
import { eventually, makeStack, STACKS, type Stack } from '../support/stack';
import { ALL_TYPES, type Ledger } from '../support/workload';
import { atMost, observedTransport, quietLog } from './support';
import { decodeValue } from '../../runtime/codec';

const { log } = quietLog();

const TIMEOUT_MS = 20_000;
const AT_ONCE_MS = 2000;
const CUT = 3; // the one-way message whose arrival cuts the connection
const BEFORE = 10; // one-way + request pairs in the first burst
const AFTER = 10; // one-way + request pairs sent right after the cut

interface Outcome {
  tag: string;
  sentAt: number;
  settledAt?: number;
  value?: unknown;
  error?: unknown;
}

describe.each(STACKS)('connection loss on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await stack.close();
  });

  test('requests sent over a lost connection end at once (reply or unavailable), and one-way sends not yet written are re-routed, not dropped', async () => {
    const outcomes: Outcome[] = [];
    const ref: ObjectRef = { actor: 'x' };
    let cutAt = 0;
    let onCut = () => undefined as void;
    const box: { transport?: Transport } = {};
    const a = await stack.host({
      nodeId: 'a',
      applicationVersion: 1,
      types: ALL_TYPES,
      log,
      transport: observedTransport((transport, from, message) => {
        // Envelope bodies travel encoded by the runtime's one codec (runtime/codec.ts).
        const bytes = (message as { env?: { body?: Uint8Array } }).env?.body;
        const body = bytes ? (decodeValue(bytes) as { op?: string; from?: string; n?: number } | undefined) : undefined;
        if (message.t === 'msg' && body?.op === 'seq' && body.from === 'c' && body.n === CUT && !cutAt) {
          cutAt = Date.now();
          transport.disconnect!(from); // the fault: this connection is gone from here on
          onCut();
        }
      }, box),
    });
    const c = await stack.host({ nodeId: 'c', applicationVersion: 1, types: ALL_TYPES, log });
    await a.createActor('Counter', 'x');
    await eventually(async () => (await c.request(ref, { op: 'where' }, { timeoutMs: 500 }).catch(() => '')) === 'a', 5000, 'c reaches x on a');

    const request = (tag: string, n: number) => {
      const o: Outcome = { tag, sentAt: Date.now() };
      outcomes.push(o);
      return c.request(ref, { op: 'seq', from: 'r', n }, { timeoutMs: TIMEOUT_MS }).then(
        (value) => void Object.assign(o, { value, settledAt: Date.now() }),
        (error: unknown) => void Object.assign(o, { error, settledAt: Date.now() }),
      );
    };
    const pending: Promise<void>[] = [];
    // Runs inside a's receive path, synchronously after the cut: c has not seen the close yet.
    onCut = () => {
      for (let i = 0; i < AFTER; i++) {
        c.send(ref, { op: 'seq', from: 'c', n: BEFORE + i });
        pending.push(request(`after-${i}`, BEFORE + i));
      }
    };
    for (let i = 0; i < BEFORE; i++) {
      c.send(ref, { op: 'seq', from: 'c', n: i });
      pending.push(request(`before-${i}`, i));
    }

    // The after-cut requests join `pending` only when the cut happens: wait for every request issued so far.
    const allSettled = async () => {
      for (let seen = 0; seen < pending.length; ) {
        const batch = pending.slice(seen);
        seen = pending.length;
        await Promise.all(batch);
      }
    };
    await atMost(allSettled(), AT_ONCE_MS + 1000);
    expect(cutAt).toBeGreaterThan(0);
    // Every request settled, well before its timeout, with its reply or `unavailable`.
    const late = outcomes.filter((o) => o.settledAt === undefined || o.settledAt - o.sentAt > AT_ONCE_MS).map((o) => o.tag);
    expect(late).toEqual([]);
    const wrongKind = outcomes.filter((o) => o.error !== undefined && !(o.error instanceof RequestError && o.error.kind === 'unavailable'));
    expect(wrongKind.map((o) => `${o.tag}: ${String(o.error)}`)).toEqual([]);

    // One-way sends issued after the cut are re-routed (over the re-established connection) and run once, in order.
    const ledger = () => c.request(ref, { op: 'ledger' }, { timeoutMs: 5000 }) as Promise<Ledger>;
    const afterCut = (seen: number[] = []) => seen.filter((n) => n >= BEFORE);
    await eventually(async () => afterCut((await ledger()).seen.c).length >= AFTER, 5000, 'one-way sends after the cut processed').catch(() => undefined);
    const seen = (await ledger()).seen.c ?? [];
    expect(afterCut(seen)).toEqual(Array.from({ length: AFTER }, (_, i) => BEFORE + i));
    expect(new Set(seen).size).toBe(seen.length); // none twice
    expect(seen.slice(0, CUT + 1)).toEqual([0, 1, 2, 3]); // delivered before the cut, once
    // A request that ran replied with its own value.
    for (const o of outcomes) if (o.settledAt !== undefined && o.error === undefined) expect(o.value).toBe(Number(o.tag.split('-')[1]) + (o.tag.startsWith('after') ? BEFORE : 0));
  }, 30_000);
});
