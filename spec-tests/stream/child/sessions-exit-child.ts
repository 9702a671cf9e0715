/**
 * Child process of sessions-teardown.test.ts. On each stack (memory + in-process, Redis + ws), with session endpoints
 * on loopback and clients streaming both ways:
 * - normal Shutdown of the session owner (Stopped): its client is told to move and, with no other endpoint, closes;
 * - Shutdown past its deadline (ForceStopped/DeadlineExceeded, a closing callback that never ends) of a host that is
 *   both session owner and Actor host, while its clients stream — one of them a raw ws client that ignores the move,
 *   so its socket is still open and written to at the deadline: it is terminated;
 * then the stores are closed and nothing more is done: no process.exit. It prints, per stack, what each endpoint
 * still holds after its Shutdown (sockets, queued writes, sessions), how its clients ended, and how many application
 * callbacks ran after every Shutdown had returned (late callbacks). The parent proves the process then ends by
 * itself: no listener, socket or timer is left.
 *
 * One JSON line per step on stdout; the last is {"step":"closed"}. Env: REDIS_URL, KEY_PREFIX.
 */
import { connectSession, type Session } from '../../../client';
import {
  createRuntime,
  defineActor,
  defineSpot,
  memoryStores,
  preserveState,
  redisStores,
  type FrameworkRuntime,
  type MeshConfig,
  type Stores,
} from '../../../runtime';
import type { SessionsComponent } from '../../../runtime/components/sessions';
import type { Host } from '../../../runtime/host';
import { encodeValue } from '../../../runtime/codec';
import { encodeWire } from '../../../runtime/components/sessions/wire';
import WebSocket from 'ws';

let lateSince: number | undefined;
let late = 0;
const json = <S>() => preserveState<S>({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) as S });

const Chat = defineActor<{ ticks: number }>({
  type: 'Chat',
  relocation: json(),
  create: () => ({ ticks: 0 }),
  receive: (s) => s,
  onTimer: (s, _n, ctx) => {
    if (lateSince !== undefined) late++;
    ctx.sessions.broadcast({ tick: ++s.ticks });
  },
  onSession: (_s, event, ctx) => {
    if (lateSince !== undefined) late++;
    if (event.type === 'open' && !ctx.timers.has('tick')) ctx.timers.schedule('tick', { dueMs: 2, periodMs: 2 });
    if (event.type === 'frame') event.session.send({ echo: event.frame });
  },
});

/** Holds Shutdown past its deadline (ForceStopped). */
const Stuck = defineSpot<object>({
  type: 'Stuck',
  kind: 'user',
  relocation: json(),
  create: () => ({}),
  receive: () => undefined,
  onClosing: () => new Promise<void>(() => undefined),
});

const report = (step: string, detail: Record<string, unknown> = {}): void => {
  process.stdout.write(`${JSON.stringify({ step, ...detail })}\n`);
};

const stats = (host: FrameworkRuntime) => ((host as Host).components.find((c) => c.name === 'sessions') as SessionsComponent).stats();
const held = (host: FrameworkRuntime) => {
  const s = stats(host);
  return { openConnections: s.openConnections, pendingWrites: s.pendingWrites, sessions: s.sessions };
};

/** Sends a frame every 2 ms until the session closes. */
function stream(session: Session): { received: () => number } {
  let received = 0;
  let n = 0;
  session.on('frame', () => received++);
  const timer = setInterval(() => {
    if (session.state === 'closed') return clearInterval(timer);
    if (session.state === 'open') session.send(++n);
  }, 2);
  void session.closed.then(() => clearInterval(timer));
  return { received: () => received };
}

async function until(check: () => boolean, what: string | (() => string), ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out: ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function run(stack: string, stores: Stores, meshes: MeshConfig[]): Promise<void> {
  lateSince = undefined;
  late = 0;
  // restoreValidityMs well inside the owner's 10 s Shutdown deadline: client b's resume at the owner routes to c2,
  // whose record still names the gone `forced` host; the owner re-reads it for at most restoreValidityMs (§11), and
  // its Shutdown waits for that message (§14 step 3). With the 30 s default, a resume that reached the owner late (a
  // loaded CI run) held its Shutdown to the deadline: ForceStopped where this test is about a normal Shutdown.
  const timing = { discoveryIntervalMs: 20, leaseMs: 3000, restoreValidityMs: 2000 };
  const sessions = { listen: { host: '127.0.0.1', port: 0 } };
  const base = { applicationVersion: 1, stores, meshes, types: [Chat, Stuck], timing, logger: { debug() {}, info() {}, warn() {}, error() {} } };
  const actors = await createRuntime({ ...base, nodeId: 'actors' });
  const owner = await createRuntime({ ...base, nodeId: 'owner', sessions });
  const forced = await createRuntime({ ...base, nodeId: 'forced', sessions });
  await actors.createActor('Chat', 'c1');
  await forced.createActor('Chat', 'c2');
  await forced.createSpot('Stuck', 'stuck');
  const opts = { resumeTimeoutMs: 500, openTimeoutMs: 5000 } as const;
  const a = await connectSession({ url: owner.sessionEndpoint!, actor: 'c1', ...opts });
  const b = await connectSession({ url: forced.sessionEndpoint!, actor: 'c2', ...opts });
  const sa = stream(a);
  const sb = stream(b);
  // A client that ignores `move` and keeps sending: still connected when the deadline passes.
  const raw = new WebSocket(forced.sessionEndpoint!);
  let rawReceived = 0;
  let rawClosed = false;
  let rawTimer: ReturnType<typeof setInterval> | undefined;
  raw.on('message', () => {
    // The first message is 'opened': frames may follow only then.
    if (rawReceived++ > 0 || rawTimer) return;
    let n = 0;
    rawTimer = setInterval(() => raw.readyState === WebSocket.OPEN && raw.send(encodeWire({ t: 'f', s: ++n, d: encodeValue(n, 'frame') })), 2);
  });
  raw.on('error', () => undefined);
  raw.on('close', () => {
    rawClosed = true;
    clearInterval(rawTimer);
  });
  raw.on('open', () => raw.send(encodeWire({ t: 'open', v: 1, actor: 'c2' })));
  await until(() => sa.received() > 50 && sb.received() > 50 && rawReceived > 50, () => `all clients streaming (${sa.received()}, ${sb.received()}, ${rawReceived})`);

  // The forced host goes first: no other host takes its client (the owner is Serving and listed, but the Actor c2
  // dies with its host, so the resume there ends). Its Shutdown passes its deadline.
  const forcedResult = await forced.shutdown({ deadlineMs: 300 });
  const forcedHeld = held(forced);
  await until(() => rawClosed, 'the raw client was disconnected');
  const ownerResult = await owner.shutdown({ deadlineMs: 10_000 });
  const ownerHeld = held(owner);
  const actorsResult = await actors.shutdown({ deadlineMs: 10_000 });
  lateSince = Date.now();
  const [closedA, closedB] = await Promise.all([a.closed, b.closed]);
  // Terminated sockets report their close asynchronously: each endpoint ends with none.
  await until(() => held(forced).openConnections === 0 && held(forced).pendingWrites === 0, 'forced endpoint released');
  await new Promise((r) => setTimeout(r, 200));
  await stores.close();
  report('stack', {
    stack,
    forced: { outcome: forcedResult.outcome, reason: forcedResult.reason, sessionsHeld: forcedHeld.sessions, after: held(forced), client: b.state, rawClosed },
    owner: { outcome: ownerResult.outcome, held: ownerHeld, client: a.state, code: closedA.code },
    actors: actorsResult.outcome,
    forcedClientCode: closedB.code,
    lateCallbacks: late,
  });
}

async function main(): Promise<void> {
  await run('memory+in-process', memoryStores(), [{ name: 'main' }]);
  const redis = redisStores({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', keyPrefix: process.env.KEY_PREFIX ?? 'zlink:sessions-exit-child:' });
  await run('redis+ws', redis, [{ name: 'main', listen: { host: '127.0.0.1', port: 0 } }]);
  report('closed');
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
