import { SimulatedClock } from 'xstate';

/**
 * The one source of time for a host: timers, deadlines, lease renewal and the machines' delays all use it,
 * so a test can drive a whole host with xstate's SimulatedClock instead of sleeping.
 */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  // Not unref'd: a running host keeps its process alive until shutdown, like a listening server, and an
  // awaited relocate() on the in-process transport must not be cut short by an empty event loop.
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export { SimulatedClock };

/** Resolves after `ms` on `clock`; rejects with the signal's reason on abort. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clock.clearTimeout(handle);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
