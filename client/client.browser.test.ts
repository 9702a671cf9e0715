/**
 * zlink/client in a real browser: headless Chromium (playwright-core, /usr/bin/chromium as the inspector's test uses)
 * loads the client compiled from these sources with nothing but msgpackr's browser build beside it — any other
 * import (a Node module, `ws`) fails the load — and uses the browser's own WebSocket. It binds a session through one
 * host's endpoint, streams both ways with values only the codec round-trips (Date, Map, BigInt), then that host
 * shuts down: the page's session is told to move, resumes at the other host's endpoint, and every frame in both
 * directions arrives exactly once and in order.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { chromium, type Browser } from 'playwright-core';
import { defineActor, preserveState, TerminationOutcome } from '../runtime';
import { makeStack, type Stack } from '../spec-tests/support/stack';

const CHROMIUM = process.env.ZLINK_CHROMIUM ?? '/usr/bin/chromium';
const root = path.resolve(__dirname, '..');

/** The client and what it imports, as CommonJS modules for the page, plus msgpackr's UMD browser build. */
function bundle(): string {
  const modules: Record<string, string> = {};
  const add = (spec: string): void => {
    // A folder module (`../vocabulary`) is its index, as Node and bundlers resolve it.
    const id = existsSync(path.join(root, `${spec}.ts`)) ? spec : `${spec}/index`;
    if (modules[id] !== undefined) return;
    const source = readFileSync(path.join(root, `${id}.ts`), 'utf8');
    const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2020, esModuleInterop: true } }).outputText;
    modules[id] = js;
    for (const [, spec] of js.matchAll(/require\("(\.[^"]+)"\)/g)) add(path.posix.normalize(path.posix.join(path.posix.dirname(id), spec!)));
  };
  add('client/index');
  const msgpackr = readFileSync(path.join(root, 'node_modules/msgpackr/dist/index.js'), 'utf8');
  const entries = Object.entries(modules)
    .map(([id, js]) => `${JSON.stringify(id)}: function (exports, require, module) {\n${js}\n}`)
    .join(',\n');
  return `(function () {
  var defs = { ${entries},
    "msgpackr": function (exports, require, module) { ${msgpackr} } };
  var cache = {};
  function load(id) {
    if (!defs[id] && defs[id + '/index']) id = id + '/index';
    if (cache[id]) return cache[id].exports;
    if (!defs[id]) throw new Error('the browser client needs module ' + id);
    var module = { exports: {} };
    cache[id] = module;
    defs[id](module.exports, function (spec) {
      if (spec[0] !== '.') return load(spec);
      var parts = id.split('/').slice(0, -1);
      spec.split('/').forEach(function (p) { if (p === '..') parts.pop(); else if (p !== '.') parts.push(p); });
      return load(parts.join('/'));
    }, module);
    return module.exports;
  }
  window.zlinkClient = load('client/index');
})();`;
}

/** Echoes each frame's value back (typed values included) and counts what it got, in order. */
const Mirror = defineActor<{ got: number[] }>({
  type: 'Mirror',
  relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) }),
  create: () => ({ got: [] }),
  receive: (state) => state.got,
  onSession: (state, event, ctx) => {
    if (event.type !== 'frame') return;
    const frame = event.frame as { n: number; at: Date; tags: Map<string, bigint> };
    state.got.push(frame.n);
    event.session.send({ n: frame.n, at: frame.at, tags: frame.tags, node: ctx.nodeId });
  },
});

describe('zlink/client in headless Chromium', () => {
  let stack: Stack | undefined;
  let browser: Browser | undefined;

  beforeAll(() => {
    if (!existsSync(CHROMIUM))
      throw new Error(`Chromium not found at ${CHROMIUM}: install it with 'apt-get install -y chromium' (Debian), or point ZLINK_CHROMIUM at a Chromium binary.`);
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  test("the browser's WebSocket streams both ways, moves to another host when its endpoint shuts down, and nothing is lost or duplicated", async () => {
    // The page and its script first: transpiling the client blocks this process's event loop (~0.3 s on a quiet
    // machine, longer on a loaded one), and a host whose renewal comes after FAST_TIMING's 3 s lease enters Error.
    browser = await chromium.launch({ executablePath: CHROMIUM });
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.setContent('<!doctype html><title>zlink client</title>');
    await page.addScriptTag({ content: bundle() });

    stack = await makeStack('memory+in-process');
    const listen = { host: '127.0.0.1', port: 0 };
    const first = await stack.host({ nodeId: 'first', applicationVersion: 1, types: [Mirror], sessions: { listen } });
    const second = await stack.host({ nodeId: 'second', applicationVersion: 1, types: [Mirror], sessions: { listen } });
    await second.createActor('Mirror', 'm1');

    // In the page: bind through the first host, and stream a frame every 2 ms.
    await page.evaluate(async (url) => {
      const w = globalThis as unknown as Record<string, any>;
      const { connectSession } = w.zlinkClient;
      const session = await connectSession({ url, actor: 'm1' });
      const state = { sent: 0, echoes: [] as number[], problems: [] as string[], nodes: [] as string[], session };
      w.zlinkTest = state;
      session.on('frame', (f: { n: number; at: Date; tags: Map<string, bigint>; node: string }) => {
        if (f.n !== state.echoes.length + 1) state.problems.push(`echo ${f.n} after ${state.echoes.length}`);
        if (!(f.at instanceof Date) || f.at.getTime() !== f.n * 1000) state.problems.push(`date of ${f.n}`);
        if (!(f.tags instanceof Map) || f.tags.get('n') !== BigInt(f.n)) state.problems.push(`map of ${f.n}`);
        state.echoes.push(f.n);
        if (state.nodes[state.nodes.length - 1] !== f.node) state.nodes.push(f.node);
      });
      w.zlinkPump = setInterval(() => {
        if (session.state === 'closed') return;
        const n = state.sent + 1;
        session.send({ n, at: new Date(n * 1000), tags: new Map([['n', BigInt(n)]]) });
        state.sent = n;
      }, 2);
    }, first.sessionEndpoint!);

    const read = () =>
      page.evaluate(() => {
        const t = (globalThis as unknown as Record<string, any>).zlinkTest;
        return { sent: t.sent, echoes: t.echoes.length, problems: t.problems, state: t.session.state, endpoint: t.session.endpoint, connections: t.session.connections };
      });
    const until = async (check: (r: Awaited<ReturnType<typeof read>>) => boolean, what: string) => {
      const end = Date.now() + 15_000;
      for (let r = await read(); !check(r); r = await read()) {
        if (Date.now() > end) throw new Error(`timed out: ${what} (${JSON.stringify(r)})`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    await until((r) => r.echoes >= 30, 'first echoes');
    expect(await first.shutdown({ deadlineMs: 10_000 })).toMatchObject({ outcome: TerminationOutcome.Stopped });
    await until((r) => r.state === 'open' && r.endpoint === second.sessionEndpoint, 'resumed at the second host');
    const resumedAt = (await read()).echoes;
    await until((r) => r.echoes >= resumedAt + 30, 'echoes after the resume');
    await page.evaluate(() => clearInterval((globalThis as unknown as Record<string, any>).zlinkPump));
    await until((r) => r.echoes === r.sent, 'every echo');

    const result = await read();
    expect(result.problems).toEqual([]);
    expect(result.connections).toBe(2);
    expect(errors).toEqual([]);
    expect(await second.request({ actor: 'm1' }, 'got')).toEqual(Array.from({ length: result.sent }, (_, i) => i + 1));
    await page.evaluate(() => (globalThis as unknown as Record<string, any>).zlinkTest.session.close());
  });
});
