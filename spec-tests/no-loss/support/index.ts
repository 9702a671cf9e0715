/**
 * Helpers for the no-loss tests: hosts with their own (wrapped) view of the stack's stores, and honest fault
 * wrappers at the store and transport boundaries. A wrapper never drops or alters a value: it only delays a
 * store answer or cuts a connection the way a network fault would (Transport.disconnect).
 */
import { createTransport } from '../../../transport';
import type { RuntimeMessage, Transport, TransportFactory } from '../../../transport/types';
import { createRuntime, type FrameworkRuntime, type RuntimeOptions, type Stores } from '../../../runtime';
import type { LocationStore, NodeDescriptor, NodeRef } from '../../../stores/types';
import { FAST_TIMING, meshesFor, type Stack } from '../../support/stack';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const tick = () => new Promise<void>((r) => setImmediate(r));

/** Hosts created with their own Stores object (a wrapper around the stack's); shut down by close(). */
export function customHosts(stack: Stack) {
  const hosts: FrameworkRuntime[] = [];
  return {
    async host(options: Omit<RuntimeOptions, 'meshes'>): Promise<FrameworkRuntime> {
      const host = await createRuntime({ timing: FAST_TIMING, meshes: meshesFor(stack.name), ...options });
      hosts.push(host);
      return host;
    },
    async close(): Promise<void> {
      await Promise.all(hosts.map((h) => h.shutdown({ deadlineMs: 5000 }).catch(() => undefined)));
    },
  };
}

/** `target` with some members replaced; every other method runs on the real object (`this` = target). */
export function override<T extends object>(target: T, overrides: Partial<T>): T {
  return new Proxy(target, {
    get(t, prop) {
      if (Object.prototype.hasOwnProperty.call(overrides, prop)) return (overrides as Record<string | symbol, unknown>)[prop];
      const value = Reflect.get(t, prop, t) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
    },
  });
}

/** A Stores view whose parts are the real ones, except those given. */
export function storesWith(stores: Stores, parts: Partial<Pick<Stores, 'location' | 'descriptors'>>): Stores {
  return override(stores, parts as Partial<Stores>);
}

/**
 * The real Location Store, except that cas/casMany/commitOwners (and the SpotWide commit) answer only after `delay()` resolves:
 * a slow store write. The write itself is applied by the real store after the delay, unchanged.
 */
export function delayedOwnerCas(location: LocationStore, delay: () => Promise<void>): LocationStore {
  return override(location, {
    cas: async (...args: Parameters<LocationStore['cas']>) => {
      await delay();
      return location.cas(...args);
    },
    casMany: async (...args: Parameters<LocationStore['casMany']>) => {
      await delay();
      return location.casMany(...args);
    },
    commitOwners: async (...args: Parameters<LocationStore['commitOwners']>) => {
      await delay();
      return location.commitOwners(...args);
    },
    commitAggregate: async (...args: Parameters<LocationStore['commitAggregate']>) => {
      await delay();
      return location.commitAggregate(...args);
    },
  });
}

/** The real transport, with `onInbound` called before each runtime message is handed to the host (and a handle to it). */
export function observedTransport(onInbound: (transport: Transport, from: NodeRef, message: RuntimeMessage) => void, box: { transport?: Transport } = {}): TransportFactory {
  return (options) => {
    const transport = createTransport({
      ...options,
      handlers: {
        ...options.handlers,
        onMessage: (from, message) => {
          onInbound(transport, from, message);
          options.handlers.onMessage(from, message);
        },
      },
    });
    box.transport = transport;
    return transport;
  };
}

/** The real transport and a handle to it (tests read its peer table and may cut a connection with disconnect). */
export function handleTransport(box: { transport?: Transport }): TransportFactory {
  return (options) => (box.transport = createTransport(options));
}

/** Whether `transport` has a Ready connection to a run of `nodeId`. */
export function readyTo(transport: Transport | undefined, nodeId: string): boolean {
  return !!transport?.peers().some((p) => p.nodeId === nodeId && p.state === 'Ready');
}

/** The real transport; `beforeClose` runs synchronously when the host calls close() (its router is closed by then). */
export function closeObservedTransport(beforeClose: () => void): TransportFactory {
  return (options) => {
    const inner = createTransport(options);
    const close: Transport['close'] = () => {
      beforeClose();
      return inner.close();
    };
    return override(inner, { close });
  };
}

export type { NodeDescriptor };

/** Collects the runtime's log lines instead of printing them (the tests assert outcomes, not warnings). */
export function quietLog(lines: string[] = []): { lines: string[]; log: (level: 'warn' | 'error', message: string) => void } {
  return { lines, log: (level, message) => void lines.push(`${level}: ${message}`) };
}

/** Waits for `promise` at most `ms` (the timer is cleared either way, so no handle outlives the test). */
export async function atMost(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([promise, new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
