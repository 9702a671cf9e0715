/**
 * §14 bounded teardown of the session endpoint (listener, its ws connections and their write queues), on both
 * stacks, in a real child process (child/sessions-exit-child.ts): after a normal Shutdown of a session owner and a
 * Shutdown past its deadline (ForceStopped/DeadlineExceeded) of one whose clients are still streaming — one of them
 * ignoring the move, so its socket is terminated — no endpoint holds a socket, a queued write or a session, no
 * application callback runs after the Shutdowns returned, every client ends, and once the stores are closed the
 * process exits by itself with code 0 (no listener, socket or timer left).
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { TerminationOutcome, TerminationReason } from '../../runtime';
import { runExitChild, type ChildRun } from '../support/exit-child';

/** Far below every period a leaked timer would run on (lease renewal, resume window, seal timeout). */
const EXIT_AFTER_CLOSE_MS = 5000;
const CHILD_BOUND_MS = 60_000;

const runChild = (keyPrefix: string): Promise<ChildRun> =>
  runExitChild(path.join(__dirname, 'child', 'sessions-exit-child.ts'), keyPrefix, { exitAfterCloseMs: EXIT_AFTER_CLOSE_MS, childMs: CHILD_BOUND_MS });

test('session endpoints tear down within bounds on both stacks (normal and past the deadline): nothing left, no late callback, the process exits', async () => {
  const keyPrefix = `zlink:spec:sessions-exit:${randomBytes(6).toString('hex')}:`;
  const run = await runChild(keyPrefix);
  expect(run.stderr).toBe('');
  const released = { openConnections: 0, pendingWrites: 0, sessions: 0 };
  const stack = (name: string) => ({
    step: 'stack',
    stack: name,
    forced: { outcome: TerminationOutcome.ForceStopped, reason: TerminationReason.DeadlineExceeded, sessionsHeld: 0, after: released, client: 'closed', rawClosed: true },
    owner: { outcome: TerminationOutcome.Stopped, held: released, client: 'closed', code: 'unavailable' },
    actors: TerminationOutcome.Stopped,
    forcedClientCode: 'unavailable',
    lateCallbacks: 0,
  });
  expect(run.lines).toEqual([stack('memory+in-process'), stack('redis+ws'), { step: 'closed' }]);
  expect(run.code).toBe(0);
  expect(run.exitAfterCloseMs).toBeLessThan(EXIT_AFTER_CLOSE_MS);
}, CHILD_BOUND_MS + 10_000);
