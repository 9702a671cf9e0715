/**
 * The Object Server's one ObjectGeneration check (§12): whatever delivers a message here — the router, or the merge of
 * a relocated unit's queue — a message addressed to another generation is rejected and never runs.
 */
import { memoryStores } from '../stores/memory/memory-stores';
import { systemClock } from './clock';
import { encodeValue } from './codec';
import { defineActor, recreateOnRelocation } from './definitions';
import type { Envelope } from './envelope';
import { ObjectServer } from './objects';
import { silentLog } from './logger';

test('a message for another ObjectGeneration is rejected through the port and never reaches the handler', async () => {
  const ran: unknown[] = [];
  const stale: [string, number, number][] = [];
  const Probe = defineActor<{ n: number }>({ type: 'Probe', relocation: recreateOnRelocation(), create: () => ({ n: 0 }), receive: (_s, m) => void ran.push(m) });
  const stores = memoryStores();
  const self = { nodeId: 'n', lifecycleGeneration: 1 };
  const objects = new ObjectServer({
    self,
    clock: systemClock,
    location: stores.location,
    relocationStore: stores.relocation,
    types: new Map([['Probe', Probe]]),
    reply: () => undefined,
    rejectStaleGeneration: (env, current) => void stale.push([env.id, env.gen, current]),
    send: () => undefined,
    request: async () => undefined,
    logger: silentLog,
  });
  await objects.createActor('Probe', 'x', undefined);
  const gen = objects.get('a:x')!.objectGeneration;
  const env = (id: string, g: number): Envelope => ({ id, to: 'a:x', gen: g, body: encodeValue(id, 'message'), from: self, seq: 1 });
  objects.deliver(env('old', gen + 1));
  objects.deliver(env('current', gen));
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect(stale).toEqual([['old', gen + 1, gen]]);
  expect(ran).toEqual(['current']);
  await stores.close();
});
