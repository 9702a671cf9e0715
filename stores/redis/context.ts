/** What every part of the Redis provider shares: the connection, the key layout and the op result TTL. */
import type { RedisClient } from './client';
import type { RedisKeys } from './keys';

export interface RedisContext {
  readonly client: RedisClient;
  readonly keys: RedisKeys;
  /** How long per-operation results and fences live (must outlast any late replay of a write). */
  readonly opTtlMs: number;
}
