/**
 * ClientServer against fake ports: a few hosts joined by an in-memory "network" whose descriptor snapshots, peer
 * states and host states the test sets by hand, and xstate's SimulatedClock for every timer (no sleeps).
 */
import { fakeComponentPorts } from '../test-ports';
import { SimulatedClock } from '../../clock';
import { AbortError, AdmissionError, ArgumentError, RemoteHandlerError, RequestError } from '../../errors';
import { silentLog } from '../../logger';
import { FrameworkRuntimeState } from '../../../vocabulary';
import type { NodeDescriptor, NodeRef, Stores } from '../../../stores/types';
import type { PeerInfo, PeerState, RuntimeMessage, Transport } from '../../../transport/types';
import { ClientServer } from './client-server';
import { CALL, CANCEL, REPLY } from './protocol';
import { seededRandom } from './select-one';

const S = FrameworkRuntimeState;
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
const CONNECT_WAIT_MS = 1000;

interface FakeNode {
  readonly id: string;
  readonly ref: NodeRef;
  state: FrameworkRuntimeState;
  /** The state this node's descriptor says (the host publishes it on each transition). */
  published: FrameworkRuntimeState;
  readonly cs: ClientServer;
  /** This node's view of the others: peer state per nodeId (absent = no record). */
  readonly peers: Map<string, PeerState>;
  /** Its descriptor snapshot (refreshed by net.discover()). */
  snapshot: NodeDescriptor[];
  /** Every message it sent. */
  readonly sent: { to: string; message: RuntimeMessage }[];
  readonly dialed: string[];
}

class Net {
  readonly clock = new SimulatedClock();
  readonly nodes = new Map<string, FakeNode>();

  add(id: string, options: { random?: () => number } = {}): FakeNode {
    const net = this;
    const ref = { nodeId: id, lifecycleGeneration: 1 };
    const node: FakeNode = {
      id,
      ref,
      state: S.Serving,
      published: S.Serving,
      peers: new Map(),
      snapshot: [],
      sent: [],
      dialed: [],
      cs: undefined as unknown as ClientServer,
    };
    const transport = {
      peers: () =>
        [...node.peers].map(([nodeId, state]): PeerInfo => ({ nodeId, lifecycleGeneration: 1, mesh: 'main', applicationVersion: 1, state, source: 'descriptor' })),
      connectEndpoint: (_mesh: string, endpoint: string) => {
        if (!endpoint.startsWith('fake://')) throw new TypeError(`connectEndpoint: ${endpoint} is not a fake endpoint`);
        node.dialed.push(endpoint);
      },
      peerAt: (_mesh: string, endpoint: string) => {
        const target = net.nodes.get(endpoint.slice('fake://'.length));
        return target && node.peers.has(target.id) ? target.ref : undefined;
      },
      registerManualPeer: () => undefined,
    } as unknown as Transport;
    const ports = fakeComponentPorts({
      self: ref,
      clock: this.clock,
      logger: silentLog,
      stores: { descriptors: { list: async () => net.descriptors() } } as unknown as Stores,
      state: () => node.state,
      descriptors: () => node.snapshot,
      send: (peer, message) => {
        if (node.peers.get(peer.nodeId) !== 'Ready' && node.peers.get(peer.nodeId) !== 'Draining') return false;
        node.sent.push({ to: peer.nodeId, message });
        const target = net.nodes.get(peer.nodeId);
        // Ordered and asynchronous, like the transport.
        queueMicrotask(() => target?.cs.onMessage(ref, message));
        return true;
      },
      isReady: (peer) => node.peers.get(peer.nodeId) === 'Ready',
      transport: () => transport,
    });
    (node as { cs: ClientServer }).cs = new ClientServer(ports, { primaryMesh: 'main', connectWaitMs: CONNECT_WAIT_MS, ...(options.random ? { random: options.random } : {}) });
    this.nodes.set(id, node);
    return node;
  }

  /** Everyone sees everyone Ready and the current descriptors. */
  connectAll(): void {
    for (const a of this.nodes.values()) for (const b of this.nodes.values()) if (a !== b) a.peers.set(b.id, 'Ready');
    this.discover();
  }

  descriptors(): NodeDescriptor[] {
    return [...this.nodes.values()].map((n) => {
      const described = n.cs.describe();
      return {
        nodeId: n.id,
        lifecycleGeneration: 1,
        applicationVersion: 1,
        state: n.published,
        endpoints: { main: `fake://${n.id}` },
        types: [],
        capacity: 100,
        load: 0,
        weight: 1,
        ...(described ? { components: { clientServer: described } } : {}),
      };
    });
  }

  discover(): void {
    const list = this.descriptors();
    for (const n of this.nodes.values()) {
      n.snapshot = list;
      n.cs.onDescriptors();
    }
  }

  /** A host state change: the host itself first, then its descriptor. */
  setState(node: FakeNode, state: FrameworkRuntimeState, publish = true): void {
    node.state = state;
    if (publish) node.published = state;
    node.cs.onStateChange();
  }
}

const settled = <T>(p: Promise<T>) => {
  const r: { done: boolean; value?: T; error?: unknown } = { done: false };
  p.then(
    (value) => Object.assign(r, { done: true, value }),
    (error: unknown) => Object.assign(r, { done: true, error }),
  );
  return r;
};

const replies = (node: FakeNode) => node.sent.filter((s) => s.message.t === REPLY);

/** A handler that waits until the test releases it, recording its signal. */
function gated() {
  const gates: { release: (v: unknown) => void; fail: (e: unknown) => void; signal: AbortSignal; from: string }[] = [];
  const handler = (_req: unknown, info: { signal: AbortSignal; from: string }) =>
    new Promise((release, fail) => gates.push({ release, fail, signal: info.signal, from: info.from }));
  return { gates, handler };
}

let net: Net;
beforeEach(() => {
  net = new Net();
});

/** Server `a` with a gated handler on channel `slow`, and client `c`; everyone Ready. */
async function slowPair() {
  const a = net.add('a');
  const c = net.add('c');
  const { gates, handler } = gated();
  const registration = await a.cs.serve('slow', handler);
  net.connectAll();
  return { a, c, gates, registration };
}

/** Server `a` of channel `work`, which client `c` knows from its descriptors but is still connecting to. */
async function connectingPair() {
  const a = net.add('a');
  const c = net.add('c');
  await a.cs.serve('work', () => 'a');
  net.discover();
  c.peers.set('a', 'Connecting');
  return { a, c };
}

/** Each call with these arguments fails with an ArgumentError naming the field. */
async function expectArgumentErrors(call: (...args: unknown[]) => Promise<unknown>, cases: [unknown[], string][]): Promise<void> {
  for (const [args, field] of cases) {
    const error = await call(...args).catch((e: unknown) => e);
    expect([args, error]).toEqual([args, expect.any(ArgumentError)]);
    expect([args, (error as ArgumentError).field]).toEqual([args, field]);
  }
}

describe('select-one', () => {
  test('spreads calls by weight (seeded random source)', async () => {
    const a = net.add('a');
    const b = net.add('b');
    const c = net.add('c', { random: seededRandom(42) });
    await a.cs.serve('work', () => 'a', { weight: 1 });
    await b.cs.serve('work', () => 'b', { weight: 3 });
    net.connectAll();
    const counts: Record<string, number> = { a: 0, b: 0 };
    const n = 2000;
    const results = await Promise.all(Array.from({ length: n }, () => c.cs.call('work', null)));
    for (const r of results) counts[r as string]!++;
    // Expected 500 / 1500; the seeded source makes this exact run repeatable, the bounds leave room for any seed.
    expect(counts.a! + counts.b!).toBe(n);
    expect(counts.b! / n).toBeGreaterThan(0.7);
    expect(counts.b! / n).toBeLessThan(0.8);
  });

  test('the calling host counts as a candidate when it serves; it is excluded when it is not Serving', async () => {
    const a = net.add('a', { random: seededRandom(1) });
    const b = net.add('b');
    await a.cs.serve('work', () => 'a');
    await b.cs.serve('work', () => 'b');
    net.connectAll();
    const first = await Promise.all(Array.from({ length: 200 }, () => a.cs.call('work', null)));
    expect(new Set(first)).toEqual(new Set(['a', 'b']));
    net.setState(a, S.Relocating);
    const later = await Promise.all(Array.from({ length: 50 }, () => a.cs.call('work', null)));
    expect(new Set(later)).toEqual(new Set(['b']));
  });

  test('a server chosen from a stale snapshot turns the call away and another server runs it', async () => {
    // random 0 always picks the first candidate: the local server would come first, so the client serves nothing.
    const a = net.add('a');
    const b = net.add('b');
    const c = net.add('c', { random: () => 0 });
    let ranOnA = 0;
    await a.cs.serve('work', () => ++ranOnA && 'a');
    await b.cs.serve('work', () => 'b');
    net.connectAll();
    // a enters Relocating; c's snapshot still says a is Serving.
    net.setState(a, S.Relocating, false);
    expect(await c.cs.call('work', null)).toBe('b');
    expect(ranOnA).toBe(0);
    const refusals = replies(a).map((r) => r.message as unknown as { ok: boolean; k?: string });
    expect(refusals).toEqual([expect.objectContaining({ ok: false, k: 'not-selectable' })]);
    // The same for a server that already sealed for Shutdown: the caller is not handed its shutdown result.
    net.setState(a, S.Draining, false);
    expect(await c.cs.call('work', null)).toBe('b');
    expect(replies(a)).toHaveLength(2);
    expect(ranOnA).toBe(0);
  });

  test('no server: unavailable at once (after one fresh descriptor read), naming the excluded ones', async () => {
    const a = net.add('a');
    const c = net.add('c');
    await a.cs.serve('work', () => 'a');
    net.connectAll();
    await expect(c.cs.call('other', null)).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringContaining("no server for channel 'other'") });
    net.setState(a, S.Relocated);
    net.discover();
    const error = await c.cs.call('work', null).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestError);
    expect(error).toMatchObject({ kind: 'unavailable', message: expect.stringContaining('1 Relocated') });
  });

  test('a server published after the snapshot is found by the fresh read', async () => {
    const a = net.add('a');
    const c = net.add('c');
    net.connectAll();
    await a.cs.serve('late', () => 'a'); // c's snapshot does not list it yet
    expect(await c.cs.call('late', null)).toBe('a');
  });

  test('a known server that is not connected yet: the call waits for it, then goes', async () => {
    const { a, c } = await connectingPair();
    a.peers.set('c', 'Ready');
    const call = settled(c.cs.call('work', null));
    await flush();
    expect(call.done).toBe(false);
    c.peers.set('a', 'Ready');
    c.cs.onPeerReady();
    await flush();
    expect(call).toEqual({ done: true, value: 'a' });
  });

  test('a known server that never connects: unavailable after the connect wait', async () => {
    const { c } = await connectingPair();
    const call = settled(c.cs.call('work', null, { timeoutMs: 10_000 }));
    await flush();
    net.clock.increment(CONNECT_WAIT_MS - 1);
    await flush();
    expect(call.done).toBe(false);
    net.clock.increment(1);
    await flush();
    expect(call.error).toMatchObject({ kind: 'unavailable' });
  });
});

describe('Node direct', () => {
  test('goes to exactly that node, never another; errors name why', async () => {
    const a = net.add('a');
    const b = net.add('b');
    const c = net.add('c');
    await a.cs.serve('work', (_r, info) => `a for ${info.from}`);
    await b.cs.serve('work', () => 'b');
    net.connectAll();
    for (let i = 0; i < 20; i++) expect(await c.cs.call('work', null, { node: 'a' })).toBe('a for c');
    await expect(c.cs.call('work', null, { node: 'c' })).rejects.toMatchObject({ kind: 'not-found' });
    await expect(c.cs.call('other', null, { node: 'a' })).rejects.toMatchObject({ kind: 'not-found', message: expect.stringContaining("does not serve channel 'other'") });
    await expect(c.cs.call('work', null, { node: 'nobody' })).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringContaining('not known here') });
  });

  test('per host state: Relocating runs it, Relocated refuses it (unavailable), Draining ends it with shutdown', async () => {
    const a = net.add('a');
    const c = net.add('c');
    let ran = 0;
    await a.cs.serve('work', () => ++ran);
    net.connectAll();
    net.setState(a, S.Relocating);
    expect(await c.cs.call('work', null, { node: 'a' })).toBe(1);
    net.setState(a, S.Relocated);
    await expect(c.cs.call('work', null, { node: 'a' })).rejects.toMatchObject({ kind: 'unavailable', message: expect.stringContaining('Relocated') });
    net.setState(a, S.Draining);
    await expect(c.cs.call('work', null, { node: 'a' })).rejects.toMatchObject({ kind: 'shutdown' });
    // The caller also knows it without asking once the peer told it that it sealed.
    c.peers.set('a', 'Draining');
    const sentBefore = c.sent.length;
    await expect(c.cs.call('work', null, { node: 'a' })).rejects.toMatchObject({ kind: 'shutdown' });
    expect(c.sent.length).toBe(sentBefore);
    expect(ran).toBe(1);
  });
});

describe('every call ends exactly once', () => {
  test('reply, handler error, unencodable reply', async () => {
    const a = net.add('a');
    const c = net.add('c');
    await a.cs.serve('ok', (req: { n: number }) => ({ n: req.n + 1, at: new Date(0) }));
    await a.cs.serve('throws', () => {
      throw new Error('boom');
    });
    await a.cs.serve('rejects', () => Promise.reject(new Error('later boom')));
    await a.cs.serve('bad-reply', () => ({ f: () => 1 }));
    net.connectAll();
    expect(await c.cs.call('ok', { n: 1 })).toEqual({ n: 2, at: new Date(0) });
    const thrown = await c.cs.call('throws', null).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(RemoteHandlerError);
    expect(thrown).toMatchObject({ kind: 'handler', message: 'boom' });
    await expect(c.cs.call('rejects', null)).rejects.toMatchObject({ kind: 'handler', message: 'later boom' });
    await expect(c.cs.call('bad-reply', null)).rejects.toMatchObject({ kind: 'handler', message: expect.stringContaining('reply.f') });
  });

  test('timeout on the simulated clock; the handler is told through its signal; its late reply is dropped', async () => {
    const { a, c, gates } = await slowPair();
    const call = settled(c.cs.call('slow', null, { timeoutMs: 500 }));
    await flush();
    expect(gates).toHaveLength(1);
    net.clock.increment(499);
    await flush();
    expect(call.done).toBe(false);
    net.clock.increment(1);
    await flush();
    expect(call.error).toBeInstanceOf(RequestError);
    expect(call.error).toMatchObject({ kind: 'timeout' });
    expect(c.sent.filter((s) => s.message.t === CANCEL)).toHaveLength(1);
    expect(gates[0]!.signal.aborted).toBe(true);
    gates[0]!.release('late');
    await flush();
    expect(replies(a)).toHaveLength(1); // the handler's reply still goes out once, and the caller drops it
  });

  test('caller abort ends only its wait with AbortError', async () => {
    const { c, gates } = await slowPair();
    const controller = new AbortController();
    const call = settled(c.cs.call('slow', null, { signal: controller.signal }));
    await flush();
    controller.abort();
    await flush();
    expect(call.error).toBeInstanceOf(AbortError);
    expect(gates[0]!.signal.aborted).toBe(true);
    const pre = new AbortController();
    pre.abort();
    await expect(c.cs.call('slow', null, { signal: pre.signal })).rejects.toBeInstanceOf(AbortError);
    expect(gates).toHaveLength(1); // an already-aborted signal starts nothing
  });

  test('connection loss ends the call unavailable; the server handler is told', async () => {
    const { a, c, gates } = await slowPair();
    const call = settled(c.cs.call('slow', null));
    await flush();
    c.cs.onConnectionLost(a.ref);
    a.cs.onConnectionLost(c.ref);
    await flush();
    expect(call.error).toMatchObject({ kind: 'unavailable', message: expect.stringContaining('connection to a was lost') });
    expect(gates[0]!.signal.aborted).toBe(true);
  });

  test('server shutdown mid-handler: drain waits, and at the deadline the caller gets shutdown once; the late reply is never sent', async () => {
    const { a, c, gates } = await slowPair();
    const first = settled(c.cs.call('slow', 'first'));
    const second = settled(c.cs.call('slow', 'second'));
    await flush();
    expect(gates).toHaveLength(2);
    net.setState(a, S.Draining);
    const deadline = new AbortController();
    const drained = settled(a.cs.drain(deadline.signal));
    // Admission is closed: a new call ends with shutdown, the accepted ones keep running.
    await expect(c.cs.call('slow', 'third', { node: 'a' })).rejects.toMatchObject({ kind: 'shutdown' });
    gates[0]!.release('done-1');
    await flush();
    expect(first).toEqual({ done: true, value: 'done-1' });
    expect(drained.done).toBe(false);
    deadline.abort();
    await flush();
    expect(drained.done).toBe(true);
    expect(second.error).toMatchObject({ kind: 'shutdown' });
    expect(gates[1]!.signal.aborted).toBe(true);
    gates[1]!.release('too late');
    await flush();
    const sent = replies(a).map((r) => (r.message as unknown as { id: string }).id);
    expect(sent).toHaveLength(3); // first's reply, third's refusal, second's shutdown — one per call
    expect(new Set(sent).size).toBe(3);
  });

  test('the calling host drains its own submitted calls, and ends what is left with shutdown at close', async () => {
    const { a, c, gates } = await slowPair();
    const call = settled(c.cs.call('slow', null));
    await flush();
    net.setState(c, S.Draining);
    await expect(c.cs.call('slow', null)).rejects.toMatchObject({ kind: 'shutdown' });
    const drained = settled(c.cs.drain(new AbortController().signal));
    await flush();
    expect(drained.done).toBe(false);
    gates[0]!.release('reply');
    await flush();
    expect(call).toEqual({ done: true, value: 'reply' });
    expect(drained.done).toBe(true);
    const late = settled(a.cs.call('slow', null));
    await flush();
    await a.cs.close();
    await flush();
    expect(late.error).toMatchObject({ kind: 'shutdown' });
  });

  test('local calls are asynchronous and copied both ways', async () => {
    const a = net.add('a');
    net.connectAll();
    const seen: unknown[] = [];
    await a.cs.serve('copy', (req: { list: number[] }) => {
      seen.push(req);
      req.list.push(99);
      return req;
    });
    const request = { list: [1] };
    const pending = a.cs.call('copy', request);
    request.list.push(2); // after the call: not seen by the handler
    expect(seen).toHaveLength(0); // the handler has not run inside the call
    const reply = (await pending) as { list: number[] };
    expect(reply).toEqual({ list: [1, 99] });
    expect(request.list).toEqual([1, 2]);
    expect(reply).not.toBe(seen[0]);
  });
});

describe('registrations and arguments', () => {
  test('serve validates its arguments and changes nothing on error', async () => {
    const a = net.add('a');
    const bad: [unknown[], string][] = [
      [['', () => 1], 'channel'],
      [['has space', () => 1], 'channel'],
      [['x'.repeat(300), () => 1], 'channel'],
      [[42, () => 1], 'channel'],
      [['ok', 'not a function'], 'handler'],
      [['ok', () => 1, { weight: 0 }], 'options.weight'],
      [['ok', () => 1, { weight: Number.POSITIVE_INFINITY }], 'options.weight'],
      [['ok', () => 1, { wieght: 2 }], 'options.wieght'],
      [['ok', () => 1, 'heavy'], 'options'],
    ];
    await expectArgumentErrors((...args) => (a.cs.serve as (...x: unknown[]) => Promise<unknown>)(...args), bad);
    expect(a.cs.describe()).toBeUndefined();
    await a.cs.serve('ok', () => 1);
    await expect(a.cs.serve('ok', () => 2)).rejects.toMatchObject({ field: 'channel', message: expect.stringContaining('already served') });
    net.setState(a, S.Draining);
    await expect(a.cs.serve('other', () => 1)).rejects.toBeInstanceOf(AdmissionError);
    expect(a.cs.describe()).toEqual({ servers: [{ channel: 'ok', weight: 1 }] });
  });

  test('call validates its arguments before anything is sent', async () => {
    const a = net.add('a');
    const c = net.add('c');
    await a.cs.serve('work', () => 1);
    net.connectAll();
    const bad: [unknown[], string][] = [
      [['bad channel!', 1], 'channel'],
      [['work', { f: () => 1 }], 'request.f'],
      [['work', 1, { node: '' }], 'options.node'],
      [['work', 1, { timeoutMs: 0 }], 'options.timeoutMs'],
      [['work', 1, { timeoutMs: '5' }], 'options.timeoutMs'],
      [['work', 1, { signal: {} }], 'options.signal'],
      [['work', 1, { nodes: 'a' }], 'options.nodes'],
    ];
    await expectArgumentErrors((...args) => (c.cs.call as (...x: unknown[]) => Promise<unknown>)(...args), bad);
    expect(c.sent).toEqual([]);
  });

  test('closing a registration: the descriptor drops it, new calls are refused, close resolves once its accepted calls replied', async () => {
    const { a, c, gates, registration } = await slowPair();
    const accepted = settled(c.cs.call('slow', null, { node: 'a' }));
    await flush();
    const closed = settled(registration.close());
    await flush();
    expect(a.cs.describe()).toBeUndefined();
    expect(closed.done).toBe(false);
    await expect(c.cs.call('slow', null, { node: 'a' })).rejects.toMatchObject({ kind: 'not-found' });
    gates[0]!.release('last');
    await flush();
    expect(accepted).toEqual({ done: true, value: 'last' });
    expect(closed.done).toBe(true);
    expect(registration.close()).toBe(registration.close()); // idempotent
    await a.cs.serve('slow', () => 'again'); // the channel can be served again
    expect(await c.cs.call('slow', null, { node: 'a' })).toBe('again');
  });

  test('manual client endpoint: registration is reported at once; calls on its channel go to that node only', async () => {
    const a = net.add('a');
    const b = net.add('b');
    const c = net.add('c', { random: seededRandom(7) });
    await a.cs.serve('work', () => 'a');
    await b.cs.serve('work', () => 'b');
    net.discover();
    expect(c.cs.manualTopology()).toEqual([]);
    expect(() => c.cs.registerManualClientEndpoint('work', 'ws://elsewhere:1')).toThrow(expect.objectContaining({ field: 'endpoint' }));
    expect(() => c.cs.registerManualClientEndpoint('bad channel', 'fake://b')).toThrow(expect.objectContaining({ field: 'channel' }));
    expect(c.cs.manualTopology()).toEqual([]);
    c.cs.registerManualClientEndpoint('work', 'fake://b');
    c.cs.registerManualClientEndpoint('work', 'fake://b'); // idempotent
    expect(c.dialed).toEqual(['fake://b']);
    expect(c.cs.manualTopology()).toEqual(["ClientServer client endpoint fake://b (channel 'work')"]);
    // Not connected yet: the call waits for the endpoint's connection.
    const first = settled(c.cs.call('work', null));
    await flush();
    expect(first.done).toBe(false);
    net.connectAll();
    c.cs.onPeerReady();
    await flush();
    expect(first).toEqual({ done: true, value: 'b' });
    const results = await Promise.all(Array.from({ length: 50 }, () => c.cs.call('work', null)));
    expect(new Set(results)).toEqual(new Set(['b']));
    // Other channels still use discovery.
    await a.cs.serve('other', () => 'a-other');
    net.discover();
    expect(await c.cs.call('other', null)).toBe('a-other');
  });

  test('malformed messages are dropped without an answer', async () => {
    const a = net.add('a');
    net.connectAll();
    await a.cs.serve('work', () => 1);
    for (const m of [
      { t: CALL, id: 1, ch: 'work', b: new Uint8Array(), d: 0 },
      { t: CALL, id: 'x', ch: 'bad channel', b: new Uint8Array(), d: 0 },
      { t: CALL, id: 'x', ch: 'work', b: 'text', d: 0 },
      { t: CALL, id: 'x', ch: 'work', b: new Uint8Array(), d: 2 },
      { t: REPLY, id: 'x', ok: false, k: 'weird', e: '' },
      { t: CANCEL },
    ])
      a.cs.onMessage({ nodeId: 'c', lifecycleGeneration: 1 }, m as unknown as RuntimeMessage);
    await flush();
    expect(a.sent).toEqual([]);
  });
});
