/**
 * The one subscriber that publishes host status (STYLE.md "one place changes status"): current value,
 * in-order observation, and the §16 events. A terminal status is never overwritten.
 */
import { abortReason } from './errors';
import type { RuntimeStatus } from '../vocabulary';
import { FrameworkRuntimeState } from '../vocabulary';

export const RELOCATION_CHANGED = 'zlink.runtime.host.relocation_changed';
export const TERMINATION_CHANGED = 'zlink.runtime.host.termination_changed';
export type HostEventName = typeof RELOCATION_CHANGED | typeof TERMINATION_CHANGED;
export type HostEventListener = (status: RuntimeStatus) => void;

/** Observers that fall this far behind lose the oldest intermediate values, never a terminal one. */
const OBSERVER_BUFFER = 1024;

export class StatusPublisher {
  private value: RuntimeStatus;
  private readonly observers = new Set<(s: RuntimeStatus) => void>();
  private readonly listeners = new Map<HostEventName, Set<HostEventListener>>();

  constructor(initial: RuntimeStatus) {
    this.value = Object.freeze({ ...initial });
  }

  get current(): RuntimeStatus {
    return this.value;
  }

  get terminal(): boolean {
    return this.value.state === FrameworkRuntimeState.Stopped;
  }

  publish(patch: Partial<RuntimeStatus>): void {
    if (this.terminal) return;
    const next: RuntimeStatus = Object.freeze({ ...this.value, ...patch, isReady: (patch.state ?? this.value.state) === FrameworkRuntimeState.Serving });
    const relocationChanged = next.state !== this.value.state || next.lastRelocation !== this.value.lastRelocation || next.safeToShutdown !== this.value.safeToShutdown;
    const terminationChanged = next.lastTermination !== this.value.lastTermination;
    this.value = next;
    for (const o of this.observers) o(next);
    if (relocationChanged) this.emit(RELOCATION_CHANGED, next);
    if (terminationChanged) this.emit(TERMINATION_CHANGED, next);
  }

  on(event: HostEventName, listener: HostEventListener): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(listener);
    return () => set!.delete(listener);
  }

  private emit(event: HostEventName, status: RuntimeStatus): void {
    for (const listener of this.listeners.get(event) ?? []) {
      try {
        listener(status);
      } catch {
        // §15: an observer never blocks or breaks the host.
      }
    }
  }

  /** Current value first, then every change in order; ends after the terminal value or on abort. */
  observe(signal?: AbortSignal): AsyncIterable<RuntimeStatus> {
    const publisher = this;
    return {
      [Symbol.asyncIterator](): AsyncIterator<RuntimeStatus> {
        const buffer: RuntimeStatus[] = [publisher.value];
        let wake: (() => void) | undefined;
        let done = false;
        const push = (s: RuntimeStatus) => {
          if (buffer.length >= OBSERVER_BUFFER) buffer.splice(0, 1);
          buffer.push(s);
          wake?.();
        };
        const finish = () => {
          done = true;
          publisher.observers.delete(push);
          signal?.removeEventListener('abort', onAbort);
          wake?.();
        };
        const onAbort = () => finish();
        if (!publisher.terminal) publisher.observers.add(push);
        signal?.addEventListener('abort', onAbort, { once: true });
        let ended = false;
        return {
          async next(): Promise<IteratorResult<RuntimeStatus>> {
            for (;;) {
              if (signal?.aborted) {
                finish();
                return { done: true, value: undefined };
              }
              if (ended) return { done: true, value: undefined };
              const value = buffer.shift();
              if (value) {
                if (value.state === FrameworkRuntimeState.Stopped) {
                  ended = true;
                  finish();
                }
                return { done: false, value };
              }
              if (done) return { done: true, value: undefined };
              await new Promise<void>((resolve) => (wake = resolve));
              wake = undefined;
            }
          },
          async return(): Promise<IteratorResult<RuntimeStatus>> {
            finish();
            return { done: true, value: undefined };
          },
        };
      },
    };
  }
}

export { abortReason };
