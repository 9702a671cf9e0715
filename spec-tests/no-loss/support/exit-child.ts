/**
 * Child process of process-exits-after-close.test.ts. Runs two hosts on each stack with default timings, as an
 * application would — memory stores + in-process transport, then Redis stores + ws: a refused duplicate start, an
 * actor with a pending 60 s timer, requests with a 30 s timeout, a relocation, a message through the old owner while
 * it follows, both shutdowns, then closes the stores and does nothing more: it never calls process.exit. The parent
 * proves the process ends by itself (no timer, socket or Redis connection left holding the event loop).
 *
 * Prints one JSON line per step to stdout; the last is {"step":"closed"}. Env: REDIS_URL, KEY_PREFIX.
 */
import {
  createRuntime,
  defineActor,
  memoryStores,
  NodeIdInUseError,
  preserveState,
  redisStores,
  RelocationMode,
  RelocationOutcome,
  TerminationOutcome,
  type MeshConfig,
  type Stores,
} from '../../../runtime';

const Counter = defineActor<{ n: number }>({
  type: 'Counter',
  relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) }),
  create: () => ({ n: 0 }),
  receive: (state, message: { op: 'add' } | { op: 'get' }, ctx) => {
    if (!ctx.timers.has('tick')) ctx.timers.schedule('tick', { dueMs: 60_000, periodMs: 60_000 });
    return message.op === 'add' ? ++state.n : state.n;
  },
  onTimer: (state) => state.n,
});

const report = (step: string, detail: Record<string, unknown> = {}): void => {
  process.stdout.write(`${JSON.stringify({ step, ...detail })}\n`);
};

async function run(stack: string, stores: Stores, meshes: MeshConfig[]): Promise<void> {
  const a = await createRuntime({ nodeId: 'node-a', applicationVersion: 1, stores, meshes, types: [Counter] });
  const duplicate = await createRuntime({ nodeId: 'node-a', applicationVersion: 1, stores, meshes, types: [Counter] }).then(
    () => 'accepted',
    (error: unknown) => (error instanceof NodeIdInUseError ? 'refused' : String(error)),
  );
  if (duplicate !== 'refused') throw new Error(`${stack}: duplicate start ${duplicate}`);
  const b = await createRuntime({ nodeId: 'node-b', applicationVersion: 1, stores, meshes, types: [Counter] });
  await a.createActor('Counter', 'counter-1');
  await b.request({ actor: 'counter-1' }, { op: 'add' }, { timeoutMs: 30_000 });
  const relocated = await a.relocate({ mode: RelocationMode.PlannedMaintenance });
  if (relocated.outcome !== RelocationOutcome.Relocated) throw new Error(`${stack}: relocation ended ${JSON.stringify(relocated)}`);
  a.send({ actor: 'counter-1' }, { op: 'add' }); // followed to node-b
  await a.request({ actor: 'counter-1' }, { op: 'get' }, { timeoutMs: 30_000 });
  const stoppedA = await a.shutdown();
  const value = await b.request({ actor: 'counter-1' }, { op: 'add' }, { timeoutMs: 30_000 });
  const stoppedB = await b.shutdown();
  if (stoppedA.outcome !== TerminationOutcome.Stopped || stoppedB.outcome !== TerminationOutcome.Stopped)
    throw new Error(`${stack}: shutdown ended ${JSON.stringify([stoppedA, stoppedB])}`);
  await stores.close();
  report('stack', { stack, value });
}

async function main(): Promise<void> {
  await run('memory+in-process', memoryStores(), [{ name: 'main' }]);
  const redis = redisStores({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', keyPrefix: process.env.KEY_PREFIX ?? 'zlink:exit-child:' });
  await run('redis+ws', redis, [{ name: 'main', listen: { host: '127.0.0.1', port: 0 } }]);
  report('closed');
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
