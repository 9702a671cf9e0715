/**
 * `createInspector`: a local, offline live view of the hosts' machines. One HTTP server (bound to 127.0.0.1 by
 * default) serves a self-contained page (inspect/page: HTML, JS, CSS; no CDN, nothing leaves the host) and two
 * WebSocket endpoints on the same port: `/ws` for pages, `/feed` for hosts in other processes (`connectInspector`).
 *
 * Event volume is bounded: the inspection observer only updates counters (InspectionModel); pages get one
 * aggregate view at most `maxUpdatesPerSecond` times a second, and only when something changed; each machine's
 * structure is sent once per machine id.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import type { InspectionEvent } from 'xstate';
import WebSocket, { WebSocketServer } from 'ws';
import { ArgumentError } from '../vocabulary';
import { UNIT_CHANGED, type UnitEvent } from '../runtime/relocation/events';
import { InspectionModel } from './model';
import type { InspectorMessage, InspectorView, MachineDiagram, NodeView, UnitSample } from './types';

export interface InspectorOptions {
  /** TCP port of the page and its WebSocket; 0 picks a free one (see `url`). @default 0 */
  port?: number;
  /** Interface to bind. Anything other than loopback exposes the page to the network. @default '127.0.0.1' */
  host?: string;
  /** Most views pushed to each page per second (the page's refresh rate). @default 10 */
  maxUpdatesPerSecond?: number;
  /** Individual actors followed per node and machine, and relocation units sampled. @default 8 */
  sampleSize?: number;
}

/** A host whose unit-event stream (S0–S4) the inspector may follow: any FrameworkRuntime. */
export interface WatchableHost {
  readonly nodeId: string;
  on(event: typeof UNIT_CHANGED, listener: (event: UnitEvent) => void): () => void;
}

export interface Inspector {
  /** The page, e.g. `http://127.0.0.1:7070/`. */
  readonly url: string;
  readonly port: number;
  /** The value for `createRuntime({ inspect })` (the inspector object itself works too: it has `next`). */
  readonly inspect: (event: InspectionEvent) => void;
  next(event: InspectionEvent): void;
  /** Also follow the host's unit events, for the S0–S4 of sampled units; returns the unsubscribe function. */
  watch(host: WatchableHost): () => void;
  /** What the page shows now (tests, logs). */
  view(): InspectorView;
  /** Stops the server and disconnects pages and feeds. */
  close(): Promise<void>;
}

export const DEFAULT_INSPECTOR_OPTIONS = Object.freeze({ port: 0, host: '127.0.0.1', maxUpdatesPerSecond: 10, sampleSize: 8 });

/** Pages whose socket has this much unsent data are skipped until it drains (a stalled tab never grows memory). */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

export function parseInspectorOptions(options: unknown): Required<InspectorOptions> {
  if (options === undefined) return { ...DEFAULT_INSPECTOR_OPTIONS };
  if (typeof options !== 'object' || options === null) throw new ArgumentError('options', 'must be an object');
  const o = { ...DEFAULT_INSPECTOR_OPTIONS, ...(options as InspectorOptions) };
  if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65535) throw new ArgumentError('port', `must be an integer 0–65535 (0 = any free port); got ${String(o.port)}`);
  if (typeof o.host !== 'string' || o.host.length === 0) throw new ArgumentError('host', 'must be a non-empty string such as 127.0.0.1');
  if (typeof o.maxUpdatesPerSecond !== 'number' || !(o.maxUpdatesPerSecond > 0) || o.maxUpdatesPerSecond > 60)
    throw new ArgumentError('maxUpdatesPerSecond', `must be a number in (0, 60]; got ${String(o.maxUpdatesPerSecond)}`);
  if (!Number.isInteger(o.sampleSize) || o.sampleSize < 0 || o.sampleSize > 100) throw new ArgumentError('sampleSize', `must be an integer 0–100; got ${String(o.sampleSize)}`);
  return o;
}

interface PageAssets {
  readonly [file: string]: { readonly type: string; readonly body: Buffer };
}

function loadPage(): PageAssets {
  const dir = path.join(__dirname, 'page');
  const read = (file: string) => {
    try {
      return readFileSync(path.join(dir, file));
    } catch (error) {
      throw new Error(`inspector page asset ${file} missing in ${dir} (a build must copy inspect/page: npm run build)`, { cause: error });
    }
  };
  return {
    '/': { type: 'text/html; charset=utf-8', body: read('index.html') },
    '/app.js': { type: 'text/javascript; charset=utf-8', body: read('app.js') },
    '/diagram.js': { type: 'text/javascript; charset=utf-8', body: read('diagram.js') },
    '/style.css': { type: 'text/css; charset=utf-8', body: read('style.css') },
  };
}

export async function createInspector(options?: InspectorOptions): Promise<Inspector> {
  const o = parseInspectorOptions(options);
  const assets = loadPage();
  const pages = new Set<WebSocket>();
  const feeds = new Map<WebSocket, InspectorView>();
  const diagrams = new Map<string, MachineDiagram>();
  let feedsDirty = false;

  const broadcast = (message: InspectorMessage) => {
    if (pages.size === 0) return;
    const data = JSON.stringify(message);
    for (const ws of pages) if (ws.readyState === WebSocket.OPEN && ws.bufferedAmount < MAX_BUFFERED_BYTES) ws.send(data);
  };
  const addDiagram = (diagram: MachineDiagram) => {
    if (diagrams.has(diagram.machine)) return;
    diagrams.set(diagram.machine, diagram);
    broadcast({ t: 'def', diagram });
  };
  const model = new InspectionModel({ sampleSize: o.sampleSize, onDiagram: addDiagram });
  const view = (): InspectorView => mergeViews([model.view(), ...feeds.values()]);

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = (req.url ?? '/').split('?')[0]!;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    const headers = {
      'cache-control': 'no-store',
      // Everything comes from this server: no CDN, no third-party request (the page works offline).
      'content-security-policy': "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'",
      'x-content-type-options': 'nosniff',
    };
    if (url === '/view.json') {
      res.writeHead(200, { ...headers, 'content-type': 'application/json' }).end(JSON.stringify(view()));
      return;
    }
    const asset = assets[url === '/index.html' ? '/' : url];
    if (!asset) {
      res.writeHead(404, { ...headers, 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { ...headers, 'content-type': asset.type }).end(req.method === 'HEAD' ? undefined : asset.body);
  });

  const wss = new WebSocketServer({ noServer: true, maxPayload: 8 * 1024 * 1024, perMessageDeflate: false });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = (req.url ?? '').split('?')[0];
    if (url !== '/ws' && url !== '/feed') return void socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => (url === '/ws' ? onPage(ws) : onFeed(ws)));
  });

  const onPage = (ws: WebSocket) => {
    pages.add(ws);
    ws.on('close', () => pages.delete(ws));
    ws.on('error', () => pages.delete(ws));
    for (const diagram of diagrams.values()) ws.send(JSON.stringify({ t: 'def', diagram } satisfies InspectorMessage));
    ws.send(JSON.stringify({ t: 'view', view: view() } satisfies InspectorMessage));
  };

  const onFeed = (ws: WebSocket) => {
    ws.on('error', () => undefined);
    ws.on('message', (data: Buffer) => {
      try {
        const message = JSON.parse(data.toString('utf8')) as InspectorMessage;
        if (message.t === 'def' && typeof message.diagram?.machine === 'string') addDiagram(message.diagram);
        else if (message.t === 'view' && Array.isArray(message.view?.nodes) && Array.isArray(message.view.units)) {
          // A feed's last view stays after it disconnects: a host process that ended still shows how it ended.
          feeds.set(ws, message.view);
          feedsDirty = true;
        }
      } catch {
        // a malformed feed message is ignored
      }
    });
  };

  const timer = setInterval(
    () => {
      if ((!model.dirty && !feedsDirty) || pages.size === 0) return;
      model.dirty = false;
      feedsDirty = false;
      broadcast({ t: 'view', view: view() });
    },
    Math.max(16, Math.round(1000 / o.maxUpdatesPerSecond)),
  );
  timer.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = o.host === '0.0.0.0' || o.host === '::' ? '127.0.0.1' : o.host.includes(':') ? `[${o.host}]` : o.host;
  let closing: Promise<void> | undefined;

  return {
    url: `http://${shownHost}:${port}/`,
    port,
    inspect: model.inspect,
    next: model.inspect,
    watch(host) {
      if (typeof host?.on !== 'function' || typeof host.nodeId !== 'string') throw new ArgumentError('host', 'must be a FrameworkRuntime');
      return host.on(UNIT_CHANGED, (e) => model.unit(host.nodeId, e));
    },
    view,
    close() {
      closing ??= (async () => {
        clearInterval(timer);
        for (const ws of [...pages, ...feeds.keys()]) ws.terminate();
        await new Promise<void>((resolve) => wss.close(() => resolve()));
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      })();
      return closing;
    },
  };
}

/**
 * Nodes side by side, by nodeId (a nodeId seen twice: the later source wins); unit samples merged by unit id (each
 * process samples the same units, InspectionModel's bottom-k, so the source's S0, S1, S4 meet the target's S2, S3).
 */
export function mergeViews(views: readonly InspectorView[]): InspectorView {
  if (views.length === 1) return views[0]!;
  const nodes = new Map<string, NodeView>();
  const units = new Map<string, UnitSample>();
  for (const v of views) {
    for (const n of v.nodes) nodes.set(n.nodeId, n);
    for (const u of v.units) {
      const had = units.get(u.unit);
      units.set(u.unit, had ? { ...had, ...u, points: { ...had.points, ...u.points }, updated: Math.max(had.updated, u.updated) } : u);
    }
  }
  return { at: Date.now(), nodes: [...nodes.values()].sort((a, b) => a.nodeId.localeCompare(b.nodeId)), units: [...units.values()] };
}
