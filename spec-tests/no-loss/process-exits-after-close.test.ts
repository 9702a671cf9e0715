/**
 * Processes end cleanly: once every host is shut down and the stores are closed (`stores.close()`, both
 * providers), nothing the runtime started — lease renewal, discovery, actor timers, request timeouts, Message
 * Follow, ws sockets and dialers, the ioredis connection — keeps the event loop alive, so a Node process exits by
 * itself with code 0. Proven on a real child process (support/exit-child.ts, run through support/ts-require.js
 * with the project's own TypeScript), on both stacks: memory + in-process, Redis + ws.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { runExitChild, type ChildRun } from '../support/exit-child';

/** Far below every default period a leaked timer would run on (leaseMs 10 s, follow 10 s, a 60 s actor timer). */
const EXIT_AFTER_CLOSE_MS = 5000;
/** Whole child run, startup (compiling the sources) included; the child is killed past it. */
const CHILD_BOUND_MS = 45_000;

const runChild = (keyPrefix: string): Promise<ChildRun> =>
  runExitChild(path.join(__dirname, 'support', 'exit-child.ts'), keyPrefix, { exitAfterCloseMs: EXIT_AFTER_CLOSE_MS, childMs: CHILD_BOUND_MS });

test('after every host is shut down and the stores are closed, the process exits by itself with code 0 (both stacks)', async () => {
  const keyPrefix = `zlink:spec:exit:${randomBytes(6).toString('hex')}:`;
  const run = await runChild(keyPrefix);
  expect(run.stderr).toBe('');
  expect(run.lines).toEqual([
    { step: 'stack', stack: 'memory+in-process', value: 3 },
    { step: 'stack', stack: 'redis+ws', value: 3 },
    { step: 'closed' },
  ]);
  expect({ code: run.code, signal: run.signal }).toEqual({ code: 0, signal: null });
  expect(run.exitAfterCloseMs).toBeLessThan(EXIT_AFTER_CLOSE_MS);
}, CHILD_BOUND_MS + 10_000);
