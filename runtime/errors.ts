/**
 * Error classes of the public surface. Each names what to change (STYLE.md): argument errors name the field
 * and the rule; request terminals say which of the four endings happened (§15: reply, error, timeout, shutdown).
 */

/** Invalid RelocationOptions (§2.1). Thrown before any state or admission change. */
export class RelocationArgumentError extends TypeError {
  override readonly name = 'RelocationArgumentError';
  constructor(
    /** The offending field, e.g. `targetApplicationVersion`. */
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/**
 * Any other public call given a wrong type or value. Nothing changed. Declared in the vocabulary (a leaf), so stores/
 * and the client refuse bad input with the same class without importing the runtime.
 */
export { ArgumentError } from '../vocabulary';

/** Caller cancellation through AbortSignal: ends only that caller's wait (§6). */
export class AbortError extends Error {
  override readonly name = 'AbortError';
  constructor(message = 'The operation was aborted', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The host's current state does not admit this work (§15). */
export class AdmissionError extends Error {
  override readonly name = 'AdmissionError';
  constructor(
    readonly state: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * createRuntime refused to start: the owner lease of this nodeId is held by a live host (another process, or
 * another host in this one). Two live hosts never share a nodeId; the refused start changed nothing for the live
 * one (its lease, descriptor, state and objects). Give this host another nodeId.
 *
 * Restart after a crash: a host that ended without Shutdown still holds its lease until the lease expires — at
 * most `timing.leaseMs` after its last renewal. Starting the same nodeId again succeeds once `leaseExpiresInMs`
 * has passed (retry after it); a host that is still running keeps renewing, so its nodeId stays refused.
 */
export class NodeIdInUseError extends Error {
  override readonly name = 'NodeIdInUseError';
  constructor(
    readonly nodeId: string,
    /** Time left on the live host's owner lease when startup read it; that host extends it each renewal. */
    readonly leaseExpiresInMs: number,
    options?: { cause?: unknown },
  ) {
    super(
      `nodeId '${nodeId}' is in use: a live host holds its owner lease, which expires in ${leaseExpiresInMs} ms unless that host renews it. ` +
        `Start this host with another nodeId; if the holder crashed, start again once its lease expired (at most timing.leaseMs after its last renewal)`,
      options,
    );
  }
}

/**
 * A request's terminal other than a reply. Kinds added with Instance Spot Close (§12, docs/errors.md):
 * `closed` — the request (or a one-way message, counted as undeliverable) was queued for an Instance Spot that
 * closed before it ran; `moving` — `closeSpot` reached the Spot after a relocation had sealed it: the close was
 * not applied and is not resubmitted (call closeSpot again: it then reaches the new owner).
 */
export class RequestError extends Error {
  override readonly name: string = 'RequestError';
  constructor(
    readonly kind: 'timeout' | 'shutdown' | 'handler' | 'unavailable' | 'not-found' | 'stale-generation' | 'closed' | 'moving',
    message: string,
  ) {
    super(message);
  }
}

/** Thrown into a request whose handler threw; the message is the handler error's message. */
export class RemoteHandlerError extends RequestError {
  override readonly name = 'RemoteHandlerError';
  constructor(message: string) {
    super('handler', message);
  }
}

export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof AbortError) return reason;
  return new AbortError(reason instanceof Error ? reason.message : 'The operation was aborted', { cause: reason });
}

/** Resolves or rejects like `promise`, but rejects with AbortError as soon as `signal` aborts. */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
