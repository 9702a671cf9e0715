/**
 * Classic fanout end to end, on both stacks: once-and-in-order delivery to several subscriptions on several hosts
 * from several publishers, through connection losses with events in flight and through a publisher restart (a new
 * run is a new link); §14 Shutdown of a subscriber host handles what it received and ends its links, and a handler
 * that never returns is cut off at the deadline (bounded teardown).
 */
import {
  FrameworkRuntimeState,
  TerminationOutcome,
  TerminationReason,
  type FanoutEventInfo,
  type FanoutSubscription,
  type FrameworkRuntime,
  type TransportFactory,
} from '../../runtime';
import { createTransport } from '../../transport';
import type { RuntimeMessage } from '../../transport/types';
import { CHANNEL_TYPES, gate } from '../support/channels';
import { eventually, makeStack, STACKS, type Stack } from '../support/stack';

interface Got {
  readonly value: unknown;
  readonly info: FanoutEventInfo;
}

function collect() {
  const got: Got[] = [];
  return {
    got,
    handler: (value: unknown, info: FanoutEventInfo) => void got.push({ value, info }),
    /** Values from one publisher node run, in arrival order. */
    from: (nodeId: string, generation?: number) =>
      got.filter((g) => g.info.publisher.nodeId === nodeId && (generation === undefined || g.info.publisher.lifecycleGeneration === generation)).map((g) => g.value),
  };
}

const linked = (sub: FanoutSubscription, ...nodes: string[]) => nodes.every((n) => sub.publishers().some((p) => p.nodeId === n));
const range = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ [tag]: i + 1 }));

describe.each(STACKS)('%s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(() => stack.close());
  const host = (nodeId: string, extra: { transport?: TransportFactory } = {}) => stack.host({ nodeId, applicationVersion: 1, types: CHANNEL_TYPES, ...extra });

  test('several subscriptions on several hosts each get every event of every publisher once, in that publisher’s order', async () => {
    const p1 = await host('p1');
    const p2 = await host('p2');
    const s = await host('s');
    const a = collect();
    const b = collect();
    const c = collect();
    const d = collect();
    const subs = [s.subscribe('quotes', a.handler), s.subscribe('quotes', b.handler), p1.subscribe('quotes', c.handler), p2.subscribe('quotes', d.handler)];
    const pub1 = p1.publisher('quotes');
    const pub2 = p2.publisher('quotes');
    const unrelated = collect();
    s.subscribe('other', unrelated.handler);
    await eventually(() => subs.every((sub) => linked(sub, 'p1', 'p2')), 10_000, 'every subscription linked to both publishers');
    const N = 1000;
    for (let i = 0; i < N; i++) {
      pub1.publish({ p1: i + 1 });
      pub2.publish({ p2: i + 1 });
      if (i % 100 === 0) await new Promise((r) => setImmediate(r));
    }
    for (const r of [a, b, c, d]) {
      await eventually(() => r.got.length === 2 * N, 20_000, `${2 * N} events`);
      expect(r.from('p1')).toEqual(range(N, 'p1'));
      expect(r.from('p2')).toEqual(range(N, 'p2'));
    }
    expect(unrelated.got).toEqual([]);
  }, 60_000);

  test('connection losses with events in flight: the subscriber resumes each link and still gets every event once, in order', async () => {
    let losses = 0;
    let seen = 0;
    // The subscriber's transport drops its connection to the publisher at the 100th and 400th event it reads:
    // that event and whatever else was in flight are lost with the connection.
    const lossy: TransportFactory = (options) => {
      const transport = createTransport({
        ...options,
        handlers: {
          ...options.handlers,
          onMessage: (from, message: RuntimeMessage) => {
            if (message.t === 'c.fanout.ev' && (++seen === 100 || seen === 400)) {
              losses++;
              transport.disconnect!(from);
              return;
            }
            options.handlers.onMessage(from, message);
          },
        },
      });
      return transport;
    };
    const publisherHost = await host('a-publisher'); // the smaller run dials: it is the side that reconnects
    const subscriberHost = await host('b-subscriber', { transport: lossy });
    const r = collect();
    const sub = subscriberHost.subscribe('ticks', r.handler);
    const publisher = publisherHost.publisher('ticks');
    await eventually(() => linked(sub, 'a-publisher'), 10_000, 'linked');
    const N = 1000;
    for (let i = 0; i < N; i++) {
      publisher.publish({ i: i + 1 });
      if (i % 50 === 0) await new Promise((r2) => setTimeout(r2, 1));
    }
    await eventually(() => r.got.length >= N, 20_000, `${N} events`);
    expect(losses).toBe(2);
    expect(r.from('a-publisher')).toEqual(range(N, 'i'));
  }, 60_000);

  test('a restarted publisher node is a new link: its new run is subscribed from its descriptor, the old run is dropped, nothing is delivered twice', async () => {
    const subscriberHost = await host('subscriber');
    let publisherHost: FrameworkRuntime = await host('publisher');
    const firstGeneration = publisherHost.lifecycleGeneration;
    const r = collect();
    const sub = subscriberHost.subscribe('ticks', r.handler);
    let publisher = publisherHost.publisher('ticks');
    await eventually(() => linked(sub, 'publisher'), 10_000, 'linked to the first run');
    for (let i = 1; i <= 10; i++) publisher.publish({ i });
    const stopped = await publisherHost.shutdown({ deadlineMs: 10_000 });
    expect(stopped.outcome).toBe(TerminationOutcome.Stopped);
    expect(r.from('publisher', firstGeneration)).toEqual(range(10, 'i')); // the drain delivered them before it stopped

    publisherHost = await host('publisher'); // same node id, new run
    const secondGeneration = publisherHost.lifecycleGeneration;
    expect(secondGeneration).toBeGreaterThan(firstGeneration);
    publisher = publisherHost.publisher('ticks');
    await eventually(
      () => sub.publishers().length === 1 && sub.publishers()[0]!.lifecycleGeneration === secondGeneration,
      10_000,
      'linked to the new run only',
    );
    for (let i = 11; i <= 20; i++) publisher.publish({ i });
    await eventually(() => r.got.length === 20, 10_000, '20 events');
    expect(r.from('publisher', secondGeneration)).toEqual(range(20, 'i').slice(10));
    expect(r.got).toHaveLength(20);
  }, 60_000);

  test('§14: a subscriber host’s Shutdown handles what it received, ends its links, then closes; publishing goes on for the others', async () => {
    const publisherHost = await host('publisher');
    const leaving = await host('leaving');
    const staying = await host('staying');
    const slow = collect();
    const handlerGate = gate();
    let handled = 0;
    const leavingSub = leaving.subscribe('ticks', async (value, info) => {
      await handlerGate.promise; // the events wait in the subscription while Shutdown drains
      handled++;
      slow.handler(value, info);
    });
    const other = collect();
    const stayingSub = staying.subscribe('ticks', other.handler);
    const publisher = publisherHost.publisher('ticks');
    await eventually(() => linked(leavingSub, 'publisher') && linked(stayingSub, 'publisher'), 10_000, 'linked');
    for (let i = 1; i <= 50; i++) publisher.publish({ i });
    await eventually(() => other.got.length === 50, 10_000, 'the staying subscriber got them');

    const shutdown = leaving.shutdown({ deadlineMs: 20_000 });
    expect(leaving.status.state).toBe(FrameworkRuntimeState.Draining);
    expect(() => leaving.subscribe('ticks', () => undefined)).toThrow(/Draining/);
    handlerGate.open();
    expect(await shutdown).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
    expect(handled).toBe(50);
    expect(slow.from('publisher')).toEqual(range(50, 'i'));
    expect(leavingSub.publishers()).toEqual([]);

    for (let i = 51; i <= 60; i++) publisher.publish({ i });
    await eventually(() => other.got.length === 60, 10_000, 'publishing goes on for the staying subscriber');
    expect(other.from('publisher')).toEqual(range(60, 'i'));
  }, 60_000);

  test('§14 bounded teardown: a subscriber handler that never returns is cut off at the Shutdown deadline; nothing is delivered late', async () => {
    const publisherHost = await host('publisher');
    const stuck = await host('stuck');
    let calls = 0;
    const sub = stuck.subscribe('ticks', () => {
      calls++;
      return new Promise<void>(() => undefined);
    });
    const publisher = publisherHost.publisher('ticks');
    await eventually(() => linked(sub, 'publisher'), 10_000, 'linked');
    publisher.publish(1);
    publisher.publish(2);
    await eventually(() => calls === 1, 10_000, 'the first handler call');
    const started = Date.now();
    const result = await stuck.shutdown({ deadlineMs: 500 });
    expect(result).toEqual({ outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.DeadlineExceeded });
    expect(Date.now() - started).toBeLessThan(10_000);
    publisher.publish(3);
    await new Promise((r) => setTimeout(r, 100));
    expect(calls).toBe(1);
    // The publisher forgets the stopped subscriber's link once its run left the descriptors.
    const other = collect();
    const fresh = publisherHost.subscribe('ticks', other.handler);
    await eventually(() => linked(fresh, 'publisher'), 10_000, 'a local subscription');
    publisher.publish(4);
    await eventually(() => other.got.length === 1, 10_000, 'publishing goes on');
  }, 60_000);
});
