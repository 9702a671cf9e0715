/**
 * A Link moves whole frames (Buffers) between two nodes and reports its own end. It is the only thing the ws and
 * memory transports implement differently; handshake, peer table, coalescing, chunking and budget run on top of it
 * once (transport/connection.ts, mesh-node.ts), so the in-process transport is a faithful twin of the ws one.
 */
import type { MeshConfig } from './types';

export interface LinkHandlers {
  /** Outbound links only: the connection is open and frames may be sent. */
  onOpen(): void;
  /** One received binary frame, in order. */
  onFrame(frame: Buffer): void;
  /** The link itself saw a protocol violation (text frame, oversized frame, bad ws framing); it is closing. */
  onViolation(reason: string): void;
  /** Exactly once, last. */
  onClose(code: number, reason: string): void;
}

export interface Link {
  /** true when this node dialed the link. */
  readonly outbound: boolean;
  /**
   * false once the link is closing from either side: a frame sent now would never reach the peer (the connection
   * then keeps its queued messages and hands them back as unwritten when the close is reported).
   */
  readonly writable: boolean;
  /** `done` runs once the frame was handed to the wire (write pacing), or with an error if it never will be. */
  send(frame: Buffer, done?: (err?: Error) => void): void;
  /** Graceful: frames already sent are delivered first. Idempotent. */
  close(code: number, reason: string): void;
  /** Immediate (bounded teardown after the close grace). Idempotent. */
  destroy(): void;
}

export interface LinkProvider {
  readonly kind: 'ws' | 'memory';
  /** true when `endpoint` is an address this provider can dial. */
  canDial(endpoint: string): boolean;
  /** Binds the mesh's listener; `accept` returns the handlers of each inbound link. Resolves with the endpoint URL. */
  listen(mesh: MeshConfig, maxFrameBytes: number, accept: (link: Link) => LinkHandlers): Promise<string>;
  /** Events arrive asynchronously, never before dial returns. */
  dial(mesh: MeshConfig, endpoint: string, maxFrameBytes: number, handlers: LinkHandlers): Link;
  /** Closes listeners (links are closed by their owners first). */
  close(): Promise<void>;
}
