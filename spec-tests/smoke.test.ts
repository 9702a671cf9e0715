import { createRuntime, defineActor, memoryStores, preserveState, RelocationMode, FrameworkRuntimeState } from '../runtime';

const Counter = defineActor<{ n: number }>({
  type: 'Counter',
  relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) }),
  create: () => ({ n: 0 }),
  receive: (state, message: { op: string; by?: number }) => {
    if (message.op === 'add') state.n += message.by ?? 1;
    return state.n;
  },
});

test('smoke', async () => {
  const stores = memoryStores();
  const timing = { discoveryIntervalMs: 20, messageFollowDurationMs: 200, relocationCutoverWaitTimeoutMs: 100 };
  const a = await createRuntime({ nodeId: 'a', applicationVersion: 1, stores, types: [Counter], timing });
  const b = await createRuntime({ nodeId: 'b', applicationVersion: 1, stores, types: [Counter], timing });
  await a.createActor('Counter', 'c1');
  a.send({ actor: 'c1' }, { op: 'add', by: 2 });
  expect(await a.request({ actor: 'c1' }, { op: 'get' })).toBe(2);
  expect(await b.request({ actor: 'c1' }, { op: 'add', by: 1 })).toBe(3);
  const result = await a.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 5000 });
  expect(result).toEqual({ mode: 0, targetApplicationVersion: 1, outcome: 0, reason: 0 });
  expect(a.status.state).toBe(FrameworkRuntimeState.Relocated);
  expect(await a.request({ actor: 'c1' }, { op: 'add', by: 1 })).toBe(4);
  await new Promise((r) => setTimeout(r, 100));
  expect((await a.locate({ actor: 'c1' }))?.nodeId).toBe('b');
  expect(await b.request({ actor: 'c1' }, { op: 'get' })).toBe(4);
  console.log(a.diagnostics(), a.status);
  expect((await a.shutdown()).outcome).toBe(0);
  expect((await b.shutdown()).outcome).toBe(0);
});
