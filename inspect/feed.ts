/**
 * `connectInspector`: for hosts in another process than the inspector page (one process per host). The same
 * aggregate as `createInspector` is kept in this process, and its view is pushed to the inspector's `/feed`
 * WebSocket at most `maxUpdatesPerSecond` times a second (only when something changed); machine structures are sent
 * once per machine id. The inspector shows the feed's nodes next to its own, and keeps a feed's last view after it
 * disconnects. Best effort: a lost connection stops the feed, never the host.
 */
import type { InspectionEvent } from 'xstate';
import WebSocket from 'ws';
import { ArgumentError } from '../vocabulary';
import { UNIT_CHANGED } from '../runtime/relocation/events';
import { InspectionModel } from './model';
import { DEFAULT_INSPECTOR_OPTIONS, type WatchableHost } from './server';
import type { InspectorMessage } from './types';

export interface InspectorFeedOptions {
  /** The inspector's `url` (http://…/) or its feed endpoint (ws://…/feed). */
  url: string;
  /** @default 10 */
  maxUpdatesPerSecond?: number;
  /** @default 8 */
  sampleSize?: number;
}

export interface InspectorFeed {
  /** The value for `createRuntime({ inspect })`. */
  readonly inspect: (event: InspectionEvent) => void;
  next(event: InspectionEvent): void;
  watch(host: WatchableHost): () => void;
  /** Sends what changed since the last push, then disconnects. */
  close(): Promise<void>;
}

export function feedUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ArgumentError('url', `must be the inspector's url such as http://127.0.0.1:7070/; got '${url}'`);
  }
  if (parsed.protocol === 'http:') parsed.protocol = 'ws:';
  else if (parsed.protocol === 'https:') parsed.protocol = 'wss:';
  else if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:') throw new ArgumentError('url', `must be http(s):// or ws(s)://; got '${url}'`);
  parsed.pathname = '/feed';
  return parsed.toString();
}

export async function connectInspector(options: InspectorFeedOptions): Promise<InspectorFeed> {
  if (typeof options !== 'object' || options === null) throw new ArgumentError('options', 'must be an object with the inspector url');
  const target = feedUrl(options.url);
  const rate = options.maxUpdatesPerSecond ?? DEFAULT_INSPECTOR_OPTIONS.maxUpdatesPerSecond;
  if (typeof rate !== 'number' || !(rate > 0) || rate > 60) throw new ArgumentError('maxUpdatesPerSecond', `must be a number in (0, 60]; got ${String(rate)}`);
  const ws = new WebSocket(target, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', (error) => reject(new Error(`inspector feed: cannot connect to ${target}`, { cause: error })));
  });
  ws.on('error', () => undefined);
  const send = (message: InspectorMessage) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
  };
  const model = new InspectionModel({ sampleSize: options.sampleSize ?? DEFAULT_INSPECTOR_OPTIONS.sampleSize, onDiagram: (diagram) => send({ t: 'def', diagram }) });
  const flush = () => {
    if (!model.dirty) return;
    model.dirty = false;
    send({ t: 'view', view: model.view() });
  };
  const timer = setInterval(flush, Math.max(16, Math.round(1000 / rate)));
  timer.unref();
  let closing: Promise<void> | undefined;
  return {
    inspect: model.inspect,
    next: model.inspect,
    watch(host) {
      if (typeof host?.on !== 'function' || typeof host.nodeId !== 'string') throw new ArgumentError('host', 'must be a FrameworkRuntime');
      return host.on(UNIT_CHANGED, (e) => model.unit(host.nodeId, e));
    },
    close() {
      closing ??= (async () => {
        clearInterval(timer);
        flush();
        if (ws.readyState !== WebSocket.OPEN) return ws.terminate();
        await new Promise<void>((resolve) => {
          const bound = setTimeout(() => {
            ws.terminate();
            resolve();
          }, 1000);
          ws.once('close', () => {
            clearTimeout(bound);
            resolve();
          });
          ws.close();
        });
      })();
      return closing;
    },
  };
}
