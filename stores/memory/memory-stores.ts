/**
 * The embedded default provider and fast test twin of stores/redis. Every call is synchronous underneath, so
 * no reply is ever lost; the opId log still makes replays idempotent so both providers keep one contract.
 * Instances are independent: hosts in one process share one instance (API.md "Creating a host").
 */
import type { Stores } from '../types';
import { MemoryChannelStore } from './memory-channels';
import { MemoryDescriptorStore } from './memory-descriptors';
import { MemoryLocationStore } from './memory-location';
import { MemoryRelocationStore } from './memory-relocation';
import { OpLog } from './op-log';

export interface MemoryStoresOptions {
  /** Clock for lease and TTL expiry. @default Date.now */
  readonly now?: () => number;
  /** How long a write's result is kept for replays of its opId. @default 3_600_000 (1 h) */
  readonly opResultTtlMs?: number;
}

export interface MemoryStores extends Stores {
  readonly provider: 'memory';
  readonly location: MemoryLocationStore;
}

export const MEMORY_STORE_DEFAULTS = { opResultTtlMs: 3_600_000 } as const;

export function memoryStores(options: MemoryStoresOptions = {}): MemoryStores {
  const now = options.now ?? Date.now;
  const opTtlMs = options.opResultTtlMs ?? MEMORY_STORE_DEFAULTS.opResultTtlMs;
  return {
    provider: 'memory',
    location: new MemoryLocationStore(new OpLog(now, opTtlMs)),
    descriptors: new MemoryDescriptorStore(now),
    relocation: new MemoryRelocationStore(now),
    channels: new MemoryChannelStore(new OpLog(now, opTtlMs)),
    ping: async () => undefined,
    close: async () => undefined,
  };
}
