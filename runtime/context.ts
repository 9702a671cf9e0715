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
  /**
   * STREAM sessions bound to this Actor (docs/concepts.md "STREAM sessions"); empty for Spots. Send from the
   * Actor's turns (handlers, timers, `onSession`): a frame sent while the Actor is sealed for a move is refused.
   */
  readonly sessions: SessionsApi;
}

/** One STREAM session bound to an Actor, as the Actor sees it. */
export interface SessionHandle {
  /** Session id (stable across the client's reconnects and the Actor's moves). */
  readonly id: string;
  /** What the session endpoint's `authenticate` returned for the client (undefined when it returned `true`). */
  readonly identity: unknown;
  /**
   * One frame to the client: encoded (copied) at the call with the one codec (an unencodable value throws
   * ArgumentError naming the path), delivered in order and exactly once, across the Actor's moves and the client's
   * resumes. Throws AdmissionError when the session is closing or the Actor is sealed for a move.
   */
  send(frame: unknown): void;
  /** Ends the session once the frames already sent are delivered; the client sees code 'closed'. */
  close(reason?: string): void;
}

export interface SessionsApi {
  /** The sessions bound to this Actor now, in the order they were opened. */
  list(): readonly SessionHandle[];
  get(id: string): SessionHandle | undefined;
  /** `send(frame)` to every bound session that is not closing; returns how many got it. */
  broadcast(frame: unknown): number;
}

/** Why an Actor's session ended (`onSession` 'closed' event). */
export type SessionCloseReason = 'client' | 'actor' | 'expired';

/** What `onSession` receives (defineActor): a client bound, sent a frame, or the session ended. */
export type SessionEvent =
  | { readonly type: 'open'; readonly session: SessionHandle }
  | { readonly type: 'frame'; readonly session: SessionHandle; readonly frame: unknown }
  | { readonly type: 'closed'; readonly session: SessionHandle; readonly reason: SessionCloseReason };

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
