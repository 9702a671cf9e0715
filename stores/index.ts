/** The stores layer: interfaces (types.ts), the memory and Redis providers, and their errors. */
export * from './types';
export { LeaseHeldError } from './lease-held-error';
export { MAX_PAGE_BYTES, MAX_PAGE_ENTRIES } from './aggregate-pages';
export { memoryStores, MEMORY_STORE_DEFAULTS, type MemoryStores, type MemoryStoresOptions } from './memory/memory-stores';
export { redisStores, REDIS_STORE_DEFAULTS, type RedisClusterNode, type RedisClusterOptions, type RedisStoresOptions } from './redis/redis-stores';
