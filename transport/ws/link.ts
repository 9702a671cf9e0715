/**
 * ws links: one listener (http or https server + WebSocketServer) per MeshNode per mesh, and client sockets.
 * Socket lifecycle only; framing and validation live in ../frames.ts and ../connection.ts.
 *
 * - maxPayload = maxFrameBytes on both ends: ws closes an oversized frame's connection with 1009 itself.
 * - perMessageDeflate off: payloads are state snapshots that rarely compress well, and deflate costs CPU per frame.
 * - Text frames are a protocol violation (every frame is binary).
 * - wss://: `tls.key` + `tls.cert` make the listener https; clients trust `tls.ca` (or the cert itself, for a
 *   self-signed mesh certificate) and honour `rejectUnauthorized`.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { advertisedEndpoint, formatHost, isUnspecifiedHost } from '../address';
import type { Link, LinkHandlers, LinkProvider } from '../link';
import type { MeshConfig } from '../types';

class WsLink implements Link {
  private closed = false;
  private corked = false;
  constructor(
    readonly outbound: boolean,
    private readonly ws: WebSocket,
    handlers: LinkHandlers,
  ) {
    ws.binaryType = 'nodebuffer';
    ws.on('open', () => handlers.onOpen());
    ws.on('message', (data, isBinary) => {
      if (!isBinary) handlers.onViolation('text frame');
      else handlers.onFrame(data as Buffer);
    });
    ws.on('error', (err: Error & { code?: string }) => {
      // ws' receiver errors (WS_ERR_*: oversized, bad opcode, bad masking...) are the peer's protocol violation;
      // ws closes the socket itself. Socket errors (ECONNREFUSED, ECONNRESET) are plain losses: 'close' follows.
      if (err.code?.startsWith('WS_ERR_')) handlers.onViolation(err.message);
    });
    ws.on('close', (code, reason) => {
      this.closed = true;
      handlers.onClose(code, reason.toString());
    });
  }

  get writable(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  send(frame: Buffer, done?: (err?: Error) => void): void {
    if (this.ws.readyState !== WebSocket.OPEN) {
      if (done) setImmediate(done, new Error('ws link is not open'));
      return;
    }
    this.corkTurn();
    this.ws.send(frame, { binary: true }, done);
  }

  /**
   * The frames sent in one turn leave in one socket write: ws corks the socket only around each frame (one writev
   * syscall per frame), and a relocation turn sends many small ones (per-batch control messages, chunk frames, Message
   * Follow); on loopback each write also runs the receiver's TCP path. Uncorked when the current operation ends
   * (process.nextTick), so no frame waits for a later turn.
   */
  private corkTurn(): void {
    if (this.corked) return;
    // ws keeps its net.Socket as `_socket` (no public accessor); without one there is nothing to cork.
    const socket = (this.ws as unknown as { _socket?: Socket | null })._socket;
    if (!socket) return;
    this.corked = true;
    socket.cork();
    process.nextTick(() => {
      this.corked = false;
      socket.uncork();
    });
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    if (this.ws.readyState === WebSocket.CONNECTING) return this.ws.terminate();
    this.ws.close(code, reason);
  }

  destroy(): void {
    if (!this.closed) this.ws.terminate();
  }
}

export class WsLinkProvider implements LinkProvider {
  readonly kind = 'ws' as const;
  private readonly servers: { wss: WebSocketServer; server: http.Server }[] = [];

  canDial(endpoint: string): boolean {
    return endpoint.startsWith('ws://') || endpoint.startsWith('wss://');
  }

  async listen(mesh: MeshConfig, maxFrameBytes: number, accept: (link: Link) => LinkHandlers): Promise<string> {
    const listen = mesh.listen;
    if (!listen) throw new TypeError(`ws transport: mesh ${mesh.name} has no listen address`);
    const secure = mesh.tls?.key !== undefined && mesh.tls.cert !== undefined;
    // Checked before binding: an unspecified address is never published as the endpoint peers dial.
    if (mesh.advertise === undefined && isUnspecifiedHost(listen.host))
      throw new TypeError(
        `ws transport: mesh ${mesh.name} listens on the unspecified address '${listen.host}', which peers cannot dial; set advertise to the host:port they reach it at`,
      );
    if (mesh.advertise !== undefined) {
      try {
        advertisedEndpoint(mesh.advertise, secure, 1);
      } catch (error) {
        throw new TypeError(`ws transport: mesh ${mesh.name} advertise ${(error as Error).message}`);
      }
    }
    const server: http.Server = secure ? https.createServer({ key: mesh.tls!.key, cert: mesh.tls!.cert, ca: mesh.tls!.ca }) : http.createServer();
    server.on('request', (_req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain' }).end('zlink mesh endpoint: WebSocket only');
    });
    server.on('clientError', (_err, socket) => socket.destroy()); // garbage on the port never reaches ws
    const wss = new WebSocketServer({ server, maxPayload: maxFrameBytes, perMessageDeflate: false, clientTracking: false });
    wss.on('error', () => undefined); // re-emitted server errors; listen errors reject below
    wss.on('connection', (ws) => {
      let handlers: LinkHandlers | undefined;
      // ws delivers events only after this handler returns, so handlers are in place before the first frame.
      const link = new WsLink(false, ws, {
        onOpen: () => undefined,
        onFrame: (f) => handlers?.onFrame(f),
        onViolation: (r) => handlers?.onViolation(r),
        onClose: (c, r) => handlers?.onClose(c, r),
      });
      handlers = accept(link);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(listen.port, listen.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', () => undefined);
    this.servers.push({ wss, server });
    const port = (server.address() as AddressInfo).port;
    if (mesh.advertise !== undefined) return advertisedEndpoint(mesh.advertise, secure, port);
    return `${secure ? 'wss' : 'ws'}://${formatHost(listen.host)}:${port}/`;
  }

  dial(mesh: MeshConfig, endpoint: string, maxFrameBytes: number, handlers: LinkHandlers): Link {
    const tls = mesh.tls;
    const ws = new WebSocket(endpoint, {
      maxPayload: maxFrameBytes,
      perMessageDeflate: false,
      handshakeTimeout: 10_000,
      ...(endpoint.startsWith('wss://')
        ? { ca: tls?.ca ?? tls?.cert, rejectUnauthorized: tls?.rejectUnauthorized ?? true }
        : {}),
    });
    return new WsLink(true, ws, handlers);
  }

  async close(): Promise<void> {
    const servers = this.servers.splice(0);
    await Promise.all(
      servers.map(
        ({ wss, server }) =>
          new Promise<void>((resolve) => {
            wss.close();
            server.close(() => resolve());
            server.closeAllConnections(); // half-open upgrades and stray HTTP sockets; mesh links closed before this
          }),
      ),
    );
  }
}
