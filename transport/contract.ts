/**
 * The one Transport contract suite (types.ts), run on ws (real loopback sockets) and on the in-process transport.
 * Imports jest from @jest/globals so the build (which has no jest types) still compiles this file.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { codecTestHooks } from './frames';
import { PayloadRejectedError, TransportClosedError } from './errors';
import type { NodeDescriptor, NodeRef } from '../vocabulary';
import type { MeshConfig, PeerInfo, RuntimeMessage, Transport, TransportDiagnostics, TransportOptions } from './types';

export interface ContractHarness {
  readonly kind: 'ws' | 'memory';
  /** Mesh config for a mesh name (ws: listen on 127.0.0.1 port 0). */
  mesh(name: string, extra?: Partial<MeshConfig>): MeshConfig;
  /** A mesh config whose endpoint is known before start (ws: a free fixed port), for "peer appears later". */
  reserve(self: NodeRef, name: string): Promise<{ mesh: MeshConfig; endpoint: string }>;
  create(options: TransportOptions): Transport & { diagnostics(): TransportDiagnostics };
}

type Event = { kind: 'message'; from: NodeRef; message: RuntimeMessage } | { kind: 'payload'; from: NodeRef; id: string; ok: boolean; bytes?: Buffer; error?: Error };

export interface TestNode {
  readonly ref: NodeRef;
  readonly transport: Transport & { diagnostics(): TransportDiagnostics };
  readonly events: Event[];
  readonly peerEvents: PeerInfo[];
  /** Messages and peer states in the order the handlers saw them: `msg:<t>`, `peer:<nodeId>:<state>`. */
  readonly timeline: string[];
  endpoints: Record<string, string>;
  descriptor(): NodeDescriptor;
  messages(): RuntimeMessage[];
}

const FAST = { handshakeTimeoutMs: 1500, reconnectMinMs: 20, reconnectMaxMs: 200, closeGraceMs: 500 } as const;

export async function waitFor(predicate: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const ticks = (n = 20): Promise<void> => new Promise((r) => setTimeout(r, n));

export function describeTransportContract(h: ContractHarness): void {
  describe(`Transport contract (${h.kind})`, () => {
    const live: TestNode[] = [];

    afterEach(async () => {
      codecTestHooks.mutateChunkData = undefined;
      await Promise.all(live.splice(0).map((n) => n.transport.close()));
    });

    interface NodeOpts {
      meshes?: MeshConfig[];
      appVersion?: number;
      budget?: number;
      chunkBytes?: number;
      start?: boolean;
    }

    async function node(nodeId: string, gen = 1, opts: NodeOpts = {}): Promise<TestNode> {
      const events: Event[] = [];
      const peerEvents: PeerInfo[] = [];
      const timeline: string[] = [];
      const ref = { nodeId, lifecycleGeneration: gen };
      const transport = h.create({
        self: { ...ref, applicationVersion: opts.appVersion ?? 1 },
        meshes: opts.meshes ?? [h.mesh('main')],
        inFlightPayloadBudgetBytes: opts.budget,
        chunkBytes: opts.chunkBytes ?? 64 * 1024,
        timing: FAST,
        handlers: {
          onMessage: (from, message) => {
            events.push({ kind: 'message', from, message });
            timeline.push(`msg:${message.t}`);
          },
          onPayload: (from, id, r) => events.push(r.ok ? { kind: 'payload', from, id, ok: true, bytes: r.bytes } : { kind: 'payload', from, id, ok: false, error: r.error }),
          onPeer: (p) => {
            peerEvents.push(p);
            timeline.push(`peer:${p.nodeId}:${p.state}`);
          },
        },
      });
      const n: TestNode = {
        ref,
        transport,
        events,
        peerEvents,
        timeline,
        endpoints: {},
        descriptor: () => ({
          nodeId,
          lifecycleGeneration: gen,
          applicationVersion: opts.appVersion ?? 1,
          state: 1,
          endpoints: n.endpoints,
          types: [],
          capacity: 100,
          load: 0,
          weight: 1,
        }),
        messages: () => events.flatMap((e) => (e.kind === 'message' ? [e.message] : [])),
      };
      live.push(n);
      if (opts.start !== false) n.endpoints = await transport.start();
      return n;
    }

    function discover(nodes: TestNode[]): void {
      const ds = nodes.map((n) => n.descriptor());
      for (const n of nodes) n.transport.updatePeers(ds);
    }

    const ready = (a: TestNode, b: TestNode): boolean => a.transport.isReadyOnEveryMesh(b.ref) && b.transport.isReadyOnEveryMesh(a.ref);
    const stateOf = (a: TestNode, b: NodeRef, mesh = 'main'): string | undefined =>
      a.transport.peers(mesh).find((p) => p.nodeId === b.nodeId && p.lifecycleGeneration === b.lifecycleGeneration)?.state;

    async function pair(opts: NodeOpts = {}): Promise<[TestNode, TestNode]> {
      const a = await node('a', 1, opts);
      const b = await node('b', 1, opts);
      discover([a, b]);
      await waitFor(() => ready(a, b), 'a and b Ready');
      return [a, b];
    }

    it('Hello → Admit → Ready between two nodes found by descriptors', async () => {
      const [a, b] = await pair();
      expect(a.transport.peers('main')).toEqual([{ nodeId: 'b', lifecycleGeneration: 1, mesh: 'main', applicationVersion: 1, state: 'Ready', source: 'descriptor' }]);
      expect(b.transport.peers()).toEqual([{ nodeId: 'a', lifecycleGeneration: 1, mesh: 'main', applicationVersion: 1, state: 'Ready', source: 'descriptor' }]);
      // the smaller run dials: a went Connecting → Admitted → Ready, b saw Admitted → Ready
      expect(a.peerEvents.map((p) => p.state)).toEqual(['Connecting', 'Admitted', 'Ready']);
      expect(b.peerEvents.map((p) => p.state)).toEqual(['Admitted', 'Ready']);
      expect(a.transport.hasManualPeers()).toBe(false);
      expect(a.transport.send(b.ref, { t: 'hi' })).toBe(true);
      expect(a.transport.send({ nodeId: 'b', lifecycleGeneration: 2 }, { t: 'hi' })).toBe(false);
      await waitFor(() => b.messages().length === 1, 'message');
      expect(b.events[0]).toEqual({ kind: 'message', from: a.ref, message: { t: 'hi' } });
    });

    it('three nodes: every pair Ready over exactly one connection', async () => {
      const nodes = [await node('n1'), await node('n2'), await node('n3')];
      discover(nodes);
      await waitFor(() => nodes.every((x) => nodes.every((y) => x === y || x.transport.isReadyOnEveryMesh(y.ref))), 'all pairs Ready');
      for (const n of nodes) expect(n.transport.diagnostics().openConnections).toBe(2);
      expect(nodes[2]!.transport.peers().map((p) => p.nodeId).sort()).toEqual(['n1', 'n2']);
    });

    it('two meshes: Ready must hold on every mesh', async () => {
      const a = await node('a', 1, { meshes: [h.mesh('main'), h.mesh('aux')] });
      const b = await node('b', 1, { meshes: [h.mesh('main'), h.mesh('aux')] });
      const c = await node('c', 1, { meshes: [h.mesh('main')] });
      discover([a, b, c]);
      await waitFor(() => ready(a, b) && stateOf(a, c.ref) === 'Ready' && c.transport.isReadyOnEveryMesh(a.ref), 'meshes Ready');
      expect(a.transport.peers('aux').map((p) => p.nodeId)).toEqual(['b']);
      expect(a.transport.peers().length).toBe(3);
      expect(a.transport.isReadyOnEveryMesh(c.ref)).toBe(false); // c is not on aux
      expect(b.transport.diagnostics().openConnections).toBe(3);
    });

    it('keeps the order of 10k messages in both directions', async () => {
      const [a, b] = await pair();
      const N = 10_000;
      for (let i = 0; i < N; i++) {
        a.transport.send(b.ref, { t: 'seq', i, pad: 'x'.repeat(i % 50) });
        b.transport.send(a.ref, { t: 'seq', i });
        if (i % 1000 === 999) await new Promise((r) => setImmediate(r));
      }
      await waitFor(() => b.messages().length === N && a.messages().length === N, '10k messages', 15000);
      expect(b.messages().map((m) => m.i)).toEqual(Array.from({ length: N }, (_, i) => i));
      expect(a.messages().map((m) => m.i)).toEqual(Array.from({ length: N }, (_, i) => i));
    });

    it('payload round trip: chunks reassembled, sha256 checked, lease released, ordered before later messages', async () => {
      const [a, b] = await pair({ budget: 4 * 1024 * 1024 });
      const bytes = Buffer.alloc(1024 * 1024 + 17);
      for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31) & 0xff;
      a.transport.send(b.ref, { t: 'before' });
      const lease = await a.transport.acquireBudget(b.ref, bytes.length);
      await a.transport.sendPayload(b.ref, 'p1', bytes, lease);
      a.transport.send(b.ref, { t: 'after' });
      await waitFor(() => b.messages().length === 2, 'after message');
      expect(b.events.map((e) => (e.kind === 'message' ? e.message.t : `payload:${e.id}`))).toEqual(['before', 'payload:p1', 'after']);
      const p = b.events[1]!;
      expect(p.kind === 'payload' && p.ok && p.bytes!.equals(bytes)).toBe(true);
      // the intake ack released the lease: the whole budget is free again
      const all = await a.transport.acquireBudget(b.ref, 4 * 1024 * 1024);
      all.release();
      lease.release(); // idempotent
      // empty payload and a payload larger than the whole budget (charged at the budget)
      await a.transport.sendPayload(b.ref, 'empty', Buffer.alloc(0), await a.transport.acquireBudget(b.ref, 0));
      const big = Buffer.alloc(5 * 1024 * 1024, 7);
      await a.transport.sendPayload(b.ref, 'big', big, await a.transport.acquireBudget(b.ref, big.length));
      await waitFor(() => b.events.length === 5, 'two more payloads');
      expect(b.events.slice(3).map((e) => e.kind === 'payload' && e.ok && e.bytes!.length)).toEqual([0, big.length]);
    });

    it('checksum failure: a corrupted chunk fails the payload, the connection carries on', async () => {
      const [a, b] = await pair();
      codecTestHooks.mutateChunkData = (id, index, data) => {
        if (id !== 'bad' || index !== 1) return undefined;
        const copy = Buffer.from(data);
        copy[3] = copy[3]! ^ 0xff;
        return copy;
      };
      const bytes = Buffer.alloc(200 * 1024, 1);
      const lease = await a.transport.acquireBudget(b.ref, bytes.length);
      await expect(a.transport.sendPayload(b.ref, 'bad', bytes, lease)).rejects.toBeInstanceOf(PayloadRejectedError);
      const e = b.events.find((x) => x.kind === 'payload');
      expect(e).toMatchObject({ kind: 'payload', id: 'bad', ok: false });
      expect((e as { error: Error }).error.message).toMatch(/sha256/);
      a.transport.send(b.ref, { t: 'still-here' });
      await waitFor(() => b.messages().length === 1, 'message after failed payload');
      expect(a.transport.diagnostics().protocolErrors + b.transport.diagnostics().protocolErrors).toBe(0);
    });

    it('budget: a second acquire waits until the first is released (FIFO), abort rejects only the waiter', async () => {
      const [a, b] = await pair({ budget: 1000 });
      const first = await a.transport.acquireBudget(b.ref, 800);
      let second: unknown;
      const p2 = a.transport.acquireBudget(b.ref, 500).then((l) => (second = l));
      const ac = new AbortController();
      const aborted = a.transport.acquireBudget(b.ref, 100, ac.signal);
      const p4 = a.transport.acquireBudget(b.ref, 100); // FIFO: waits behind the 500 even though 100 fits
      let fourth = false;
      void p4.then(() => (fourth = true));
      await ticks();
      expect(second).toBeUndefined();
      expect(fourth).toBe(false);
      ac.abort();
      await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
      first.release();
      first.release();
      await p2;
      await p4;
      expect(second).toBeDefined();
      // grow waits for room too
      const l4 = await p4;
      const growing = l4.grow(401);
      let grown = false;
      void growing.then(() => (grown = true));
      await ticks();
      expect(grown).toBe(false);
      (second as { release(): void }).release();
      await growing;
      expect(l4.bytes).toBe(501);
    });

    it('seal: peers see Draining, no new admission, no Hello, traffic on admitted connections goes on', async () => {
      const z = await node('z');
      const b = await node('b');
      discover([z, b]);
      await waitFor(() => ready(z, b), 'Ready');
      z.transport.seal();
      z.transport.seal();
      await waitFor(() => stateOf(b, z.ref) === 'Draining', 'b sees z Draining');
      expect(b.transport.isReadyOnEveryMesh(z.ref)).toBe(false);
      // accepted work still flows both ways
      expect(b.transport.send(z.ref, { t: 'late' })).toBe(true);
      expect(z.transport.send(b.ref, { t: 'late-back' })).toBe(true);
      await waitFor(() => z.messages().length === 1 && b.messages().length === 1, 'traffic after seal');
      // a new node dials z: refused (no Admit), recorded as Draining, never Admitted
      const a = await node('a');
      discover([z, b, a]);
      await waitFor(() => stateOf(a, z.ref) === 'Draining', 'a learns z is Draining');
      await waitFor(() => ready(a, b), 'a and b still admit each other');
      expect(a.peerEvents.filter((p) => p.nodeId === 'z').map((p) => p.state)).not.toContain('Admitted');
      expect(z.transport.peers().map((p) => p.nodeId)).toEqual(['b']);
      expect(z.transport.diagnostics().refusedHellos).toBeGreaterThan(0);
      // a sealed node sends no Hello
      const c = await node('c');
      z.transport.registerManualPeer('main', c.endpoints.main!);
      await ticks(100);
      expect(c.transport.peers()).toEqual([]);
      // loss after the seal does not un-drain: b keeps z Draining and does not redial it
      const bConns = b.transport.diagnostics().openConnections;
      await z.transport.close();
      await waitFor(() => b.transport.diagnostics().openConnections === bConns - 1, 'b lost its connection to z');
      await ticks(100);
      expect(stateOf(b, z.ref)).toBe('Draining');
      expect(b.transport.diagnostics().openConnections).toBe(bConns - 1);
    });

    it('a restarted peer (new generation) replaces the old one; a stale generation is refused', async () => {
      const [a, b1] = await pair();
      // by descriptor
      const b2 = await node('b', 2);
      discover([a, b2]);
      b1.transport.updatePeers([a.descriptor(), b2.descriptor()]);
      await waitFor(() => ready(a, b2), 'a and b#2 Ready');
      expect(a.transport.peers()).toHaveLength(1);
      expect(a.peerEvents).toContainEqual(expect.objectContaining({ nodeId: 'b', lifecycleGeneration: 1, state: 'Lost' }));
      await waitFor(() => stateOf(b1, a.ref) === undefined, 'b#1 lost a');
      // by Hello: b#3 dials a by hand, a replaces b#2 without any descriptor update
      const b3 = await node('b', 3);
      b3.transport.registerManualPeer('main', a.endpoints.main!);
      await waitFor(() => ready(a, b3), 'a and b#3 Ready');
      await waitFor(() => stateOf(b2, a.ref) === undefined, 'b#2 lost a');
      expect(a.transport.peers().map((p) => p.lifecycleGeneration)).toEqual([3]);
      // stale: b#1 is still running and dials a by hand; refused
      const refusedBefore = a.transport.diagnostics().refusedHellos;
      b1.transport.registerManualPeer('main', a.endpoints.main!);
      await waitFor(() => a.transport.diagnostics().refusedHellos > refusedBefore, 'stale Hello refused');
      expect(b1.peerEvents.filter((p) => p.nodeId === 'a' && p.state === 'Admitted')).toHaveLength(1); // the first run only
      expect(a.transport.peers().map((p) => p.lifecycleGeneration)).toEqual([3]);
    });

    it('vanished descriptor disconnects; a peer that appears later is reached by reconnecting with backoff', async () => {
      const [a, b] = await pair();
      a.transport.updatePeers([a.descriptor()]);
      b.transport.updatePeers([b.descriptor()]);
      await waitFor(() => a.transport.peers().length === 0 && b.transport.peers().length === 0, 'both Lost');
      expect(a.peerEvents.at(-1)).toMatchObject({ nodeId: 'b', state: 'Lost' });
      const cRef = { nodeId: 'c', lifecycleGeneration: 1 };
      const reserved = await h.reserve(cRef, 'main');
      a.transport.registerManualPeer('main', reserved.endpoint);
      expect(a.transport.hasManualPeers()).toBe(true);
      await ticks(100); // a keeps retrying
      const c = await node('c', 1, { meshes: [reserved.mesh] });
      expect(c.endpoints.main).toBe(reserved.endpoint);
      await waitFor(() => ready(a, c), 'a reaches c');
      expect(stateOf(a, c.ref) === 'Ready' && a.transport.peers()[0]!.source).toBe('manual');
    });

    it('what a peer wrote before its descriptor vanished is handed over before the peer is reported Lost', async () => {
      const [a, b] = await pair();
      for (const t of ['r1', 'r2', 'r3']) expect(a.transport.send(b.ref, { t })).toBe(true);
      await new Promise((r) => setImmediate(r)); // a's batch is written; b has not read it yet
      b.transport.updatePeers([b.descriptor()]); // a vanished (it released its descriptor at its shutdown)
      await waitFor(() => b.timeline.includes('peer:a:Lost'), 'a Lost on b');
      expect(b.timeline.slice(b.timeline.indexOf('peer:a:Ready') + 1)).toEqual(['msg:r1', 'msg:r2', 'msg:r3', 'peer:a:Lost']);
    });

    it('shared key: matching keys admit; a wrong or missing key is never Admitted', async () => {
      const keyed = (k?: string): NodeOpts => ({ meshes: [h.mesh('main', k === undefined ? {} : { sharedKey: k })] });
      const a = await node('a', 1, keyed('s3cret'));
      const b = await node('b', 1, keyed('s3cret'));
      discover([a, b]);
      await waitFor(() => ready(a, b), 'keyed pair Ready');
      const wrong = await node('c', 1, keyed('guess'));
      const none = await node('d', 1, keyed());
      wrong.transport.registerManualPeer('main', a.endpoints.main!);
      none.transport.registerManualPeer('main', a.endpoints.main!);
      // and a keyed client never admits an unkeyed listener either
      a.transport.registerManualPeer('main', none.endpoints.main!);
      await waitFor(() => a.transport.diagnostics().refusedHellos >= 2, 'refusals');
      await ticks(100);
      expect(wrong.peerEvents.filter((p) => p.nodeId === 'a')).toEqual([]);
      // an unkeyed listener admits anyone (an open mesh), but a's own proof check refuses it: never Ready
      expect(none.peerEvents.filter((p) => p.nodeId === 'a' && p.state === 'Ready')).toEqual([]);
      expect(a.peerEvents.filter((p) => p.nodeId !== 'b')).toEqual([]);
      expect(a.transport.peers().map((p) => p.nodeId)).toEqual(['b']);
    });

    it('manual peer registration is reported without a connection', async () => {
      const a = await node('a');
      const b = await node('b', 1, { start: false });
      expect(b.transport.hasManualPeers()).toBe(false);
      b.transport.registerManualPeer('main', a.endpoints.main!); // before start: recorded, dialed at start
      expect(b.transport.hasManualPeers()).toBe(true);
      expect(() => b.transport.registerManualPeer('nope', a.endpoints.main!)).toThrow(TypeError);
      b.endpoints = await b.transport.start();
      await waitFor(() => ready(a, b), 'manual pair Ready');
      expect(b.transport.peers()[0]).toMatchObject({ nodeId: 'a', source: 'manual', state: 'Ready' });
      expect(a.transport.peers()[0]).toMatchObject({ nodeId: 'b', source: 'manual' });
      expect(a.transport.hasManualPeers()).toBe(false); // inbound connections are not registrations
    });

    it('a component endpoint (connectEndpoint) is dialed like a manual peer but not counted as one; peerAt names the run behind it', async () => {
      const a = await node('a');
      const c = await node('c');
      expect(() => c.transport.connectEndpoint!('nope', a.endpoints.main!)).toThrow(TypeError);
      expect(() => c.transport.connectEndpoint!('main', h.kind === 'ws' ? 'memory://x/1/main' : 'ws://127.0.0.1:9')).toThrow(TypeError);
      expect(c.transport.peerAt!('main', a.endpoints.main!)).toBeUndefined();
      c.transport.connectEndpoint!('main', a.endpoints.main!);
      await waitFor(() => ready(a, c), 'c reaches a through the endpoint');
      expect(c.transport.peerAt!('main', a.endpoints.main!)).toEqual(a.ref);
      expect(c.transport.peers('main')[0]).toMatchObject({ nodeId: 'a', source: 'manual', state: 'Ready' });
      expect(c.transport.hasManualPeers()).toBe(false); // the component owns that registration (§4)
      c.transport.send(a.ref, { t: 'over-endpoint' });
      await waitFor(() => a.messages().length === 1, 'message over the endpoint connection');
    });

    it('an endpoint whose run already dialed this node: the refused duplicate dial still learns who listens there', async () => {
      const [a, b] = await pair(); // a (the smaller run) dialed b
      b.transport.connectEndpoint!('main', a.endpoints.main!); // b's dial loses the connection rule
      await waitFor(() => b.transport.peerAt!('main', a.endpoints.main!) !== undefined, 'identity learned');
      expect(b.transport.peerAt!('main', a.endpoints.main!)).toEqual(a.ref);
      await ticks(300); // several reconnect delays (FAST: 20–200 ms): a redial would show as a new connection
      expect(ready(a, b)).toBe(true); // the kept connection was not disturbed
      expect(a.transport.peers('main')).toEqual([expect.objectContaining({ nodeId: 'b', state: 'Ready' })]);
      expect(a.transport.diagnostics!().openConnections).toBe(1);
      expect(b.transport.diagnostics!().openConnections).toBe(1);
      expect(a.transport.send(b.ref, { t: 'still' })).toBe(true);
      await waitFor(() => b.messages().length === 1, 'message over the original connection');
    });

    it('close is idempotent and rejects pending operations; nothing fires afterwards', async () => {
      const [a, b] = await pair({ budget: 100_000 });
      const held = await a.transport.acquireBudget(b.ref, 100_000);
      const waiting = a.transport.acquireBudget(b.ref, 10);
      const sending = a.transport.sendPayload(b.ref, 'x', Buffer.alloc(500_000, 3), held);
      a.transport.send(b.ref, { t: 'accepted-before-close' });
      const c1 = a.transport.close();
      const c2 = a.transport.close();
      expect(c2).toBe(c1);
      await expect(waiting).rejects.toBeInstanceOf(TransportClosedError);
      await expect(sending).rejects.toBeInstanceOf(TransportClosedError);
      await c1;
      await a.transport.close();
      expect(a.transport.send(b.ref, { t: 'late' })).toBe(false);
      await expect(a.transport.acquireBudget(b.ref, 1)).rejects.toBeInstanceOf(TransportClosedError);
      await expect(a.transport.start()).rejects.toBeInstanceOf(TransportClosedError);
      expect(a.transport.diagnostics().openConnections).toBe(0);
      const seen = a.peerEvents.length;
      await waitFor(() => b.transport.peers().length === 0, 'b saw a leave');
      expect(b.messages()).toEqual([{ t: 'accepted-before-close' }]); // accepted sends were flushed, not dropped
      expect(a.peerEvents.length).toBe(seen);
    });
  });
}
