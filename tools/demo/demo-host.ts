/**
 * Child-process entry of `npm run demo -- --processes`: one DemoNode (one zlink host) per process, driven by the
 * orchestrator over IPC (`child_process.fork(dist/tools/demo/demo-host.js, [JSON config])`), like the bench's hosts.
 */
import type { Call, Reply } from '../bench/bench-common';
import { DemoNode, type DemoNodeConfig } from './demo-node';

if (!process.send) {
  console.error('demo-host: run by tools/demo/demo.ts through child_process.fork, not directly');
  process.exit(2);
}
const node = new DemoNode(JSON.parse(process.argv[2] ?? '{}') as DemoNodeConfig);

process.on('message', (call: Call) => {
  const done = call.cmd === 'stop' ? () => process.exit(0) : undefined;
  node.handle(call.cmd, call.args).then(
    (value) => process.send!({ id: call.id, ok: true, value } satisfies Reply, undefined, {}, done),
    (error: unknown) =>
      process.send!({ id: call.id, ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies Reply, undefined, {}, done),
  );
});
// The orchestrator went away: do not linger with a listening host.
process.on('disconnect', () => process.exit(1));
