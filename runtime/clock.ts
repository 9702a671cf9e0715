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
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, ms);
    // Host timers never keep a process alive on their own; open sockets and pending promises do.
    handle.unref?.();
    return handle;
  },
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
