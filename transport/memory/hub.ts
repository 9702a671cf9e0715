/**
 * In-process links: a process-global hub of listeners keyed by endpoint URL (memory://<nodeId>/<generation>/<mesh>).
 * A link is a pair of ends whose frames are delivered asynchronously (setImmediate, in order), bounded by the
 * receiver's maxFrameBytes like ws' maxPayload (an oversized frame closes the link with 1009), and closed like a
 * WebSocket: frames sent before close() arrive before the peer sees the close.
 */
import { CloseCode } from '../constants';
import type { Link, LinkHandlers, LinkProvider } from '../link';
import type { MeshConfig } from '../types';
import type { NodeRef } from '../../vocabulary';

interface Listener {
  readonly maxFrameBytes: number;
  readonly accept: (link: Link) => LinkHandlers;
}

const HUB_KEY = Symbol.for('zlink.transport.memory.hub');
const hub: Map<string, Listener> = ((globalThis as Record<symbol, unknown>)[HUB_KEY] as Map<string, Listener> | undefined) ??
  ((globalThis as Record<symbol, unknown>)[HUB_KEY] = new Map<string, Listener>()) as Map<string, Listener>;

export function memoryEndpoint(self: NodeRef, mesh: string): string {
  return `memory://${encodeURIComponent(self.nodeId)}/${self.lifecycleGeneration}/${encodeURIComponent(mesh)}`;
}

type Item = { frame: Buffer; done?: (err?: Error) => void } | { close: number; reason: string } | { echo: number; reason: string };

class MemoryEnd implements Link {
  /** undefined until a dial found its listener. */
  other: MemoryEnd | undefined;
  handlers: LinkHandlers | undefined;
  private inbox: Item[] = [];
  private scheduled: NodeJS.Immediate | undefined;
  /** close() called or close received: sends stop. */
  private closing = false;
  private closed = false;

  constructor(
    readonly outbound: boolean,
    private readonly maxFrameBytes: number,
  ) {}

  get writable(): boolean {
    return !this.closing && !this.closed && this.other !== undefined;
  }

  send(frame: Buffer, done?: (err?: Error) => void): void {
    if (this.closing || this.closed || !this.other) {
      if (done) setImmediate(done, new Error('memory link is not open'));
      return;
    }
    this.other.deliver({ frame, done });
  }

  close(code: number, reason: string): void {
    if (this.closing || this.closed) return;
    this.closing = true;
    if (!this.other || this.other === this) this.finish(code, reason);
    else this.other.deliver({ close: code, reason });
  }

  destroy(): void {
    if (this.closed) return;
    this.closing = true;
    this.other?.finish(1006, 'destroyed');
    this.finish(1006, 'destroyed');
  }

  deliver(item: Item): void {
    if (this.closed) {
      if ('frame' in item && item.done) setImmediate(item.done, new Error('memory link is closed'));
      return;
    }
    this.inbox.push(item);
    this.scheduled ??= setImmediate(() => this.drain());
  }

  private drain(): void {
    this.scheduled = undefined;
    const items = this.inbox;
    this.inbox = [];
    for (let i = 0; i < items.length; i++) {
      if (this.closed) return;
      const item = items[i]!;
      if ('close' in item) {
        // Echo the close (WebSocket closing handshake): the echo queues behind the frames this end sent before,
        // which the closing side still reads (as ws does), then both ends report the close.
        this.closing = true;
        if (this.other && this.other !== this) this.other.deliver({ echo: item.close, reason: item.reason });
        this.finish(item.close, item.reason);
        return;
      }
      if ('echo' in item) {
        this.finish(item.echo, item.reason);
        return;
      }
      item.done?.();
      // Like ws, a closing end keeps reading until the echo; the connection decides what still counts.
      if (item.frame.length > this.maxFrameBytes) {
        this.handlers?.onViolation(`frame of ${item.frame.length} bytes exceeds maxPayload ${this.maxFrameBytes}`);
        this.closing = true;
        this.finish(CloseCode.TooBig, 'Max payload size exceeded');
        this.other?.finish(CloseCode.TooBig, 'Max payload size exceeded');
        return;
      }
      this.handlers?.onFrame(item.frame);
    }
  }

  get isFinished(): boolean {
    return this.closed;
  }

  /** Reports the close once, asynchronously, as sockets do. */
  finish(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.closing = true;
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    for (const item of this.inbox) if ('frame' in item && item.done) setImmediate(item.done, new Error('memory link closed'));
    this.inbox = [];
    setImmediate(() => this.handlers?.onClose(code, reason));
  }
}

export class MemoryLinkProvider implements LinkProvider {
  readonly kind = 'memory' as const;
  private readonly bound = new Set<string>();

  constructor(private readonly self: NodeRef) {}

  canDial(endpoint: string): boolean {
    return endpoint.startsWith('memory://');
  }

  async listen(mesh: MeshConfig, maxFrameBytes: number, accept: (link: Link) => LinkHandlers): Promise<string> {
    const endpoint = memoryEndpoint(this.self, mesh.name);
    if (hub.has(endpoint)) throw new Error(`memory transport: ${endpoint} is already bound in this process (same nodeId, generation and mesh)`);
    hub.set(endpoint, { maxFrameBytes, accept });
    this.bound.add(endpoint);
    return endpoint;
  }

  dial(_mesh: MeshConfig, endpoint: string, maxFrameBytes: number, handlers: LinkHandlers): Link {
    const client = new MemoryEnd(true, maxFrameBytes);
    client.handlers = handlers;
    setImmediate(() => {
      if (client.isFinished) return; // closed before it opened
      const listener = hub.get(endpoint);
      if (!listener) {
        client.other = client; // nothing to talk to; report the refused connection like ECONNREFUSED
        client.finish(1006, `no memory listener at ${endpoint}`);
        return;
      }
      const server = new MemoryEnd(false, listener.maxFrameBytes);
      client.other = server;
      server.other = client;
      server.handlers = listener.accept(server);
      handlers.onOpen();
    });
    return client;
  }

  async close(): Promise<void> {
    for (const e of this.bound) hub.delete(e);
    this.bound.clear();
  }
}
