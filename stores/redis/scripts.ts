/**
 * Loads the Lua scripts (one concept per .lua file) and registers them with ioredis `defineCommand`: the first
 * call on each connection sends EVAL, later ones EVALSHA, and a NOSCRIPT reply (a flushed or restarted server) is
 * answered by re-sending the call as EVAL. The bookkeeping is per socket, so on a cluster it is per node. Files are found relative to __dirname, which is this source
 * directory under ts-jest and dist/stores/redis after `npm run build` (tools/copy-assets.js copies *.lua).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster, Redis } from 'ioredis';

/** Script name (ioredis command) -> file, and whether it needs the op guard functions (op-guard.lua). */
const SCRIPTS = {
  opFence: { file: 'op-fence', guard: false },
  ownerClaim: { file: 'owner-claim', guard: true },
  ownerCas: { file: 'owner-cas', guard: true },
  ownerCommit: { file: 'owner-commit', guard: true },
  ownerRemove: { file: 'owner-remove', guard: true },
  ownerInstall: { file: 'owner-install', guard: true },
  aggregateStage: { file: 'aggregate-stage', guard: true },
  aggregateCommit: { file: 'aggregate-commit', guard: true },
  aggregateDiscard: { file: 'aggregate-discard', guard: false },
  leaseAcquire: { file: 'lease-acquire', guard: true },
  leaseRenew: { file: 'lease-renew', guard: false },
  leasePublish: { file: 'lease-publish', guard: false },
  leaseRelease: { file: 'lease-release', guard: false },
  descriptorsList: { file: 'descriptors-list', guard: false },
  firstWrite: { file: 'first-write', guard: false },
  instanceRecord: { file: 'instance-record', guard: false },
  instanceRemove: { file: 'instance-remove', guard: false },
  channelJoin: { file: 'channel-join', guard: true },
  channelLeave: { file: 'channel-leave', guard: true },
} as const;

export type ScriptName = keyof typeof SCRIPTS;

const read = (file: string): string => readFileSync(join(__dirname, `${file}.lua`), 'utf8');

export function defineScripts(redis: Redis | Cluster): void {
  const guard = read('op-guard');
  for (const [name, { file, guard: guarded }] of Object.entries(SCRIPTS)) {
    // No fixed numberOfKeys: casMany and op-fence take a variable number of keys, so every call passes numkeys.
    redis.defineCommand(name, { lua: guarded ? `${guard}\n${read(file)}` : read(file) });
  }
}

/** Calls a defined script: numkeys, keys, args (defineCommand adds the method at run time). */
export function runScript(redis: Redis | Cluster, name: ScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
  const command = (redis as unknown as Record<ScriptName, (...argv: (string | number)[]) => Promise<unknown>>)[name];
  return command.call(redis, keys.length, ...keys, ...args);
}
