/**
 * The owner's side of Instance Spot Close with a real Object Server and fake ports (runtime/spot-close): the §12
 * decision against a relocation unit, joining closes, a throwing onClosing, and a Location Store that does not
 * answer (retried on a SimulatedClock with the same operation id) or whose record changed authority.
 */
import { memoryStores } from '../../stores/memory/memory-stores';
import { StoreUnavailableError, type CasResult, type RemoveRequest } from '../../stores/types';
import { SimulatedClock } from '../clock';
import { encodeValue } from '../codec';
import { defineSpot, recreateOnRelocation } from '../definitions';
import type { Envelope } from '../envelope';
import { silentLog } from '../logger';
import { ObjectServer, type Terminal } from '../objects';
import { InstanceSpotClose, type ClosableUnit, type SpotClosePorts } from './instance-spot-close';

const self = { nodeId: 'owner', lifecycleGeneration: 1 };
const flush = async () => {
  for (let i = 0; i < 10; i++) await new Promise<void>((r) => setImmediate(r));
};

function setup(options: { onClosing?: () => unknown; remove?: (request: RemoveRequest) => Promise<CasResult>; unit?: ClosableUnit } = {}) {
  const stores = memoryStores();
  const clock = new SimulatedClock();
  const ended: [string, Terminal][] = [];
  const calls: string[] = [];
  const Shard = defineSpot<{ n: number }>({
    type: 'Shard',
    kind: 'instance',
    relocation: recreateOnRelocation(),
    create: () => ({ n: 0 }),
    receive: (state) => ++state.n,
    onClosing: options.onClosing ?? (() => void calls.push('onClosing')),
  });
  const Hall = defineSpot<object>({ type: 'Hall', kind: 'user', relocation: recreateOnRelocation(), create: () => ({}), receive: () => 'hall' });
  const objects = new ObjectServer({
    self,
    clock,
    location: stores.location,
    relocationStore: stores.relocation,
    types: new Map<string, never>([
      ['Shard', Shard as never],
      ['Hall', Hall as never],
    ]),
    reply: (env, terminal) => void ended.push([env.id, terminal]),
    rejectStaleGeneration: () => undefined,
    send: () => undefined,
    request: async () => undefined,
    logger: silentLog,
  });
  const removes: RemoveRequest[] = [];
  const ports: SpotClosePorts = {
    clock,
    logger: silentLog,
    objects,
    location: {
      remove: (request) => {
        removes.push(request);
        return options.remove ? options.remove(request) : stores.location.remove(request);
      },
    },
    relocationStore: stores.relocation,
    storeRetryMs: 1000,
    terminal: (env, terminal) => void ended.push([env.id, terminal]),
    unitOf: () => options.unit,
    invalidate: (key) => void calls.push(`invalidate ${key}`),
  };
  objects.closeHandler = new InstanceSpotClose(ports);
  const env = (id: string, extra: Partial<Envelope> = {}): Envelope => ({ id, to: 's:shard', gen: 0, body: encodeValue({}, 'message'), from: self, req: 1, ...extra });
  return { stores, clock, objects, ended, calls, removes, env };
}

async function placed(t: ReturnType<typeof setup>) {
  const placement = await t.objects.placeInstance('Shard', 'shard');
  expect('local' in placement).toBe(true);
  return t.objects.get('s:shard')!;
}

test('a close ends queued work, runs onClosing, removes both records and the instance; a second close joins it', async () => {
  const t = setup();
  const spot = await placed(t);
  const generation = spot.objectGeneration;
  expect(await t.stores.relocation.getInstanceCreation('shard')).toMatchObject({ objectGeneration: generation });
  spot.lane.pause(); // the queue holds what arrives, as behind a running turn
  t.objects.deliver(t.env('queued'));
  t.objects.deliver(t.env('close-1', { close: 1 }));
  t.objects.deliver(t.env('close-2', { close: 1 }));
  t.objects.deliver(t.env('late'));
  expect(t.ended.map(([id, terminal]) => [id, terminal.kind])).toEqual([
    ['queued', 'closed'],
    ['late', 'closed'],
  ]);
  spot.lane.resume();
  await flush();
  expect(t.calls).toEqual(['onClosing', 'invalidate s:shard']);
  expect(t.ended.slice(2)).toEqual([
    ['close-1', { ok: true }],
    ['close-2', { ok: true }],
  ]);
  expect(t.objects.get('s:shard')).toBeUndefined();
  expect(await t.stores.location.get({ kind: 'spot', id: 'shard' })).toBeUndefined();
  expect(await t.stores.relocation.getInstanceCreation('shard')).toBeUndefined();
  await t.stores.close();
});

test('§12: a unit that sealed the Spot came first (moving, nothing changes); a unit still waiting is closed first and ends when the close is done', async () => {
  const sealed = { sealed: true, closeFirst: jest.fn(), closeDone: jest.fn() };
  const a = setup({ unit: sealed });
  await placed(a);
  a.objects.deliver(a.env('close', { close: 1 }));
  expect(a.ended).toEqual([['close', expect.objectContaining({ ok: false, kind: 'moving' })]]);
  expect(a.ended[0]![1].error).toContain('not resubmitted');
  expect(sealed.closeFirst).not.toHaveBeenCalled();
  expect(a.objects.get('s:shard')?.closing).toBeUndefined();
  await a.stores.close();

  const order: string[] = [];
  const waiting = { sealed: false, closeFirst: jest.fn(() => order.push('closeFirst')), closeDone: jest.fn(() => order.push('closeDone')) };
  const b = setup({ unit: waiting, onClosing: () => void order.push('onClosing') });
  await placed(b);
  b.objects.deliver(b.env('close', { close: 1 }));
  await flush();
  expect(order).toEqual(['closeFirst', 'onClosing', 'closeDone']);
  expect(b.ended).toEqual([['close', { ok: true }]]);
  await b.stores.close();
});

test('a User Spot is not closed (not-found naming it); a throwing onClosing still closes the Spot', async () => {
  const t = setup({
    onClosing: () => {
      throw new Error('callback failed');
    },
  });
  await t.objects.createSpot('Hall', 'hall');
  t.objects.deliver({ ...t.env('close-hall', { close: 1 }), to: 's:hall' });
  expect(t.ended[0]![1]).toMatchObject({ ok: false, kind: 'not-found' });
  expect(t.ended[0]![1].error).toContain('not an Instance Spot');
  expect(t.objects.get('s:hall')).toBeDefined();
  await placed(t);
  t.objects.deliver(t.env('close', { close: 1 }));
  await flush();
  expect(t.ended[1]).toEqual(['close', { ok: true }]);
  expect(t.objects.get('s:shard')).toBeUndefined();
  await t.stores.close();
});

test('a Location Store without an answer is asked again with the same operation id until storeRetryMs, then the close ends unavailable', async () => {
  let failures = 2;
  const t = setup({
    remove: async (request) => {
      if (failures-- > 0) throw new StoreUnavailableError('injected: no answer');
      return t.stores.location.remove(request);
    },
  });
  await placed(t);
  t.objects.deliver(t.env('close', { close: 1 }));
  await flush();
  expect(t.removes).toHaveLength(1);
  for (let i = 0; i < 2; i++) {
    t.clock.increment(100); // each retry pause (20 ms, then 40 ms) is well within storeRetryMs
    await flush();
  }
  expect(t.removes).toHaveLength(3);
  expect(new Set(t.removes.map((r) => r.opId)).size).toBe(1);
  expect(t.ended).toEqual([['close', { ok: true }]]);
  expect(await t.stores.location.get({ kind: 'spot', id: 'shard' })).toBeUndefined();
  await t.stores.close();

  const down = setup({ remove: async () => Promise.reject(new StoreUnavailableError('injected: down')) });
  await placed(down);
  down.objects.deliver(down.env('close', { close: 1 }));
  for (let i = 0; i < 50 && down.ended.length === 0; i++) {
    down.clock.increment(200);
    await flush();
  }
  expect(down.ended).toEqual([['close', expect.objectContaining({ ok: false, kind: 'unavailable' })]]);
  expect(down.ended[0]![1].error).toContain('could not be removed');
  // The Spot is closed here either way; its creation record stays with the record that could not be removed.
  expect(down.objects.get('s:shard')).toBeUndefined();
  expect(await down.stores.relocation.getInstanceCreation('shard')).toBeDefined();
  await down.stores.close();
});

test('an owner record that changed authority is not removed: the close ends unavailable and says so', async () => {
  const t = setup({ remove: async () => ({ status: 'conflict', record: { kind: 'spot', id: 'shard', type: 'Shard', owner: { nodeId: 'other', lifecycleGeneration: 1 }, objectGeneration: 1, authorityGeneration: 9 } }) });
  await placed(t);
  t.objects.deliver(t.env('close', { close: 1 }));
  await flush();
  expect(t.ended).toEqual([['close', expect.objectContaining({ ok: false, kind: 'unavailable' })]]);
  expect(t.ended[0]![1].error).toContain('names other');
  await t.stores.close();
});
