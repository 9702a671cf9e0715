/**
 * STREAM test support: a chat-like Actor that echoes every client frame and streams its own timer ticks to every
 * session bound to it, a client-side recorder that proves exactly-once and in-order delivery in both directions, and
 * a steady sender. Public API only, except `sessionsStats` (the session endpoint's socket counters).
 */
import { connectSession, type Session, type SessionOptions } from '../../client';
import { defineActor, preserveState, type FrameworkRuntime, type ObjectContext } from '../../runtime';
import type { SessionsComponent, SessionsStats } from '../../runtime/components/sessions';
import type { Host } from '../../runtime/host';
import { eventually } from '../support/stack';

export interface ChatState {
  /** Upstream frame numbers per client tag, in the order onSession got them. */
  up: Record<string, number[]>;
  ticks: number;
  nodes: string[];
  opened: number;
  closed: string[];
}

export type ChatFrame = { tag: string; n: number };
export type ChatDown = { echo: number; tag: string; at: string } | { tick: number; at: string };

/** Every onSession call after this is set counts as a late callback (teardown tests). */
export const lateCallbacks = { since: undefined as number | undefined, count: 0 };

function noteNode(state: ChatState, ctx: ObjectContext<ChatState>): void {
  if (state.nodes[state.nodes.length - 1] !== ctx.nodeId) state.nodes.push(ctx.nodeId);
}

/** Opening a session to an Actor whose id starts with 'slow-' waits until `openGate.release()` (a pending reply). */
export const openGate = {
  waiting: 0,
  release: () => undefined as void,
  reset(): void {
    this.waiting = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    this.release = release;
    this.promise = gate;
  },
  promise: Promise.resolve() as Promise<void>,
};

export const Chat = defineActor<ChatState>({
  type: 'Chat',
  relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString('utf8')) as ChatState }),
  create: () => ({ up: {}, ticks: 0, nodes: [], opened: 0, closed: [] }),
  receive: (state, message: { op: 'state' } | { op: 'stopTicks' }, ctx) => {
    if (message.op === 'stopTicks') ctx.timers.cancel('tick');
    return state;
  },
  onTimer: (state, _name, ctx) => {
    if (lateCallbacks.since !== undefined) lateCallbacks.count++;
    state.ticks++;
    noteNode(state, ctx);
    ctx.sessions.broadcast({ tick: state.ticks, at: ctx.nodeId } satisfies ChatDown);
  },
  onSession: async (state, event, ctx) => {
    if (lateCallbacks.since !== undefined) lateCallbacks.count++;
    noteNode(state, ctx);
    if (event.type === 'open') {
      if (ctx.id.startsWith('slow-')) {
        openGate.waiting++;
        await openGate.promise;
      }
      state.opened++;
      if (!ctx.timers.has('tick')) ctx.timers.schedule('tick', { dueMs: 5, periodMs: 5 });
      return;
    }
    if (event.type === 'closed') {
      state.closed.push(event.reason);
      return;
    }
    const frame = event.frame as ChatFrame;
    (state.up[frame.tag] ??= []).push(frame.n);
    event.session.send({ echo: frame.n, tag: frame.tag, at: ctx.nodeId } satisfies ChatDown);
  },
});

const recorders = new Set<Recorder>();

/** afterEach: no client of a finished test keeps sending or stays connected. */
export async function closeRecorders(): Promise<void> {
  const all = [...recorders];
  recorders.clear();
  for (const r of all) r.halt();
  await Promise.all(all.map((r) => r.session.close().catch(() => undefined)));
}

/** What one client received, checked for exactly-once and order as it arrives. */
export class Recorder {
  readonly echoes: number[] = [];
  readonly echoNodes: string[] = [];
  readonly ticks: number[] = [];
  readonly tickNodes = new Set<string>();
  readonly problems: string[] = [];
  sent = 0;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    readonly session: Session,
    readonly tag: string,
  ) {
    recorders.add(this);
    session.on('frame', (value) => {
      const frame = value as ChatDown;
      if ('echo' in frame) {
        if (frame.tag !== tag) this.problems.push(`echo for ${frame.tag}`);
        if (frame.echo !== this.echoes.length + 1) this.problems.push(`echo ${frame.echo} after ${this.echoes.length}`);
        this.echoes.push(frame.echo);
        if (this.echoNodes[this.echoNodes.length - 1] !== frame.at) this.echoNodes.push(frame.at);
      } else {
        const last = this.ticks[this.ticks.length - 1];
        if (last !== undefined && frame.tick !== last + 1) this.problems.push(`tick ${frame.tick} after ${last}`);
        this.ticks.push(frame.tick);
        this.tickNodes.add(frame.at);
      }
    });
  }

  /** Sends frame n = 1, 2, … every `everyMs` until stop(). */
  pump(everyMs = 2): void {
    this.timer = setInterval(() => {
      if (this.session.state === 'closed') return;
      try {
        this.session.send({ tag: this.tag, n: this.sent + 1 } satisfies ChatFrame);
        this.sent++;
      } catch (error) {
        this.problems.push(`send refused: ${(error as Error).message}`);
        this.halt();
      }
    }, everyMs);
  }

  halt(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Stops sending and waits until every frame sent came back as an echo. */
  async stop(ms = 15_000): Promise<void> {
    this.halt();
    await eventually(() => this.echoes.length >= this.sent, ms, `all ${this.sent} echoes for ${this.tag} (have ${this.echoes.length})`);
  }

  /** Waits until `count` more echoes arrived. */
  async more(count: number, ms = 15_000): Promise<void> {
    const target = this.echoes.length + count;
    await eventually(() => this.echoes.length >= target, ms, `${count} more echoes for ${this.tag}`);
  }

  expectExactlyOnceInOrder(): void {
    expect(this.problems).toEqual([]);
    expect(this.echoes).toEqual(Array.from({ length: this.sent }, (_, i) => i + 1));
  }
}

export async function open(url: string | string[], actor: string, tag: string, extra: Partial<SessionOptions> = {}): Promise<Recorder> {
  const session = await connectSession({ ...(Array.isArray(url) ? { urls: url } : { url }), actor, openTimeoutMs: 10_000, ...extra });
  return new Recorder(session, tag);
}

/** The session endpoint's counters of a host (sockets, write queues, sessions, bindings). */
export function sessionsStats(host: FrameworkRuntime): SessionsStats {
  const component = (host as Host).components.find((c) => c.name === 'sessions') as SessionsComponent;
  return component.stats();
}

export async function chatState(host: FrameworkRuntime, actor: string): Promise<ChatState> {
  return (await host.request({ actor }, { op: 'state' }, { timeoutMs: 10_000 })) as ChatState;
}

export const LOOPBACK = { host: '127.0.0.1', port: 0 };
