/**
 * The session endpoint's own WebSocket listener (the `ws` package, as transport/ws): an http server whose upgrades
 * pass the application's `authenticate` hook before they become client connections. Socket lifecycle only; what
 * the messages mean is the session owner's (owner.ts).
 *
 * Bounded teardown (§14): `close()` stops accepting, closes every connection gracefully and waits — up to a grace —
 * until each one's close and every queued write's completion callback were observed, then terminates what is left
 * and closes the server. `forceClose()` terminates at once. From the moment teardown starts no socket event reaches
 * the session owner (no late callback into a destroyed session), and once it ends no listener, socket or timer of
 * this endpoint is left.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer } from 'ws';
import { advertisedEndpoint, formatHost } from '../../../transport/address';
import type { Clock } from '../../clock';
import { encodeValue } from '../../codec';
import type { RuntimeLog } from '../../logger';
import type { ClientLink, ConnectionHandlers } from './owner';
import { encodeWire, type ServerMessage } from './wire';

/** What `authenticate` sees of a connection request. */
export interface SessionAuthRequest {
  readonly headers: http.IncomingHttpHeaders;
  /** Path and query as the client sent them (`connectSession({ auth })` arrives as the `auth` query parameter). */
  readonly url: string;
  readonly remoteAddress: string | undefined;
}

/**
 * Decides whether a client may connect: `true` admits it, `false` (or undefined / null) refuses it with HTTP 401,
 * any other value admits it and is the session's identity (encoded with the one codec; the Actor reads it as
 * `session.identity`). A throw or rejection refuses it (logged).
 */
export type SessionAuthenticate = (request: SessionAuthRequest) => unknown;

export interface SessionEndpointConfig {
  readonly listen: { readonly host: string; readonly port: number };
  readonly advertise?: string;
  readonly authenticate?: SessionAuthenticate;
}

/** How long a graceful close waits for connections to finish their closing handshake before terminating them. */
export const CLOSE_GRACE_MS = 1000;

class WsClientLink implements ClientLink {
  handlers: ConnectionHandlers | undefined;
  /** The socket's 'close' was observed. */
  closed = false;

  constructor(
    private readonly listener: SessionListener,
    private readonly ws: WebSocket,
    readonly identity: Uint8Array | undefined,
  ) {}

  send(message: ServerMessage): void {
    if (this.closed || this.listener.destroyed || this.ws.readyState !== WebSocket.OPEN) return;
    this.listener.pendingWrites++;
    this.ws.send(encodeWire(message), { binary: true }, () => {
      this.listener.pendingWrites--;
      this.listener.settled();
    });
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    if (this.ws.readyState === WebSocket.CONNECTING) return this.ws.terminate();
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(code, reason);
  }

  terminate(): void {
    if (!this.closed) this.ws.terminate();
  }
}

export class SessionListener {
  private readonly server: http.Server;
  private readonly wss: WebSocketServer;
  private readonly links = new Set<WsClientLink>();
  private readonly upgrading = new Set<Duplex>();
  private closing = false;
  /** Teardown started: socket events no longer reach the session owner. */
  destroyed = false;
  private waiters: (() => void)[] = [];
  endpoint: string | undefined;
  /** Connections accepted since start (tests: "the same physical connection"). */
  accepted = 0;
  /** Writes handed to ws whose completion callback has not run yet (the connections' write queues). */
  pendingWrites = 0;

  constructor(
    private readonly config: SessionEndpointConfig,
    private readonly accept: (link: ClientLink) => ConnectionHandlers,
    private readonly clock: Clock,
    private readonly logger: RuntimeLog,
    maxPayload: number,
  ) {
    this.server = http.createServer();
    this.server.on('request', (_req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain' }).end('zlink session endpoint: WebSocket only (zlink/client connectSession)');
    });
    this.server.on('clientError', (_err, socket) => socket.destroy());
    this.server.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket, head));
    this.wss = new WebSocketServer({ noServer: true, maxPayload, perMessageDeflate: false, clientTracking: false });
    this.wss.on('error', () => undefined);
  }

  get openConnections(): number {
    return this.links.size;
  }

  async start(): Promise<string> {
    const { host, port } = this.config.listen;
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.server.on('error', (error) => this.logger.warn({ err: error }, 'session endpoint server error'));
    const bound = (this.server.address() as AddressInfo).port;
    this.endpoint = this.config.advertise !== undefined ? advertisedEndpoint(this.config.advertise, false, bound) : `ws://${formatHost(host)}:${bound}/`;
    return this.endpoint;
  }

  private onUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    if (this.closing) return void socket.destroy();
    this.upgrading.add(socket);
    socket.on('error', () => undefined);
    const request: SessionAuthRequest = { headers: req.headers, url: req.url ?? '/', remoteAddress: req.socket.remoteAddress };
    const authenticate = this.config.authenticate;
    Promise.resolve()
      .then(() => (authenticate ? authenticate(request) : true))
      .then(
        (result) => {
          this.upgrading.delete(socket);
          if (this.closing || socket.destroyed) return void socket.destroy();
          if (result === false || result === undefined || result === null) return refuseUpgrade(socket, 401, 'Unauthorized');
          let identity: Uint8Array | undefined;
          if (result !== true) {
            try {
              identity = encodeValue(result, 'identity');
            } catch (error) {
              this.logger.warn({ err: error }, 'sessions.authenticate returned an identity the codec refuses; connection refused');
              return refuseUpgrade(socket, 500, 'Internal Server Error');
            }
          }
          this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws, identity));
        },
        (error: unknown) => {
          this.upgrading.delete(socket);
          this.logger.warn({ err: error, remoteAddress: request.remoteAddress }, 'sessions.authenticate threw; connection refused');
          refuseUpgrade(socket, 401, 'Unauthorized');
        },
      );
  }

  private onConnection(ws: WebSocket, identity: Uint8Array | undefined): void {
    if (this.closing) return void ws.terminate();
    ws.binaryType = 'nodebuffer';
    const link = new WsClientLink(this, ws, identity);
    this.links.add(link);
    this.accepted++;
    ws.on('message', (data, isBinary) => {
      if (this.destroyed || link.closed) return;
      if (!isBinary) return link.close(4002, 'text frames are not part of the session wire');
      link.handlers?.onMessage(data as Buffer);
    });
    ws.on('error', () => undefined); // 'close' follows
    ws.on('close', () => {
      link.closed = true;
      this.links.delete(link);
      if (!this.destroyed) link.handlers?.onClose();
      this.settled();
    });
    link.handlers = this.accept(link);
  }

  /** A connection closed or a write completed: wake a teardown waiting for it. */
  settled(): void {
    if (this.waiters.length === 0 || !this.quiet()) return;
    for (const w of this.waiters.splice(0)) w();
  }

  /** Every connection's close and every queued write's completion callback were observed. */
  private quiet(): boolean {
    return this.links.size === 0 && this.pendingWrites === 0;
  }

  private whenQuiet(ms: number): Promise<boolean> {
    if (this.quiet()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== wake);
        resolve(false);
      }, ms);
      const wake = () => {
        this.clock.clearTimeout(timer);
        resolve(true);
      };
      this.waiters.push(wake);
    });
  }

  /** §14 step 5: graceful, bounded; resolves once the server and every socket are closed. */
  async close(graceMs = CLOSE_GRACE_MS): Promise<void> {
    if (this.closing) return this.closeServer();
    this.closing = true;
    for (const socket of this.upgrading) socket.destroy();
    this.upgrading.clear();
    for (const link of this.links) link.close(1001, 'the session endpoint is closing');
    // Each write queue's cancellation (or completion) is observed before anything is destroyed (§14).
    if (!(await this.whenQuiet(graceMs))) {
      for (const link of this.links) link.terminate();
      await this.whenQuiet(graceMs);
    }
    this.destroyed = true;
    await this.closeServer();
  }

  /** Past the deadline: terminate everything now; no socket event reaches the session owner from here on. */
  forceClose(): void {
    this.closing = true;
    this.destroyed = true;
    for (const socket of this.upgrading) socket.destroy();
    this.upgrading.clear();
    for (const link of this.links) link.terminate();
    void this.closeServer();
  }

  private closeServer(): Promise<void> {
    return new Promise((resolve) => {
      this.wss.close();
      if (!this.server.listening) return resolve();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

function refuseUpgrade(socket: Duplex, status: number, text: string): void {
  if (socket.destroyed) return;
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, () => socket.destroy());
}
