/** What a handler sees in its turn (API.md "Application objects"). */
import type { TimerSpec } from './definitions';

export type ObjectRef = { readonly actor: string } | { readonly spot: string; readonly type?: string };

export interface RequestOptions {
  /** @default 30000 */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface TimerApi {
  /** Logical registration (§12): moves with the object; re-scheduling a name replaces it. */
  schedule(name: string, spec: TimerSpec): void;
  cancel(name: string): boolean;
  has(name: string): boolean;
  names(): string[];
}

export interface ObjectContext<S = unknown> {
  readonly self: ObjectRef;
  readonly id: string;
  /** RID of the node running this turn. */
  readonly nodeId: string;
  /** Actors: the User Spot the Actor belongs to; undefined in the Entry Spot. */
  readonly spotId: string | undefined;
  readonly timers: TimerApi;
  /** Set for closing callbacks: aborts when the remaining shutdown deadline ends (§14). */
  readonly signal: AbortSignal | undefined;
  send(to: ObjectRef, message: unknown): void;
  request(to: ObjectRef, message: unknown, options?: RequestOptions): Promise<unknown>;
  /** Replaces the state object (for states that are not mutated in place). */
  setState(next: S): void;
}

export interface RelocationReadyHandle {
  /** §7: the end of this turn is a safe point at which a prepared relocation may seal the Spot. */
  defer(): void;
}

/** Logical Multicast membership of the Spot running this turn. */
export interface ChannelApi {
  /**
   * Joins the Channel (cluster-wide; the membership belongs to the Spot and survives its relocation). Rejects with
   * AdmissionError outside Serving (§15: no new membership admission while the host relocates or drains).
   */
  join(channel: string): Promise<void>;
  /** Leaves the Channel: later multicast snapshots no longer include this Spot. */
  leave(channel: string): Promise<void>;
}

export interface SpotContext<S = unknown> extends ObjectContext<S> {
  /** Current member Actor ids (User Spots). */
  readonly members: readonly string[];
  /** Logical Multicast: this Spot joins and leaves Channels. */
  readonly channels: ChannelApi;
  /** ApplicationSignaled readiness (§7). */
  relocationReady(): RelocationReadyHandle;
}
