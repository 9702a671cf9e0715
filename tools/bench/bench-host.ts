/**
 * Child-process entry of `npm run bench` (redis stack): one BenchNode (one zlink runtime) per process, driven by
 * the orchestrator over IPC (`child_process.fork(dist/tools/bench/bench-host.js, [JSON config])`).
 */
import { BenchNode, type NodeConfig } from './bench-node';
import { installMetrics, type Call, type Reply } from './bench-common';

if (!process.send) {
  console.error('bench-host: run by tools/bench/bench.ts through child_process.fork, not directly');
  process.exit(2);
}
const config = JSON.parse(process.argv[2] ?? '{}') as NodeConfig;
const reader = installMetrics();
const node = new BenchNode(config, undefined, (name) => reader.counter(name));

process.on('message', (call: Call) => {
  const done = call.cmd === 'stop' ? () => process.exit(0) : undefined;
  node.handle(call.cmd, call.args).then(
    (value) => process.send!({ id: call.id, ok: true, value } satisfies Reply, undefined, {}, done),
    (error: unknown) =>
      process.send!({ id: call.id, ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies Reply, undefined, {}, done),
  );
});
// The orchestrator went away (crashed or interrupted): do not linger with a listening runtime.
process.on('disconnect', () => process.exit(1));
