/**
 * §15 "Classic fanout publisher", one test per cell, on both stacks (public API only):
 *   Relocating — doesn't create new automatic subscriber connections; processes accepted events.
 *   Relocated  — infrastructure is kept but new publish admission isn't accepted.
 *   Draining   — closes publish admission; only accepted events are processed.
 */
import { AdmissionError, FrameworkRuntimeState, RelocationOutcome, type FanoutEventInfo } from '../../runtime';
import { CHANNEL_TYPES, gate, publishedState } from '../support/channels';
import { closer, settle } from '../support/hosts';
import { holdAtSafePoint, PM, thrown } from '../support/s15-states';
import { eventually, STACKS, useStack } from '../support/stack';

const S = FrameworkRuntimeState;

function received() {
  const events: { value: unknown; from: string }[] = [];
  return {
    events,
    from: (nodeId: string) => events.filter((e) => e.from === nodeId).map((e) => e.value),
    handler: (value: unknown, info: FanoutEventInfo) => void events.push({ value, from: info.publisher.nodeId }),
  };
}

const linkedTo = (sub: { publishers(): { nodeId: string }[] }) => sub.publishers().map((p) => p.nodeId).sort();

function publishRefused(publish: () => void): AdmissionError {
  const error = thrown(publish);
  expect(error).toBeInstanceOf(AdmissionError);
  return error as AdmissionError;
}

describe.each(STACKS)('%s', (stackName) => {
  const { stack, host } = useStack(stackName, { types: CHANNEL_TYPES });

  test('§15 Classic fanout publisher in Relocating: no new automatic subscriber connection is created, and events still reach the existing subscribers once, in order', async () => {
    const source = await host('source');
    const target = await host('target');
    const subscriber = await host('subscriber');
    await source.createSpot('GateMember', 'held'); // keeps the source Relocating until it defers
    const onSource = source.publisher('ticks');
    const early = received();
    const existing = subscriber.subscribe('ticks', early.handler);
    await eventually(() => linkedTo(existing).includes('source'), 5000, 'the existing subscription linked to the source');
    onSource.publish(0);

    const relocating = await holdAtSafePoint(source, 'held', 30_000);

    // A Serving host publishes the topic too: a subscription made now links to it and not to the Relocating source.
    const onTarget = target.publisher('ticks');
    const late = received();
    const fresh = subscriber.subscribe('ticks', late.handler);
    await eventually(() => linkedTo(fresh).includes('target'), 5000, 'the new subscription linked to the Serving publisher');
    expect(linkedTo(fresh)).toEqual(['target']);

    // Publishing stays admitted in Relocating; the existing subscription keeps its link and gets every event.
    for (let i = 1; i <= 20; i++) onSource.publish(i);
    await eventually(() => early.from('source').length === 21, 5000, 'events from the Relocating publisher');
    expect(early.from('source')).toEqual(Array.from({ length: 21 }, (_, i) => i));
    expect(linkedTo(existing)).toEqual(['source', 'target']);
    onTarget.publish('from target');
    await eventually(() => late.from('target').length === 1, 5000, 'the new subscription gets the Serving publisher');
    expect(late.from('source')).toEqual([]);

    expect((await relocating.release()).outcome).toBe(RelocationOutcome.Relocated);
    expect(early.from('source')).toHaveLength(21); // nothing twice
  }, 60_000);

  test('§15 Classic fanout publisher in Relocated: subscribers stay linked (infrastructure kept) but publish is refused with AdmissionError', async () => {
    const source = await host('source');
    const other = await host('other');
    const subscriber = await host('subscriber');
    const publisher = source.publisher('ticks');
    const events = received();
    const sub = subscriber.subscribe('ticks', events.handler);
    await eventually(() => linkedTo(sub).includes('source'), 5000, 'linked to the source');
    for (let i = 1; i <= 5; i++) publisher.publish(i);

    const result = await source.relocate({ mode: PM, deadlineMs: 10_000 }); // no workload: Relocated/None at once
    expect(result.outcome).toBe(RelocationOutcome.Relocated);
    const error = publishRefused(() => publisher.publish('late'));
    expect(error.state).toBe('Relocated');
    expect(() => source.publisher('another')).toThrow(AdmissionError);

    // Once the subscriber has read a snapshot with the source Relocated (another publisher appearing after it),
    // its link to the source is still there.
    await eventually(async () => (await publishedState(stack.stores, 'source')) === S.Relocated, 5000, 'the Relocated descriptor');
    const fromOther = other.publisher('ticks');
    await eventually(() => linkedTo(sub).includes('other'), 5000, 'linked to the publisher that appeared later');
    expect(linkedTo(sub)).toEqual(['other', 'source']);
    fromOther.publish('other');
    await eventually(() => events.from('other').length === 1, 5000, 'the other publisher');
    expect(events.from('source')).toEqual([1, 2, 3, 4, 5]);
  }, 60_000);

  test('§15 Classic fanout publisher in Draining: publish is refused, and every event accepted before Shutdown reached each subscriber once, in order, before the host closed', async () => {
    const source = await host('source');
    const first = await host('first');
    const second = await host('second');
    await source.createSpot('Closer', 'closer'); // holds the source at §14 step 4, after the drain
    const publisher = source.publisher('ticks');
    const a = received();
    const b = received();
    const local = received();
    const subs = [first.subscribe('ticks', a.handler), second.subscribe('ticks', b.handler), source.subscribe('ticks', local.handler)];
    await eventually(() => subs.every((s) => linkedTo(s).includes('source')), 5000, 'every subscription linked');

    const atClosing = gate();
    let seenAtClosing: number[] = [];
    closer.onCall = () => {
      seenAtClosing = [a.events.length, b.events.length, local.events.length];
      atClosing.open();
    };
    const accepted = Array.from({ length: 200 }, (_, i) => ({ i }));
    for (const event of accepted) publisher.publish(event);
    const shutdown = settle(source.shutdown({ deadlineMs: 20_000 }));
    expect(source.status.state).toBe(S.Draining);
    const error = publishRefused(() => publisher.publish({ i: 'late' }));
    expect(error.state).toBe('Draining');

    // The drain (§14 step 3) ended before the Spot closing callback (step 4): by then every accepted event was there.
    await atClosing.promise;
    expect(seenAtClosing).toEqual([200, 200, 200]);
    closer.open();
    await shutdown.promise;
    expect(source.status.lastTermination).toEqual({ outcome: 0, reason: 0 });
    for (const r of [a, b]) expect(r.from('source')).toEqual(accepted);
    // The publisher's links ended with it.
    await eventually(() => subs.slice(0, 2).every((s) => linkedTo(s).length === 0), 5000, 'links ended');
  }, 60_000);
});
