// The quickstart in a project that did not install @opentelemetry/api (it is an optional peer dependency):
// zlink loads and runs, metrics are no-ops. Prints one JSON line; never calls process.exit.
'use strict';
const { createRuntime, defineActor, memoryStores, preserveState, RelocationMode } = require('zlink');

let otel = 'absent';
try {
  require.resolve('@opentelemetry/api');
  otel = 'present';
} catch {}

async function main() {
  const Counter = defineActor({
    type: 'Counter',
    relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (bytes) => JSON.parse(bytes.toString()) }),
    create: () => ({ n: 0 }),
    receive: (state, message) => (message.op === 'add' ? (state.n += message.by) : state.n),
  });
  const stores = memoryStores();
  const a = await createRuntime({ nodeId: 'node-a', applicationVersion: 1, stores, types: [Counter] });
  const b = await createRuntime({ nodeId: 'node-b', applicationVersion: 1, stores, types: [Counter] });
  await a.createActor('Counter', 'counter-1');
  a.send({ actor: 'counter-1' }, { op: 'add', by: 2 });
  const before = await b.request({ actor: 'counter-1' }, { op: 'get' });
  await a.relocate({ mode: RelocationMode.PlannedMaintenance });
  await a.shutdown();
  const after = await b.request({ actor: 'counter-1' }, { op: 'add', by: 1 });
  await b.shutdown();
  await stores.close();
  process.stdout.write(`${JSON.stringify({ module: 'cjs-no-otel', otel, before, after })}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
