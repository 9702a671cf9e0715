/**
 * Transport interface (§1.1, §4, §5 order 5, §14 step 1). Two implementations held to one contract suite
 * (transport/contract.ts): ws/ (one listener per MeshNode per mesh, real sockets) and memory/ (in-process).
 *
 * The transport owns the Core peer table of every mesh (Hello → Admit → Ready), framing and validation,
 * chunked checksummed payloads and the in-flight payload budget. It knows nothing of Actors or Spots:
 * runtime messages are opaque MessagePack-compatible values to it (plain objects, arrays, strings, numbers,
 * booleans, null and Uint8Array bytes, which travel raw).
 */
import type { NodeDescriptor, NodeRef } from '../vocabulary';

export type PeerState = 'Connecting' | 'Admitted' | 'Ready' | 'Draining' | 'Lost';

export interface PeerInfo extends NodeRef {
  readonly mesh: string;
  readonly applicationVersion: number;
  readonly state: PeerState;
  /** How the peer was registered: discovered from a Store descriptor, or by hand (§4 ManualTopologyUnsupported). */
  readonly source: 'descriptor' | 'manual';
}

export interface MeshConfig {
  readonly name: string;
  /** ws listener address (port 0 = any). Omitted: the in-process transport. */
  readonly listen?: { readonly host: string; readonly port: number };
  /**
   * The address peers dial to reach this mesh's listener, published in the descriptor instead of the listen
   * address: `host:port` (`[v6]:port`; the scheme follows `tls`), `host` alone (the bound port), or a full
   * `ws://` / `wss://` URL. Needed when `listen.host` is an unspecified address (0.0.0.0, ::) — such an address is
   * never published — and whenever peers reach this node by another name (NAT, a container, a proxy).
   * @default the listen address
   */
  readonly advertise?: string;
  /** Shared key: Hello carries an HMAC-SHA256 proof over the server's challenge; no proof, no Admit. */
  readonly sharedKey?: string | Buffer;
  /** TLS options for wss:// (passed to https.createServer and to the client). */
  readonly tls?: { readonly key?: string | Buffer; readonly cert?: string | Buffer; readonly ca?: string | Buffer; readonly rejectUnauthorized?: boolean };
}

/** A runtime message (see Transport above for what it may hold). The runtime validates its own shapes; the transport validates framing. */
export type RuntimeMessage = { readonly t: string } & Record<string, unknown>;

export interface TransportHandlers {
  /** A runtime message from an admitted peer, in per-connection order. */
  onMessage(from: NodeRef, message: RuntimeMessage): void;
  /** A reassembled and checksum-verified payload, or the failure of one (checksum mismatch, truncation). */
  onPayload(from: NodeRef, payloadId: string, result: { ok: true; bytes: Buffer } | { ok: false; error: Error }): void;
  /** Peer table changes on any mesh (admitted, ready, draining, lost, replaced by a newer generation). */
  onPeer?(peer: PeerInfo): void;
  /** Primary mesh: the peer announced it is about to close; `send` to it returns false from now on. */
  onPeerLeaving?(peer: NodeRef): void;
  /**
   * Primary mesh: the connection that carried runtime messages to `peer` closed. `unwritten` messages were still
   * queued in it, so the peer never read them (the runtime may send them again); what was written may or may not
   * have been read, unless the peer `announced` its close first (it answered `quiesced` after reading everything).
   */
  onConnectionLost?(peer: NodeRef, info: { readonly announced: boolean; readonly unwritten: readonly RuntimeMessage[] }): void;
}

export interface TransportOptions {
  readonly self: NodeRef & { readonly applicationVersion: number };
  readonly meshes: readonly MeshConfig[];
  readonly handlers: TransportHandlers;
  /** Bytes of in-progress relocation payloads per peer connection. @default 16 MiB */
  readonly inFlightPayloadBudgetBytes?: number;
  /** Payload chunk size. @default 256 KiB */
  readonly chunkBytes?: number;
  /** Largest accepted frame (ws maxPayload). @default 4 MiB */
  readonly maxFrameBytes?: number;
  /** Connection and reconnection timings (added by issue 3; all optional). */
  readonly timing?: TransportTiming;
}

/** Transport timings; tests pass short values instead of sleeping. */
export interface TransportTiming {
  /** A connection that has not finished Hello/Admit/Ready by then is closed. @default 5000 */
  readonly handshakeTimeoutMs?: number;
  /** First reconnect delay; doubles per failure up to reconnectMaxMs (with jitter). @default 100 */
  readonly reconnectMinMs?: number;
  /** @default 5000 */
  readonly reconnectMaxMs?: number;
  /** close(): how long a socket may take to finish its closing handshake before it is destroyed. @default 1000 */
  readonly closeGraceMs?: number;
}

/** Counters for tests and diagnostics. */
export interface TransportDiagnostics {
  /** Connections closed because of an invalid, unknown, out-of-state or oversized frame. */
  readonly protocolErrors: number;
  /** Hellos refused (stale generation, failed proof, sealed, duplicate). */
  readonly refusedHellos: number;
  readonly openConnections: number;
}

/** Bytes held against a peer's payload budget. Released by the target's intake acknowledgement or explicitly. */
export interface BudgetLease {
  readonly bytes: number;
  /** Waits until `extra` more bytes fit (never fails for lack of budget; rejects only on abort or close). */
  grow(extra: number, signal?: AbortSignal): Promise<void>;
  release(): void;
}

export interface Transport {
  /** Binds listeners; resolves with mesh name → endpoint URL for the descriptor. */
  start(): Promise<Record<string, string>>;
  /** Automatic discovery: follow the descriptor snapshot (connect to new peers, drop vanished ones). */
  updatePeers(descriptors: readonly NodeDescriptor[]): void;
  /** Manual topology: a peer registered by hand. Registration alone makes preflight refuse (§4). */
  registerManualPeer(mesh: string, endpoint: string): void;
  hasManualPeers(): boolean;
  /**
   * Dials `endpoint` by hand like a manual peer (same dialer, backoff and connection rule) for a component's manual
   * endpoint — a ClientServer client endpoint, a fanout subscriber endpoint. The §4 registration is that
   * component's, so hasManualPeers() does not count it. Optional so other implementations stay valid.
   */
  connectEndpoint?(mesh: string, endpoint: string): void;
  /** The run this node reaches through a dialed endpoint (from the descriptor or the endpoint's challenge); undefined before. */
  peerAt?(mesh: string, endpoint: string): NodeRef | undefined;
  /** Core peer table snapshot of one mesh, or of every mesh. */
  peers(mesh?: string): PeerInfo[];
  /** §5 order 5: the peer with exactly this RID and generation is Admitted and Ready on every mesh. */
  isReadyOnEveryMesh(peer: NodeRef): boolean;
  /** Ordered, coalesced per tick. false when no Ready connection to that peer exists on the primary mesh. */
  send(peer: NodeRef, message: RuntimeMessage): boolean;
  /**
   * Largest frame this transport sends or accepts (TransportOptions.maxFrameBytes); one runtime message must fit
   * in one frame, so senders of large messages split below it. Optional so other implementations stay valid.
   * @default 4 MiB (TRANSPORT_DEFAULTS.maxFrameBytes) when absent
   */
  readonly maxFrameBytes?: number;
  /** Waits for budget before the caller seals anything (§7). */
  acquireBudget(peer: NodeRef, bytes: number, signal?: AbortSignal): Promise<BudgetLease>;
  /**
   * A lease now when the budget toward `peer` has room and nobody waits ahead of the caller; undefined otherwise
   * (then `acquireBudget`). Optional so other implementations stay valid.
   */
  tryAcquireBudget?(peer: NodeRef, bytes: number): BudgetLease | undefined;
  /** Chunked sha256-checked transfer charged to `lease`; resolves when the target acknowledged intake. */
  sendPayload(peer: NodeRef, payloadId: string, bytes: Buffer, lease: BudgetLease, signal?: AbortSignal): Promise<void>;
  /** §14 step 1: no Hello sent, none answered with Admit; admitted peers get only the Draining update. */
  seal(): void;
  /**
   * §14 cleanup step 4 prelude: asks every peer to stop sending to this node and waits (bounded by closeGraceMs)
   * until each answered, so what peers sent is handled and what this node sent (replies) was read before close.
   */
  quiesce?(): Promise<void>;
  /** Completes or cancels accepted callbacks and in-flight writes, then closes sockets and listeners. */
  close(): Promise<void>;
  /** Closes the connection to a peer as a fault would (it reconnects); optional. */
  disconnect?(peer: NodeRef): void;
  /** Counters (added by issue 3; optional so other implementations stay valid). */
  diagnostics?(): TransportDiagnostics;
}

export type TransportFactory = (options: TransportOptions) => Transport;
