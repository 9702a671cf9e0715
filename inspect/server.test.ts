/**
 * The inspector server without a browser: it serves only its own page (loopback by default), pushes a bounded number
 * of views per second over /ws with each machine structure once, merges what feeds from other processes send, and
 * refuses bad options naming the field.
 */
import WebSocket from 'ws';
import { ArgumentError } from '../runtime';
import { hostSet } from '../spec-tests/support/hosts';
import { connectInspector, createInspector, type Inspector } from '.';
import type { InspectorMessage } from './types';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('createInspector', () => {
  let inspector: Inspector | undefined;
  afterEach(async () => {
    await inspector?.close();
    inspector = undefined;
  });

  test('serves its page on 127.0.0.1 and nothing else', async () => {
    inspector = await createInspector();
    expect(inspector.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await fetch(inspector.url);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    // Self-contained: no absolute URL in the page or its scripts (no CDN, nothing leaves the host).
    for (const asset of ['', 'app.js', 'diagram.js', 'style.css']) {
      const body = asset ? await (await fetch(inspector.url + asset)).text() : html;
      expect(body).not.toMatch(/(?:src|href)\s*=\s*["']?(?:https?:)?\/\//i);
      expect(body).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    }
    expect((await fetch(inspector.url + 'nope')).status).toBe(404);
    expect((await fetch(inspector.url, { method: 'POST' })).status).toBe(405);
  });

  test('a page gets every machine structure once, then at most maxUpdatesPerSecond views', async () => {
    inspector = await createInspector({ maxUpdatesPerSecond: 5 });
    const set = hostSet();
    const messages: InspectorMessage[] = [];
    const ws = new WebSocket(inspector.url.replace('http', 'ws') + 'ws');
    ws.on('message', (data: Buffer) => messages.push(JSON.parse(data.toString()) as InspectorMessage));
    await new Promise((r) => ws.once('open', r));
    try {
      const a = await set.host({ nodeId: 'node-a', applicationVersion: 1, inspect: inspector.inspect });
      const b = await set.host({ nodeId: 'node-b', applicationVersion: 1, inspect: inspector });
      const start = Date.now();
      for (let i = 0; i < 20; i++) await a.createActor('Counter', `c${i}`);
      await sleep(1000);
      await b.shutdown();
      await sleep(300);
      const elapsed = (Date.now() - start) / 1000;
      const views = messages.filter((m) => m.t === 'view');
      expect(views.length).toBeLessThanOrEqual(1 + Math.ceil(elapsed * 5) + 1);
      const defs = messages.filter((m) => m.t === 'def').map((m) => (m.t === 'def' ? m.diagram.machine : ''));
      expect(defs.sort()).toEqual(['hostLifecycle', 'shutdown']);
      const last = views[views.length - 1]!;
      expect(last.t === 'view' && last.view.nodes.map((n) => [n.nodeId, n.machines.find((m) => m.machine === 'hostLifecycle')!.latest.state])).toEqual([
        ['node-a', 'Serving'],
        ['node-b', 'Stopped'],
      ]);
    } finally {
      ws.close();
      await set.close();
    }
  });

  test('hosts in another process: a feed pushes its view and the inspector shows its nodes', async () => {
    inspector = await createInspector();
    const feed = await connectInspector({ url: inspector.url, maxUpdatesPerSecond: 20 });
    const set = hostSet();
    try {
      const h = await set.host({ nodeId: 'remote-1', applicationVersion: 1, inspect: feed.inspect });
      feed.watch(h);
      await h.shutdown();
      await feed.close(); // sends what changed last
      await sleep(100);
      const node = inspector.view().nodes.find((n) => n.nodeId === 'remote-1');
      expect(node?.machines.find((m) => m.machine === 'hostLifecycle')?.latest.history).toEqual(['Preparing', 'Serving', 'Draining', 'Stopped']);
    } finally {
      await set.close();
    }
  });

  test('bad options name the field', async () => {
    await expect(createInspector({ port: -1 })).rejects.toThrow(ArgumentError);
    await expect(createInspector({ port: 1.5 })).rejects.toThrow(/port/);
    await expect(createInspector({ maxUpdatesPerSecond: 0 })).rejects.toThrow(/maxUpdatesPerSecond/);
    await expect(createInspector({ sampleSize: -1 })).rejects.toThrow(/sampleSize/);
    await expect(connectInspector({ url: 'nonsense' })).rejects.toThrow(/url/);
  });
});
