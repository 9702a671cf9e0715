/**
 * The README's usage example, kept runnable: `npm run build && node dist/tools/examples/quickstart.js`
 * (and run by tools/examples/quickstart.test.ts). Two hosts in one process share a memory store and the
 * in-process transport; the first moves its workload to the second and shuts down.
 */
import {
  createRuntime,
  defineActor,
  memoryStores,
  preserveState,
  RelocationMode,
  RelocationOutcome,
} from '../../runtime';

const Counter = defineActor<{ n: number }>({
  type: 'Counter',
  relocation: preserveState({
    capture: (s) => Buffer.from(JSON.stringify(s)),
    restore: (bytes) => JSON.parse(bytes.toString()),
  }),
  create: () => ({ n: 0 }),
  receive: (state, message: { op: 'add'; by: number } | { op: 'get' }) => {
    if (message.op === 'add') state.n += message.by;
    return state.n;
  },
});

export async function quickstart(): Promise<{ before: unknown; after: unknown; owner: string | undefined }> {
  const stores = memoryStores(); // embedded default; use redisStores({ url, keyPrefix }) across processes
  const a = await createRuntime({ nodeId: 'node-a', applicationVersion: 1, stores, types: [Counter] });
  const b = await createRuntime({ nodeId: 'node-b', applicationVersion: 1, stores, types: [Counter] });

  await a.createActor('Counter', 'counter-1');
  a.send({ actor: 'counter-1' }, { op: 'add', by: 2 });
  const before = await b.request({ actor: 'counter-1' }, { op: 'get' }); // 2, served by node-a

  // Planned maintenance of node-a: its workload moves to a same-version node (node-b).
  const result = await a.relocate({ mode: RelocationMode.PlannedMaintenance });
  if (result.outcome !== RelocationOutcome.Relocated) throw new Error(`relocation blocked: reason ${result.reason}`);
  await a.shutdown(); // Stopped/None; callers with the old route are re-routed to node-b

  const after = await b.request({ actor: 'counter-1' }, { op: 'add', by: 1 }); // 3: state moved with the actor
  const owner = (await b.locate({ actor: 'counter-1' }))?.nodeId; // 'node-b'
  await b.shutdown();
  await stores.close(); // after every host that uses them is shut down; then the process exits by itself
  return { before, after, owner };
}

if (require.main === module) {
  quickstart().then(
    (r) => console.log(r),
    (e: unknown) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
