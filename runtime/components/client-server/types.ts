/** Public types of ClientServer (exported from the package entry). */

/** What a server's handler learns about one call besides the request. */
export interface ServeInfo {
  /** nodeId (RID) of the calling host. */
  readonly from: string;
  /** The ChannelName the call came in on. */
  readonly channel: string;
  /**
   * Aborts when the call ended without this handler's reply: the caller timed out or aborted, its connection was
   * lost, or this host's Shutdown reached its deadline (the caller then got a `shutdown` result). A handler that
   * honours it lets Shutdown finish early; one that ignores it still ends only once for the caller.
   */
  readonly signal: AbortSignal;
}

/** A server's handler: its return value (or the value its promise resolves to) is the reply; a throw is a handler error. */
export type ServeHandler<Req = unknown, Rep = unknown> = (request: Req, info: ServeInfo) => Rep | Promise<Rep>;

export interface ServeOptions {
  /**
   * This server's relative share of select-one calls on its ChannelName (a finite number > 0).
   * @default 1
   */
  weight?: number;
}

/** One server registration; `close()` stops new calls and resolves once the calls it accepted have replied. */
export interface ServerRegistration {
  readonly channel: string;
  close(): Promise<void>;
}

export interface CallOptions {
  /**
   * Node direct: the nodeId (RID) of the host that must run the call. Omitted: select-one among the Serving hosts that
   * serve the channel, by weight.
   */
  node?: string;
  /** @default 30000 */
  timeoutMs?: number;
  /** Ends only this caller's wait, with AbortError (the server's handler sees its `signal` abort). */
  signal?: AbortSignal;
}
