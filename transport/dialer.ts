/**
 * Reconnection with exponential backoff for one endpoint of one mesh. Knows no peer table: the mesh node says
 * whether a connection is still wanted (not sealed, not closing, no live connection to that peer yet) and makes it.
 */
import type { Connection } from './connection';
import type { NodeRef } from '../vocabulary';

export interface Backoff {
  readonly reconnectMinMs: number;
  readonly reconnectMaxMs: number;
}

export class Dialer {
  /** Identity the Store descriptor announced for this endpoint (discovery); undefined for a bare manual peer. */
  expected: NodeRef | undefined;
  /** Identity learned from the last challenge (manual peers are registered by endpoint only). */
  learned: NodeRef | undefined;
  /** Registered by hand (§4 ManualTopologyUnsupported counts registrations, not connections). */
  manual = false;
  conn: Connection | undefined;
  private timer: NodeJS.Timeout | undefined;
  private failures = 0;
  private stopped = false;

  constructor(
    readonly endpoint: string,
    private readonly backoff: Backoff,
    private readonly wanted: (d: Dialer) => boolean,
    private readonly connect: (d: Dialer) => Connection,
  ) {}

  get identity(): NodeRef | undefined {
    return this.expected ?? this.learned;
  }

  /** Dials now (first attempt) or after the backoff delay, if still wanted. */
  kick(): void {
    if (this.stopped || this.conn || this.timer || !this.wanted(this)) return;
    const base = Math.min(this.backoff.reconnectMaxMs, this.backoff.reconnectMinMs * 2 ** Math.max(0, this.failures - 1));
    const delay = this.failures === 0 ? 0 : Math.round(base * (0.5 + Math.random() * 0.5)); // jitter: no thundering herd
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stopped || this.conn || !this.wanted(this)) return;
      this.failures++;
      this.conn = this.connect(this);
    }, delay);
  }

  /** The connection reached Ready: the next loss redials after the shortest delay. */
  succeeded(): void {
    this.failures = 1;
  }

  lost(conn: Connection): void {
    if (this.conn !== conn) return;
    this.conn = undefined;
    this.kick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  get isStopped(): boolean {
    return this.stopped;
  }
}
