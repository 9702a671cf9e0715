/** Transport errors. Each names what happened and what the caller can do about it. */

/** The transport was closed (§14 bounded teardown): pending budget waits and payload sends end with this. */
export class TransportClosedError extends Error {
  override readonly name = 'TransportClosedError';
  constructor(what: string) {
    super(`${what}: the transport was closed; pending operations are cancelled (bounded teardown at shutdown)`);
  }
}

/** No Ready connection to the peer exists (or it was lost) on the primary mesh. Retry within the deadline (§1.1). */
export class PeerUnavailableError extends Error {
  override readonly name = 'PeerUnavailableError';
  constructor(message: string) {
    super(message);
  }
}

/** The target reported that a payload failed its checksum or arrived truncated. */
export class PayloadRejectedError extends Error {
  override readonly name = 'PayloadRejectedError';
}

/** A frame that failed validation; the connection that sent it is closed with CloseCode.ProtocolError. */
export class FrameError extends Error {
  override readonly name = 'FrameError';
}

/** The caller cancelled through its AbortSignal. */
export function abortError(signal: AbortSignal | undefined, what: string): Error {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  const err = new Error(`${what} was aborted`, { cause: reason });
  err.name = 'AbortError';
  return err;
}
