/**
 * Classic fanout on fake ports: several FanoutComponents joined by a fake network whose connections can be cut
 * (with what was in flight lost) and healed, and whose messages can be dropped one by one. Proves per-link order
 * and once-delivery through losses, resumes and duplicates; §15 admission of the publisher per host state; §4
 * manual registrations; §14 drain and close.
 */
import { fakeComponentPorts } from '../test-ports';
import { memoryStores } from '../../../stores/memory/memory-stores';
import type { NodeDescriptor, NodeRef } from '../../../stores/types';
import type { RuntimeMessage, Transport } from '../../../transport/types';
import { FrameworkRuntimeState } from '../../../vocabulary';
import { AdmissionError, ArgumentError } from '../../errors';
import { nodeKey } from '../../keys';
import type { RuntimeLog } from '../../logger';
import { componentOf } from '../component';
import { FanoutComponent, type FanoutEventInfo, type FanoutHandler } from './fanout';
import { FANOUT_MESSAGES } from './protocol';
import { MAX_UNACKED_EVENTS } from './publishing';

const S = FrameworkRuntimeState;
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const settle = async (rounds = 20) => {
  for (let i = 0; i < rounds; i++) await turn();
};

interface LogLine {
  level: string;
  fields: Record<string, unknown>;
  msg: string;
}

interface Node {
  readonly ref: NodeRef;
  state: FrameworkRuntimeState;
  readonly component: FanoutComponent;
  readonly logs: LogLine[];
  /** Manual endpoints registered with the (fake) transport. */
  readonly manualPeers: string[];
  /** Whether its descriptor is listed (a node that left the cluster is not). */
  listed: boolean;
}

const pairKey = (a: NodeRef, b: NodeRef) => `${nodeKey(a)}>${nodeKey(b)}`;

/** In-order delivery per direction on setImmediate; a cut loses what is in flight, like a dropped connection. */
class Net {
  readonly nodes = new Map<string, Node>();
  private readonly down = new Set<string>();
  private readonly inFlight = new Map<string, { to: Node; from: NodeRef; message: RuntimeMessage }[]>();
  /** Drops the next message matching it (once). */
  dropOnce: ((from: NodeRef, to: NodeRef, message: RuntimeMessage) => boolean) | undefined;
  readonly sent: { from: string; to: string; t: string }[] = [];

  add(nodeId: string, lifecycleGeneration = 1): Node {
    const ref = { nodeId, lifecycleGeneration };
    const logs: LogLine[] = [];
    const logger: RuntimeLog = {
      debugEnabled: false,
      debug: (fields, msg) => void logs.push({ level: 'debug', fields, msg }),
      info: (fields, msg) => void logs.push({ level: 'info', fields, msg }),
      warn: (fields, msg) => void logs.push({ level: 'warn', fields, msg }),
      error: (fields, msg) => void logs.push({ level: 'error', fields, msg }),
    };
    const manualPeers: string[] = [];
    const transport = {
      registerManualPeer: (_mesh: string, endpoint: string) => {
        if (!endpoint.startsWith('mem://')) throw new TypeError(`registerManualPeer: ${endpoint} is not a memory endpoint`);
        manualPeers.push(endpoint);
      },
      peerAt: () => undefined,
    } as unknown as Transport;
    // eslint-disable-next-line prefer-const
    let node: Node;
    const ports = fakeComponentPorts({
      self: ref,
      logger,
      stores: memoryStores(),
      state: () => node.state,
      descriptors: () => this.descriptors(),
      send: (peer, message) => this.send(ref, peer, message),
      isReady: (peer) => this.isUp(ref, peer),
      transport: () => transport,
    });
    node = { ref, state: S.Serving, component: new FanoutComponent(ports, 'main'), logs, manualPeers, listed: true };
    // A newer run replaces the older one in the cluster.
    for (const other of this.nodes.values()) if (other.ref.nodeId === nodeId) other.listed = false;
    this.nodes.set(nodeKey(ref), node);
    return node;
  }

  descriptors(): NodeDescriptor[] {
    return [...this.nodes.values()]
      .filter((n) => n.listed)
      .map((n) => {
        const fanout = n.component.describe();
        return {
          nodeId: n.ref.nodeId,
          lifecycleGeneration: n.ref.lifecycleGeneration,
          applicationVersion: 1,
          state: n.state,
          endpoints: { main: `mem://${n.ref.nodeId}/${n.ref.lifecycleGeneration}` },
          types: [],
          capacity: 100,
          load: 0,
          weight: 1,
          ...(fanout ? { components: { fanout } } : {}),
        };
      });
  }

  /** One discovery round on every node. */
  discover(): void {
    const list = this.descriptors();
    for (const n of this.nodes.values()) n.component.onDescriptors(list);
  }

  isUp(a: NodeRef, b: NodeRef): boolean {
    const target = this.nodes.get(nodeKey(b));
    return !!target && target.listed && !this.down.has(pairKey(a, b));
  }

  send(from: NodeRef, to: NodeRef, message: RuntimeMessage): boolean {
    if (!this.isUp(from, to)) return false;
    this.sent.push({ from: from.nodeId, to: to.nodeId, t: message.t });
    expect(componentOf(message.t)).toBe('fanout');
    const key = pairKey(from, to);
    let queue = this.inFlight.get(key);
    if (!queue) {
      this.inFlight.set(key, (queue = []));
      setImmediate(() => {
        const batch = this.inFlight.get(key) ?? [];
        this.inFlight.delete(key);
        for (const m of batch) {
          if (this.dropOnce?.(m.from, m.to.ref, m.message)) {
            this.dropOnce = undefined;
            continue;
          }
          m.to.component.onMessage(m.from, m.message);
        }
      });
    }
    queue.push({ to: this.nodes.get(nodeKey(to))!, from, message });
    return true;
  }

  /** The connection between a and b drops: what is in flight both ways is lost; both sides see the peer lost. */
  cut(a: Node, b: Node): void {
    this.down.add(pairKey(a.ref, b.ref));
    this.down.add(pairKey(b.ref, a.ref));
    this.inFlight.delete(pairKey(a.ref, b.ref));
    this.inFlight.delete(pairKey(b.ref, a.ref));
    a.component.onPeerLost(b.ref);
    b.component.onPeerLost(a.ref);
  }

  heal(a: Node, b: Node): void {
    this.down.delete(pairKey(a.ref, b.ref));
    this.down.delete(pairKey(b.ref, a.ref));
    a.component.onPeerReady(b.ref);
    b.component.onPeerReady(a.ref);
  }
}

function collector() {
  const events: unknown[] = [];
  const infos: FanoutEventInfo[] = [];
  return {
    events,
    infos,
    handler: (event: unknown, info: FanoutEventInfo) => {
      events.push(event);
      infos.push(info);
    },
  };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/**
 * Node `p` with a publisher of topic `t`, node `s` subscribed to `t` — with `handler`, else with the collector `c` —
 * and one discovery round, after which the subscription is linked to `p`.
 */
async function linkedPair(handler?: FanoutHandler) {
  const net = new Net();
  const p = net.add('p');
  const s = net.add('s');
  const pub = p.component.publisher('t');
  const c = collector();
  const sub = s.component.subscribe('t', handler ?? c.handler);
  net.discover();
  await settle();
  return { net, p, s, pub, c, sub };
}

/** How many links the publisher side of `node` holds. */
const linkCount = (node: Node) => (node.component as unknown as { publishing: { linkCount: number } }).publishing.linkCount;

/** A drain of `node` until `signal`, and whether it ended yet. */
function drainOf(node: Node, signal: AbortSignal) {
  const drain = { done: false, promise: Promise.resolve() };
  drain.promise = node.component.drain(signal).then(() => void (drain.done = true));
  return drain;
}

/** The error `call` throws (undefined when it returns). */
function thrown(call: () => unknown): unknown {
  try {
    call();
  } catch (e) {
    return e;
  }
  return undefined;
}

describe('delivery', () => {
  test('three subscriptions (one on the publisher node) get every event once, in publish order, with the publisher named', async () => {
    const net = new Net();
    const p = net.add('p');
    const s1 = net.add('s1');
    const s2 = net.add('s2');
    const pub = p.component.publisher('prices');
    const [c1, c2, c3] = [collector(), collector(), collector()];
    // Subscriptions made before the descriptor named the publisher link on the next discovery.
    const subs = [s1.component.subscribe('prices', c1.handler), s2.component.subscribe('prices', c2.handler), p.component.subscribe('prices', c3.handler)];
    expect(subs.map((s) => s.publishers())).toEqual([[], [], []]);
    net.discover();
    await settle();
    for (const s of subs) expect(s.publishers()).toEqual([p.ref]);
    for (const i of range(1, 200)) pub.publish({ i });
    await settle();
    for (const c of [c1, c2, c3]) expect(c.events).toEqual(range(1, 200).map((i) => ({ i })));
    expect(c1.infos[0]).toEqual({ topic: 'prices', publisher: { nodeId: 'p', lifecycleGeneration: 1, id: pub.id } });
    // Values are copied at publish: a later mutation is not seen.
    const value = { n: 1 };
    pub.publish(value);
    value.n = 2;
    await settle();
    expect(c1.events.at(-1)).toEqual({ n: 1 });
  });

  test('a subscription of another topic gets nothing; two publishers of one topic on a node each keep their order', async () => {
    const net = new Net();
    const p = net.add('p');
    const s = net.add('s');
    const a = p.component.publisher('t');
    const b = p.component.publisher('t');
    p.component.publisher('other').publish('x');
    const c = collector();
    const other = collector();
    s.component.subscribe('t', c.handler);
    s.component.subscribe('nothing-here', other.handler);
    net.discover();
    await settle();
    for (const i of range(1, 50)) {
      a.publish({ a: i });
      b.publish({ b: i });
    }
    await settle();
    expect(c.infos.filter((x) => x.publisher.id === a.id).map((_, i) => i + 1)).toEqual(range(1, 50));
    expect(c.events.filter((e) => 'a' in (e as object))).toEqual(range(1, 50).map((i) => ({ a: i })));
    expect(c.events.filter((e) => 'b' in (e as object))).toEqual(range(1, 50).map((i) => ({ b: i })));
    expect(other.events).toEqual([]);
  });

  test('a connection loss with events in flight: the subscriber resumes and gets each event once, in order', async () => {
    const { net, p, s, pub, c } = await linkedPair();
    for (const i of range(1, 10)) pub.publish(i);
    await settle();
    for (const i of range(11, 20)) pub.publish(i); // in flight …
    net.cut(p, s); // … and lost with the connection
    for (const i of range(21, 30)) pub.publish(i); // the publisher holds these (no Ready connection)
    await settle();
    expect(c.events).toEqual(range(1, 10));
    net.heal(p, s);
    await settle();
    for (const i of range(31, 40)) pub.publish(i);
    await settle();
    expect(c.events).toEqual(range(1, 40));
  });

  test('a lost event opens a gap: the subscriber asks once to resume and drops the copies it already has', async () => {
    const { net, s, pub, c } = await linkedPair();
    let dropped = false;
    net.dropOnce = (_from, _to, m) => (dropped = m.t === FANOUT_MESSAGES.ev && (m as unknown as { q: number }).q === 3);
    for (const i of range(1, 8)) pub.publish(i);
    await settle();
    expect(dropped).toBe(true);
    expect(c.events).toEqual(range(1, 8));
    expect(net.sent.filter((m) => m.t === FANOUT_MESSAGES.sub)).toHaveLength(2); // the subscribe and one resume
    expect(s.logs.filter((l) => l.msg.includes('out of sequence'))).toHaveLength(1);
  });

  test('acknowledged events leave the outbox: drain needs nothing more once every subscriber acknowledged', async () => {
    const { p, pub } = await linkedPair(() => undefined);
    for (const i of range(1, 5)) pub.publish(i);
    const drain = drainOf(p, new AbortController().signal);
    await settle();
    await drain.promise;
    expect(drain.done).toBe(true);
  });

  test('a handler error is logged with the event coordinates and the next event is delivered', async () => {
    const seen: number[] = [];
    const { s, pub } = await linkedPair((e) => {
      if (e === 2) throw new Error('boom');
      seen.push(e as number);
    });
    for (const i of range(1, 3)) pub.publish(i);
    await settle();
    expect(seen).toEqual([1, 3]);
    const line = s.logs.find((l) => l.level === 'error');
    expect(line?.msg).toContain('handler failed');
    expect(line?.fields).toMatchObject({ topic: 't', q: 2 });
  });

  test('an async handler runs one event at a time, in order', async () => {
    let running = 0;
    let most = 0;
    const seen: number[] = [];
    const { pub } = await linkedPair(async (e) => {
      most = Math.max(most, ++running);
      await turn();
      seen.push(e as number);
      running--;
    });
    for (const i of range(1, 10)) pub.publish(i);
    await settle(60);
    expect(seen).toEqual(range(1, 10));
    expect(most).toBe(1);
  });

  test('a subscriber that never acknowledges loses its link past the bound, and both sides log it', async () => {
    const { net, p, s, pub } = await linkedPair(() => undefined);
    net.cut(p, s);
    for (let i = 0; i < MAX_UNACKED_EVENTS; i++) pub.publish(i);
    pub.publish('one too many');
    expect(p.logs.some((l) => l.level === 'error' && l.msg.includes('acknowledged nothing'))).toBe(true);
    net.heal(p, s);
    await settle();
    // The resume finds no link: the subscriber is told, logs the loss and subscribes again.
    expect(s.logs.some((l) => l.level === 'error' && l.msg.includes('no longer holds'))).toBe(true);
  });
});

describe('publisher restart and departure', () => {
  test('a new run of the publisher node is a new link (events start again at 1); the old run is dropped', async () => {
    const net = new Net();
    const p1 = net.add('p', 1);
    const s = net.add('s');
    p1.component.publisher('t').publish('never seen'); // before any subscriber: nobody gets it
    const c = collector();
    const sub = s.component.subscribe('t', c.handler);
    net.discover();
    await settle();
    expect(sub.publishers()).toEqual([p1.ref]);
    const p2 = net.add('p', 2); // p restarted: the old run is no longer listed
    const pub2 = p2.component.publisher('t');
    net.discover();
    await settle();
    expect(sub.publishers()).toEqual([p2.ref]);
    for (const i of range(1, 5)) pub2.publish(i);
    await settle();
    expect(c.events).toEqual(range(1, 5));
    expect(c.infos.every((i) => i.publisher.lifecycleGeneration === 2)).toBe(true);
  });

  test('a run whose descriptor is gone is dropped after two snapshots (one snapshot may be older than the link)', async () => {
    const { net, p, sub } = await linkedPair(() => undefined);
    expect(sub.publishers()).toEqual([p.ref]);
    p.listed = false;
    net.discover();
    expect(sub.publishers()).toEqual([p.ref]);
    net.discover();
    expect(sub.publishers()).toEqual([]);
  });

  test('a publisher run missing from two snapshots and then back: a new link (new id) carries on; the old one the publisher still held is ended', async () => {
    const { net, p, pub, c, sub } = await linkedPair();
    pub.publish(1);
    await settle();
    p.listed = false; // e.g. its lease renewal was late: the subscriber drops the link (it cannot tell p to end it)
    net.discover();
    net.discover();
    expect(sub.publishers()).toEqual([]);
    pub.publish(2); // the publisher still holds the old link: this event is not the subscription's any more
    await settle();
    p.listed = true;
    net.discover();
    await settle();
    expect(sub.publishers()).toEqual([p.ref]);
    for (const i of [3, 4, 5]) pub.publish(i);
    await settle();
    expect(c.events).toEqual([1, 3, 4, 5]);
    expect(linkCount(p)).toBe(1); // the stray link was ended when its event reached the subscriber
  });

  test('the publisher side drops links of a subscriber run that left, and a closed publisher leaves the descriptor', async () => {
    const { net, p, s, pub } = await linkedPair(() => undefined);
    expect(linkCount(p)).toBe(1);
    s.listed = false;
    net.discover();
    net.discover();
    expect(linkCount(p)).toBe(0);
    expect(p.component.describe()).toEqual({ generation: 1, publishers: [{ topic: 't', id: pub.id }] });
    await pub.close();
    expect(p.component.describe()).toBeUndefined();
    expect(() => pub.publish(1)).toThrow(AdmissionError);
  });
});

describe('§15 Classic fanout publisher admission', () => {
  test('Relocating: no new subscriber link (refused, retried once Serving again); existing links keep receiving; publish admitted', async () => {
    const net = new Net();
    const p = net.add('p');
    const s1 = net.add('s1');
    const s2 = net.add('s2');
    const pub = p.component.publisher('t');
    const c1 = collector();
    const c2 = collector();
    const sub1 = s1.component.subscribe('t', c1.handler);
    net.discover();
    await settle();
    p.state = S.Relocating;
    // s2's snapshot still shows p Serving (a stale read): its subscribe reaches p, which refuses it.
    const stale = net.descriptors().map((d) => ({ ...d, state: S.Serving }));
    const sub2 = s2.component.subscribe('t', c2.handler);
    s2.component.onDescriptors(stale);
    await settle();
    expect(sub2.publishers()).toEqual([]);
    expect(s2.logs.some((l) => l.msg.includes('refused a new subscription') && l.fields['reason'] === 'Relocating')).toBe(true);
    // A fresh snapshot shows p Relocating: no new subscribe is even sent.
    const subs = net.sent.filter((m) => m.t === FANOUT_MESSAGES.sub).length;
    net.discover();
    await settle();
    expect(net.sent.filter((m) => m.t === FANOUT_MESSAGES.sub)).toHaveLength(subs);
    pub.publish('during relocation');
    await settle();
    expect(c1.events).toEqual(['during relocation']);
    expect(c2.events).toEqual([]);
    expect(sub1.publishers()).toEqual([p.ref]);
    // Back to Serving (a Blocked relocation): the refused link is retried.
    p.state = S.Serving;
    net.discover();
    await settle();
    expect(sub2.publishers()).toEqual([p.ref]);
    pub.publish('after');
    await settle();
    expect(c2.events).toEqual(['after']);
  });

  test('Relocated: links kept, publish refused with AdmissionError naming the state; a new publisher is refused too', async () => {
    const { net, p, pub, sub } = await linkedPair(() => undefined);
    p.state = S.Relocated;
    net.discover();
    await settle();
    expect(sub.publishers()).toEqual([p.ref]);
    const error = thrown(() => pub.publish(1));
    expect(error).toBeInstanceOf(AdmissionError);
    expect((error as AdmissionError).state).toBe('Relocated');
    expect(() => p.component.publisher('u')).toThrow(AdmissionError);
    expect(() => p.component.registerManualPublisher('u')).toThrow(AdmissionError);
  });

  test('Draining: publish refused; drain waits until accepted events were acknowledged; close tells the subscribers', async () => {
    const { net, p, s, pub, c, sub } = await linkedPair();
    net.cut(p, s);
    for (const i of range(1, 3)) pub.publish(i); // accepted, held for the subscriber
    p.state = S.Draining;
    p.component.onStateChange(S.Draining);
    expect(() => pub.publish(4)).toThrow(AdmissionError);
    const controller = new AbortController();
    const drain = drainOf(p, controller.signal);
    await settle();
    expect(drain.done).toBe(true); // not reachable: the drain does not wait for it …
    net.heal(p, s);
    // … but once it is, a new drain waits for its events.
    const second = drainOf(p, controller.signal);
    await settle();
    await second.promise;
    await drain.promise;
    expect(c.events).toEqual([1, 2, 3]);
    await p.component.close();
    await settle();
    expect(sub.publishers()).toEqual([]);
    expect(s.logs.some((l) => l.msg.includes('publisher closed'))).toBe(true);
  });

  test('a drain that cannot finish ends at the deadline signal', async () => {
    let release!: () => void;
    const { s, pub } = await linkedPair(() => new Promise<void>((r) => (release = r)));
    pub.publish(1);
    await settle();
    s.state = S.Draining;
    s.component.onStateChange(S.Draining);
    const controller = new AbortController();
    const drain = drainOf(s, controller.signal);
    await settle();
    expect(drain.done).toBe(false); // the handler of an accepted event is still running
    controller.abort();
    await drain.promise;
    expect(drain.done).toBe(true);
    release();
  });
});

describe('subscriber side', () => {
  test('Draining ends every link; events the publisher sent before it read that are still handled; close waits for them', async () => {
    const { s, pub, c, sub } = await linkedPair();
    pub.publish(1);
    s.state = S.Draining;
    s.component.onStateChange(S.Draining);
    pub.publish(2); // sent before p reads the unsub
    const controller = new AbortController();
    await s.component.drain(controller.signal);
    expect(c.events).toEqual([1, 2]);
    pub.publish(3);
    await settle();
    expect(c.events).toEqual([1, 2]);
    expect(sub.publishers()).toEqual([]);
    expect(() => s.component.subscribe('t', () => undefined)).toThrow(AdmissionError);
  });

  test('close(): the publisher ends the link; later events are not delivered; close is idempotent', async () => {
    const { p, pub, c, sub } = await linkedPair();
    pub.publish(1);
    const closing = sub.close();
    expect(sub.close()).toBe(closing);
    await closing;
    expect(c.events).toEqual([1]);
    pub.publish(2);
    await settle();
    expect(c.events).toEqual([1]);
    expect(linkCount(p)).toBe(0);
  });

  test('bad input names the field and registers nothing', () => {
    const net = new Net();
    const s = net.add('s');
    const cases: [() => unknown, string][] = [
      [() => s.component.subscribe('', () => undefined), 'topic'],
      [() => s.component.subscribe('t', 'nope' as never), 'handler'],
      [() => s.component.subscribe('t', () => undefined, 5 as never), 'options'],
      [() => s.component.subscribe('t', () => undefined, { endpoints: 'x' } as never), 'options.endpoints'],
      [() => s.component.subscribe('t', () => undefined, { endpoint: '' }), 'options.endpoint'],
      [() => s.component.subscribe('t', () => undefined, { endpoint: 'ws://not-memory' }), 'options.endpoint'],
      [() => s.component.publisher(7 as never), 'topic'],
    ];
    for (const [call, field] of cases) {
      const error = thrown(call);
      expect(error).toBeInstanceOf(ArgumentError);
      expect((error as ArgumentError).field).toBe(field);
    }
    expect(s.component.manualTopology()).toEqual([]);
    const pub = s.component.publisher('t');
    expect(() => pub.publish({ f: () => 1 })).toThrow(expect.objectContaining({ name: 'ArgumentError', field: 'event.f' }));
  });
});

describe('§4 manual topology', () => {
  test('a manual publisher is not in the descriptor; a manual subscriber endpoint reaches it; both are registrations until closed', async () => {
    const net = new Net();
    const p = net.add('p');
    const s = net.add('s');
    const manual = p.component.registerManualPublisher('m');
    expect(p.component.describe()).toBeUndefined();
    expect(p.component.manualTopology()).toEqual(["fanout manual publisher 'm'"]);
    const automatic = collector();
    s.component.subscribe('m', automatic.handler);
    const c = collector();
    const sub = s.component.subscribe('m', c.handler, { endpoint: 'mem://p/1' });
    expect(s.manualPeers).toEqual(['mem://p/1']);
    expect(s.component.manualTopology()).toEqual(['fanout subscriber endpoint mem://p/1']);
    net.discover();
    await settle();
    expect(sub.publishers()).toEqual([p.ref]);
    for (const i of range(1, 5)) manual.publish(i);
    await settle();
    expect(c.events).toEqual(range(1, 5));
    expect(automatic.events).toEqual([]); // nothing in the descriptor: automatic discovery finds no publisher
    await sub.close();
    await manual.close();
    expect(s.component.manualTopology()).toEqual([]);
    expect(p.component.manualTopology()).toEqual([]);
  });
});

test('message types are componentMessageType(fanout, …), so the host routes them to this component', () => {
  for (const [name, t] of Object.entries(FANOUT_MESSAGES)) expect(t).toBe(`c.fanout.${name}`);
});

test('malformed fanout messages are dropped with a warning, never applied', async () => {
  const net = new Net();
  const p = net.add('p');
  const s = net.add('s');
  const bad: Record<string, unknown>[] = [
    { t: FANOUT_MESSAGES.sub, s: 1, topic: '', from: 1 },
    { t: FANOUT_MESSAGES.sub, s: 1, topic: 't', from: 0 },
    { t: FANOUT_MESSAGES.sub, s: 1, topic: 't', from: 1, r: 2 },
    { t: FANOUT_MESSAGES.sub, s: -1, topic: 't', from: 1 },
    { t: FANOUT_MESSAGES.ev, s: 1, q: 1, p: 'x', v: 'not bytes' },
    { t: FANOUT_MESSAGES.ack, s: 1, q: 'x' },
    { t: FANOUT_MESSAGES.end, s: 1, reason: 'x'.repeat(65) },
    { t: 'c.fanout.what', s: 1 },
  ];
  for (const m of bad) p.component.onMessage(s.ref, m as RuntimeMessage);
  await settle();
  expect(p.logs.filter((l) => l.msg === 'invalid fanout message dropped')).toHaveLength(bad.length);
  expect(net.sent).toEqual([]);
});
