/**
 * The two stacks every main scenario runs on: memory stores + in-process transport, and real Redis + ws on
 * loopback sockets. Tests build hosts through `stack.host(...)` and call `stack.close()` at the end.
 */
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { createRuntime, memoryStores, redisStores, type FrameworkRuntime, type RuntimeOptions, type Stores } from '../../runtime';
import { deleteKeys } from '../../stores/redis/delete-keys';

export type StackName = 'memory+in-process' | 'redis+ws';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export const FAST_TIMING = {
  discoveryIntervalMs: 20,
  messageFollowDurationMs: 1500,
  relocationCutoverWaitTimeoutMs: 200,
  restoreValidityMs: 5000,
  leaseMs: 3000,
};

export interface Stack {
  readonly name: StackName;
  readonly stores: Stores;
  host(options: Omit<RuntimeOptions, 'stores' | 'meshes'> & Partial<Pick<RuntimeOptions, 'meshes'>>): Promise<FrameworkRuntime>;
  close(): Promise<void>;
}

export async function makeStack(name: StackName): Promise<Stack> {
  const prefix = `zlink:spec:${randomBytes(6).toString('hex')}:`;
  const stores = name === 'redis+ws' ? redisStores({ url: REDIS_URL, keyPrefix: prefix }) : memoryStores();
  const hosts: FrameworkRuntime[] = [];
  return {
    name,
    stores,
    async host(options) {
      const host = await createRuntime({
        timing: FAST_TIMING,
        ...options,
        stores,
        meshes: options.meshes ?? (name === 'redis+ws' ? [{ name: 'main', listen: { host: '127.0.0.1', port: 0 } }] : [{ name: 'main' }]),
      });
      hosts.push(host);
      return host;
    },
    async close() {
      await Promise.all(hosts.map((h) => h.shutdown({ deadlineMs: 5000 }).catch(() => undefined)));
      await stores.close();
      if (name === 'redis+ws') {
        const redis = new Redis(REDIS_URL);
        try {
          await deleteKeys(redis, prefix);
        } finally {
          redis.disconnect();
        }
      }
    },
  };
}

export const STACKS: StackName[] = ['memory+in-process', 'redis+ws'];

/** Polls `check` on real time until it holds or `ms` pass. */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 5000, what = 'condition'): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
