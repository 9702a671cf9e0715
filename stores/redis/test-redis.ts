/**
 * Test helpers for suites against a real Redis (REDIS_URL, default redis://127.0.0.1:6379). Reachability is
 * probed synchronously (a child process) because jest decides describe vs describe.skip while collecting.
 * Under CI=true an unreachable Redis fails the run loudly; elsewhere the suite is skipped with a warning.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const PROBE = `
const url = new URL(process.argv[1]);
const socket = require('node:net').connect(Number(url.port || 6379), url.hostname);
socket.setTimeout(1000, () => process.exit(1));
socket.on('error', () => process.exit(1));
socket.on('connect', () => socket.write('PING\\r\\n'));
socket.on('data', (data) => process.exit(/^(\\+PONG|-NOAUTH)/.test(String(data)) ? 0 : 1));
`;

/** describe() when Redis answers; otherwise a failing test under CI, or a skipped suite with a warning. */
export function describeWithRedis(name: string, body: () => void): void {
  if (spawnSync(process.execPath, ['-e', PROBE, REDIS_URL], { timeout: 3000 }).status === 0) return describe(name, body);
  if (process.env.CI === 'true') {
    describe(name, () => {
      test('redis is reachable', () => {
        throw new Error(`CI=true and no Redis answers at ${REDIS_URL}: the Redis store suites cannot run`);
      });
    });
    return;
  }
  console.warn(`[stores] skipping "${name}": no Redis at ${REDIS_URL} (set REDIS_URL, or CI=true to fail instead)`);
  describe.skip(name, body);
}

/** A key prefix no other test file uses. */
export function uniquePrefix(file: string): string {
  return `zlink:test:${file}:${randomBytes(6).toString('hex')}:`;
}

/** A plain client for setup, fault injection and cleanup (not the store under test). */
export function adminClient(): Redis {
  return new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
}

export { deleteKeys } from './delete-keys';

/** A counter from INFO (`errorstat_MOVED` → count, `cmdstat_asking` → calls), to prove a redirect or retry really happened. */
export async function stat(node: Redis, section: 'errorstats' | 'commandstats', name: string): Promise<number> {
  const match = new RegExp(`^${name}:(?:count|calls)=(\\d+)`, 'm').exec(await node.info(section));
  return match ? Number(match[1]) : 0;
}
