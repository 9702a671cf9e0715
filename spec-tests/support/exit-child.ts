/**
 * Runs a TypeScript child script (through spec-tests/no-loss/support/ts-require.js, the project's own TypeScript)
 * that prints one JSON line per step, and measures how long the process took to exit after its `closed` step: the
 * proof that nothing the runtime started keeps the event loop alive. The Redis keys under `keyPrefix` are deleted
 * once the child exited, whatever it did.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import Redis from 'ioredis';
import { deleteKeys } from '../../stores/redis/delete-keys';
import { REDIS_URL } from './stack';

export interface ChildRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  lines: Record<string, unknown>[];
  stderr: string;
  /** Exit time after the `closed` step; undefined when the child never printed it. */
  exitAfterCloseMs: number | undefined;
}

export function runExitChild(script: string, keyPrefix: string, bounds: { exitAfterCloseMs: number; childMs: number }): Promise<ChildRun> {
  const child = spawn(process.execPath, ['-r', path.join(__dirname, '..', 'no-loss', 'support', 'ts-require.js'), script], {
    env: { ...process.env, REDIS_URL, KEY_PREFIX: keyPrefix },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  let stdout = '';
  let stderr = '';
  let closedAt: number | undefined;
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    for (let nl = stdout.indexOf('\n'); nl >= 0; nl = stdout.indexOf('\n')) {
      const line = JSON.parse(stdout.slice(0, nl)) as Record<string, unknown>;
      stdout = stdout.slice(nl + 1);
      lines.push(line);
      if (line['step'] === 'closed') {
        closedAt = Date.now();
        // Past the bound the answer is known: do not wait for the whole child bound.
        setTimeout(() => child.kill('SIGKILL'), bounds.exitAfterCloseMs + 1000).unref();
      }
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const kill = setTimeout(() => child.kill('SIGKILL'), bounds.childMs);
  const run = new Promise<ChildRun>((resolve) => {
    child.on('exit', (code, signal) => {
      clearTimeout(kill);
      resolve({ code, signal, lines, stderr, exitAfterCloseMs: closedAt === undefined ? undefined : Date.now() - closedAt });
    });
  });
  return run.finally(async () => {
    const redis = new Redis(REDIS_URL);
    try {
      await deleteKeys(redis, keyPrefix);
    } finally {
      redis.disconnect();
    }
  });
}
