/**
 * Logical Multicast on fake ports: the real memory channel store (behind a gate where a test needs a slow
 * snapshot) and a recording `sendToObject`. Proves the snapshot-at-send-time rule, per-sender order across
 * submissions whose snapshots return out of order, §15 admission per host state, §14 drain and close, bad input.
 */
import { fakeComponentPorts } from '../test-ports';
import { memoryStores } from '../../../stores/memory/memory-stores';
import type { ChannelMember, Stores } from '../../../stores/types';
import { FrameworkRuntimeState } from '../../../vocabulary';
import { decodeValue } from '../../codec';
import type { ObjectRef } from '../../context';
import { AdmissionError, ArgumentError, RequestError } from '../../errors';
import { silentLog } from '../../logger';
import { MulticastComponent } from './multicast';

const S = FrameworkRuntimeState;

function setup() {
  const stores = memoryStores();
  const sent: { to: ObjectRef; message: unknown }[] = [];
  let state: FrameworkRuntimeState = S.Serving;
  /** Snapshot reads wait here while `gated` (released one by one, in any order). */
  const gates: { release: () => void; channel: string }[] = [];
  let gated = false;
  const members = stores.channels.members.bind(stores.channels);
  const channels = {
    join: stores.channels.join.bind(stores.channels),
    leave: stores.channels.leave.bind(stores.channels),
    members: async (channel: string): Promise<ChannelMember[]> => {
      const snapshot = await members(channel); // read now: the snapshot is taken at send time
      if (gated) await new Promise<void>((release) => gates.push({ release, channel }));
      return snapshot;
    },
  };
  const ports = fakeComponentPorts({
    self: { nodeId: 'n', lifecycleGeneration: 1 },
    logger: silentLog,
    stores: { ...stores, channels } as Stores,
    state: () => state,
    sendToObject: (to, body) => void sent.push({ to, message: decodeValue(body) }),
  });
  const component = new MulticastComponent(ports);
  return {
    component,
    sent,
    gates,
    gate: (on: boolean) => void (gated = on),
    setState: (next: FrameworkRuntimeState) => void (state = next),
  };
}

test('a multicast goes once to every member of the snapshot taken at the call, Instance Spots with their type', async () => {
  const { component, sent, gate, gates } = setup();
  await component.join({ spot: 'room-2' }, 'chat');
  await component.join({ spot: 'shard-1', type: 'Shard' }, 'chat');
  await component.join({ spot: 'elsewhere' }, 'other');
  gate(true);
  const result = component.multicast('chat', { text: 'hi' });
  // Joined after the call: not in this snapshot.
  await component.join({ spot: 'room-3' }, 'chat');
  gates.shift()!.release();
  expect(await result).toEqual({ targets: 2 });
  expect(sent).toEqual([
    { to: { spot: 'room-2' }, message: { text: 'hi' } },
    { to: { spot: 'shard-1', type: 'Shard' }, message: { text: 'hi' } },
  ]);
  gate(false);
  await component.leave({ spot: 'room-2' }, 'chat');
  sent.length = 0;
  expect(await component.multicast('chat', 1)).toEqual({ targets: 2 });
  expect(sent.map((s) => s.to)).toEqual([{ spot: 'room-3' }, { spot: 'shard-1', type: 'Shard' }]);
  expect(await component.multicast('nobody', 1)).toEqual({ targets: 0 });
});

test('submissions are sent in call order even when their snapshots come back in the other order', async () => {
  const { component, sent, gate, gates } = setup();
  await component.join({ spot: 's' }, 'a');
  await component.join({ spot: 's' }, 'b');
  gate(true);
  const first = component.multicast('a', 1);
  const second = component.multicast('b', 2);
  await new Promise((r) => setImmediate(r));
  expect(gates.map((g) => g.channel)).toEqual(['a', 'b']);
  gates[1]!.release(); // b's snapshot first …
  await new Promise((r) => setImmediate(r));
  expect(sent).toEqual([]); // … still waits for a
  gates[0]!.release();
  await Promise.all([first, second]);
  expect(sent.map((s) => s.message)).toEqual([1, 2]);
});

test('the message is copied at the call: a later mutation is not sent; an unencodable value is refused naming its path', async () => {
  const { component, sent } = setup();
  await component.join({ spot: 's' }, 'c');
  const value = { n: 1 };
  const p = component.multicast('c', value);
  value.n = 2;
  await p;
  expect(sent[0]!.message).toEqual({ n: 1 });
  await expect(component.multicast('c', { f: () => 1 })).rejects.toMatchObject({ name: 'ArgumentError', field: 'message.f' });
});

test('§15 admission: joins only in Serving; multicast in Serving, Relocating, Relocated; nothing new in Draining', async () => {
  const { component, sent, setState } = setup();
  await component.join({ spot: 'a' }, 'c');
  for (const state of [S.Relocating, S.Relocated]) {
    setState(state);
    const refused = await component.join({ spot: 'b' }, 'c').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AdmissionError);
    expect((refused as AdmissionError).state).toBe(state === S.Relocating ? 'Relocating' : 'Relocated');
    expect(await component.multicast('c', state)).toEqual({ targets: 1 });
  }
  setState(S.Draining);
  await expect(component.multicast('c', 'late')).rejects.toMatchObject({ name: 'AdmissionError', state: 'Draining' });
  await expect(component.join({ spot: 'b' }, 'c')).rejects.toBeInstanceOf(AdmissionError);
  await component.leave({ spot: 'a' }, 'c'); // leaving only shrinks snapshots: still admitted
  expect(sent.map((s) => s.message)).toEqual([S.Relocating, S.Relocated]);
});

test('§14: drain waits for accepted submissions; one still waiting at close ends with a shutdown error', async () => {
  const { component, sent, gate, gates, setState } = setup();
  await component.join({ spot: 's' }, 'c');
  gate(true);
  const accepted = component.multicast('c', 'accepted');
  setState(S.Draining);
  const controller = new AbortController();
  let drained = false;
  const drain = component.drain(controller.signal).then(() => (drained = true));
  await new Promise((r) => setImmediate(r));
  expect(drained).toBe(false);
  gates.shift()!.release();
  await drain;
  expect(await accepted).toEqual({ targets: 1 });
  expect(sent.map((s) => s.message)).toEqual(['accepted']);

  // A submission whose snapshot outlives the deadline: the drain ends at the signal, close ends the submission.
  setState(S.Serving);
  const late = component.multicast('c', 'late');
  const deadline = new AbortController();
  const bounded = component.drain(deadline.signal);
  deadline.abort();
  await bounded;
  await component.close();
  gates.shift()!.release();
  const error = await late.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(RequestError);
  expect((error as RequestError).kind).toBe('shutdown');
  expect(sent.map((s) => s.message)).toEqual(['accepted']);
});

test('§4: settleAccepted waits for a join in flight', async () => {
  const { component } = setup();
  let joined = false;
  const join = component.join({ spot: 's' }, 'c').then(() => (joined = true));
  await component.settleAccepted();
  expect(joined).toBe(true);
  await join;
});

test('bad input is an ArgumentError naming the field, and nothing is written', async () => {
  const { component } = setup();
  const cases: [() => Promise<unknown>, string][] = [
    [() => component.join({ actor: 'a' } as never, 'c'), 'spot'],
    [() => component.join({ spot: '' }, 'c'), 'spot.spot'],
    [() => component.join({ spot: 's', type: '' }, 'c'), 'spot.type'],
    [() => component.join({ spot: 's', extra: 1 } as never, 'c'), 'spot.extra'],
    [() => component.join({ spot: 's' }, ''), 'channel'],
    [() => component.leave(null as never, 'c'), 'spot'],
    [() => component.multicast('', 1), 'channel'],
    [() => component.multicast(5 as never, 1), 'channel'],
  ];
  for (const [call, field] of cases) {
    const error = await call().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ArgumentError);
    expect((error as ArgumentError).field).toBe(field);
  }
  expect(await component.multicast('c', 1)).toEqual({ targets: 0 });
});
