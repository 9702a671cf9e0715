/**
 * Store call metrics (§16): the host sees its stores through this wrapper, which times every call of the
 * Location, descriptor, Relocation and channel Store and counts the ones that fail. Labels are the store and method
 * names and the error class — never ids. The stores themselves are untouched (they are shared between hosts).
 */
import type { Stores } from '../stores/types';
import { telemetry } from './telemetry';

/** Error classes the stores throw by design; anything else is counted as 'Error' (bounded label values). */
const KNOWN_ERRORS = new Set(['StoreUnavailableError', 'DataLostError', 'LeaseHeldError', 'TypeError', 'RangeError']);

function errorClass(error: unknown): string {
  const name = (error as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' && KNOWN_ERRORS.has(name) ? name : 'Error';
}

/**
 * A view of `target` whose methods report their latency and failures. Methods are looked up on the target at
 * every call, so a store whose method is replaced later (tests inject faults that way) is still measured.
 */
function timed<T extends object>(target: T, store: string): T {
  const wrappers = new Map<string, { fn: (...args: unknown[]) => unknown; wrapper: (...args: unknown[]) => unknown }>();
  return new Proxy(target, {
    get(t, prop) {
      const value: unknown = Reflect.get(t, prop, t);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      const known = wrappers.get(prop);
      if (known && known.fn === value) return known.wrapper;
      const fn = value as (...args: unknown[]) => unknown;
      const wrapper = (...args: unknown[]): unknown => {
        const started = performance.now();
        const done = (error?: unknown) => telemetry.storeCall(store, prop, performance.now() - started, error === undefined ? undefined : errorClass(error));
        let result: unknown;
        try {
          result = fn.apply(t, args);
        } catch (error) {
          done(error);
          throw error;
        }
        if (result instanceof Promise)
          return result.then(
            (v: unknown) => {
              done();
              return v;
            },
            (error: unknown) => {
              done(error);
              throw error;
            },
          );
        done();
        return result;
      };
      wrappers.set(prop, { fn, wrapper });
      return wrapper;
    },
  });
}

/** The stores as one host uses them, with call metrics; `close` and everything else are the application's, as they are. */
export function measuredStores(stores: Stores): Stores {
  const parts = new Map<string, { raw: object; view: object }>();
  const part = (name: 'location' | 'descriptors' | 'relocation' | 'channels'): object => {
    const raw = stores[name];
    let entry = parts.get(name);
    if (!entry || entry.raw !== raw) parts.set(name, (entry = { raw, view: timed(raw, name) }));
    return entry.view;
  };
  const top = timed(stores, 'stores');
  return new Proxy(stores, {
    get(t, prop) {
      if (prop === 'location' || prop === 'descriptors' || prop === 'relocation' || prop === 'channels') return part(prop);
      if (prop === 'ping') return top.ping;
      return Reflect.get(t, prop, t);
    },
  });
}
