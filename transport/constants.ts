/** Transport defaults (API.md: every option has its default in one exported constant). */
export const TRANSPORT_DEFAULTS = {
  /** §7: bytes of in-progress relocation payloads per peer connection. */
  inFlightPayloadBudgetBytes: 16 * 1024 * 1024,
  chunkBytes: 256 * 1024,
  maxFrameBytes: 4 * 1024 * 1024,
  handshakeTimeoutMs: 5000,
  reconnectMinMs: 100,
  reconnectMaxMs: 5000,
  closeGraceMs: 1000,
} as const;

/** Room a chunk frame needs beside its data (fixed header + the longest payload id). */
export const CHUNK_HEADER_MAX_BYTES = 3 + 1 + 128 + 4 + 4 + 6 + 32;

/** Chunk frames a connection may have handed to its socket but not yet seen written (write pacing). */
export const CHUNK_WRITE_WINDOW = 8;

/** WebSocket close codes used by the transport. 1009 (too big) is sent by ws itself on maxPayload. */
export const CloseCode = {
  Normal: 1000,
  GoingAway: 1001,
  TooBig: 1009,
  Unauthorized: 4001,
  ProtocolError: 4002,
  StaleGeneration: 4003,
  Sealed: 4004,
  WrongMesh: 4005,
  UnexpectedPeer: 4006,
  HandshakeTimeout: 4008,
  Duplicate: 4009,
  Replaced: 4010,
  Vanished: 4011,
  /** Closed on the runtime's request (`disconnect`); the dialing side reconnects with backoff. */
  Disconnected: 4012,
} as const;
export type CloseCode = (typeof CloseCode)[keyof typeof CloseCode];
