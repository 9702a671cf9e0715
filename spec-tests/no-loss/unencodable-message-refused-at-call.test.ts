/**
 * Issue item 4 / DESIGN.md "Values and delivery": a value the codec refuses, or one over the frame limit, is refused
 * at the call with an ArgumentError naming the path — never a crash, never a silent drop, no pending request left
 * behind — whether the route is cached or not, local or remote. A reply that cannot be encoded ends its request at
 * once with a RequestError saying so. BigInt, which used to crash the process on the wire, now simply round-trips.
 */
import { ArgumentError, defineActor, MAX_VALUE_BYTES, recreateOnRelocation, RequestError, type FrameworkRuntime } from '../../runtime';
import type { Host } from '../../runtime/host';
import { makeStack, STACKS, type Stack } from '../support/stack';

type Msg = { op: 'echo'; v?: unknown } | { op: 'fnReply' } | { op: 'bigReply' } | { op: 'count' };

let received = 0;
const Echo = defineActor<{ n: number }>({
  type: 'Echo',
  relocation: recreateOnRelocation(),
  create: () => ({ n: 0 }),
  receive: (state, m: Msg) => {
    received++;
    if (m.op === 'fnReply') return { ok: 1, nested: [{ f: () => 1 }] };
    if (m.op === 'bigReply') return { blob: Buffer.alloc(MAX_VALUE_BYTES + 1) };
    if (m.op === 'count') return ++state.n;
    return m.v;
  },
});

const pendingOf = (host: FrameworkRuntime) => (host as unknown as Host).router.pendingRequests;

/** Runs `call` and returns the error it threw or the rejection of the promise it returned (at once). */
async function refusalOf(call: () => unknown): Promise<unknown> {
  try {
    const result = call();
    if (result instanceof Promise) await result;
  } catch (error) {
    return error;
  }
  return undefined;
}

const refused: [string, () => unknown, string][] = [
  ['a function', () => ({ op: 'echo', v: { f: () => 1 } }), 'message.v.f'],
  ['a function deep in a list', () => ({ op: 'echo', list: [0, 1, { f() {} }] }), 'message.list[2].f'],
  ['a symbol', () => ({ op: 'echo', v: Symbol('s') }), 'message.v'],
  ['a Promise', () => ({ op: 'echo', v: Promise.resolve(1) }), 'message.v'],
  ['a value over the frame limit', () => ({ op: 'echo', v: Buffer.alloc(MAX_VALUE_BYTES + 1) }), 'message'],
];

describe.each(STACKS)('unencodable values on %s', (stackName) => {
  let stack: Stack;
  let caller: FrameworkRuntime;
  let owner: FrameworkRuntime;

  beforeAll(async () => {
    stack = await makeStack(stackName);
    caller = await stack.host({ nodeId: 'caller', applicationVersion: 1, types: [Echo] });
    owner = await stack.host({ nodeId: 'owner', applicationVersion: 1, types: [Echo] });
    for (const id of ['e-uncached', 'e-cached', 'e-local', 'e1', 'e-reply']) await owner.createActor('Echo', id);
  }, 30_000);

  afterAll(() => stack.close(), 30_000);

  test.each(refused)('%s is refused at the call (send and request; uncached, cached and local routes)', async (_name, value, path) => {
    const routes: [string, FrameworkRuntime, string][] = [
      ['uncached', caller, 'e-uncached'],
      ['cached', caller, 'e-cached'],
      ['local', owner, 'e-local'],
    ];
    // Cache one route (a successful request resolves and caches the owner); forget the other.
    (caller as unknown as Host).router.invalidate('a:e-uncached');
    expect(await caller.request({ actor: 'e-cached' }, { op: 'echo', v: 1 })).toBe(1);
    const before = received;
    for (const [route, host, id] of routes) {
      const sendError = await refusalOf(() => host.send({ actor: id }, value()));
      expect({ route, send: sendError instanceof ArgumentError, field: (sendError as ArgumentError).field }).toEqual({ route, send: true, field: path });
      const requestError = await refusalOf(() => host.request({ actor: id }, value(), { timeoutMs: 20_000 }));
      expect({ route, request: requestError instanceof ArgumentError, field: (requestError as ArgumentError).field }).toEqual({ route, request: true, field: path });
      expect({ route, pending: pendingOf(host) }).toEqual({ route, pending: 0 });
    }
    // The process carries on: the same hosts and routes still deliver, and nothing refused was delivered.
    expect(await caller.request({ actor: 'e-uncached' }, { op: 'count' })).toBeGreaterThan(0);
    expect(await owner.request({ actor: 'e-local' }, { op: 'count' })).toBeGreaterThan(0);
    expect(received - before).toBe(2);
  });

  test("the issue's example: { v: 1n } to an Actor on another host, uncached and cached, now round-trips", async () => {
    caller.send({ actor: 'e1' }, { v: 1n });
    expect(await caller.request({ actor: 'e1' }, { op: 'echo', v: { v: 1n } })).toEqual({ v: 1n });
    caller.send({ actor: 'e1' }, { v: 2n ** 70n });
    expect(await caller.request({ actor: 'e1' }, { op: 'echo', v: 2n ** 70n })).toBe(2n ** 70n);
    expect(pendingOf(caller)).toBe(0);
  });

  test.each([
    ['a function', 'fnReply', /reply could not be encoded.*reply\.nested\[0\]\.f/],
    ['over the frame limit', 'bigReply', /reply could not be encoded.*over the \d+-byte limit/],
  ] as const)('a reply with %s ends the request at once with a RequestError (remote and local)', async (_name, op, message) => {
    for (const host of [caller, owner]) {
      const started = Date.now();
      const error = await refusalOf(() => host.request({ actor: 'e-reply' }, { op }, { timeoutMs: 20_000 }));
      expect(error).toBeInstanceOf(RequestError);
      expect((error as RequestError).kind).toBe('handler');
      expect((error as Error).message).toMatch(message);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(pendingOf(host)).toBe(0);
    }
    expect(await caller.request({ actor: 'e-reply' }, { op: 'count' })).toBeGreaterThan(0);
  });
});
