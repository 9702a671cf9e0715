/**
 * One host of `npm run demo` (tools/demo/demo.ts): source, spare or target. The orchestrator drives it with
 * `handle(cmd, args)`: by direct calls when every host shares the orchestrator's process, over IPC when each host has
 * its own process (`--processes`, tools/demo/demo-host.ts). Every time it returns is read on its own clock.
 */
import {
  createRuntime,
  FrameworkRuntimeState,
  memoryStores,
  redisStores,
  RelocationMode,
  UNIT_CHANGED,
  type FrameworkRuntime,
  type LogFn,
  type RelocationDiagnostics,
  type Stores,
  type TerminationResult,
  type UnitEvent,
} from '../../runtime';
import { connectInspector, type InspectorFeed } from '../../inspect';
import type { WatchableHost } from '../../inspect/server';
import type { InspectionEvent } from 'xstate';
import { compareSeen, pct, pool, sortNum } from '../bench/bench-common';
import { DEMO_TYPES, EntryActor, ids, Lobby, Member, Room, timerFires, trafficRefs, type DemoMessage, type Sizes } from './demo-workload';

export type Role = 'source' | 'spare' | 'target';

export interface DemoNodeConfig {
  readonly role: Role;
  readonly applicationVersion: number;
  readonly sizes: Sizes;
  /** Redis URL and key prefix, or undefined for memory stores (one process only). */
  readonly redis?: { url: string; prefix: string };
  /** ws meshes (one process per host) or the in-process transport. */
  readonly ws: boolean;
  readonly followMs: number;
  readonly timerMs: number;
  /** Another process's inspector to feed (`--processes --inspect`). */
  readonly inspectUrl?: string;
}

/** An inspector in this process (`createInspector`): its observer and watch. */
export interface LocalInspector {
  readonly inspect: (event: InspectionEvent) => void;
  watch(host: WatchableHost): () => void;
}

export interface Progress {
  readonly state: string;
  /** Units of the fixed inventory by kind, once the host entered Relocating. */
  readonly total?: Record<string, number>;
  /** Units past S1 (cutover submitted) by kind. */
  readonly moved: Record<string, number>;
}

export interface TrafficReport {
  sent: number;
  processed: number;
  lost: number;
  duplicated: number;
  reordered: number;
  sendErrors: number;
  reportErrors: number;
  samples: unknown[];
}

export interface NodeStats {
  s0s1: { count: number; p50: number; p95: number; p99: number; max: number };
  s2s3: { count: number; p50: number; p95: number; p99: number; max: number };
  timerFires: Record<string, number>;
  log: { warn: number; error: number };
  inventory?: RelocationDiagnostics['lastInventory'];
}

export class DemoNode {
  private host: FrameworkRuntime | undefined;
  private stores: Stores | undefined;
  private feed: InspectorFeed | undefined;
  private readonly s0 = new Map<string, number>();
  private readonly s0s1: number[] = [];
  private readonly s2 = new Map<string, number>();
  private readonly s2s3: number[] = [];
  private readonly moved: Record<string, number> = {};
  private relocateStartedAt = 0;
  private traffic: { timer: NodeJS.Timeout; expected: Map<number, number[]>; sent: number; sendErrors: number } | undefined;
  private readonly logged = { warn: 0, error: 0 };
  private readonly log: LogFn = (level, message, error) => {
    this.logged[level]++;
    if (this.logged.warn + this.logged.error <= 5)
      (level === 'error' ? console.error : console.warn)(`[zlink ${this.config.role}] ${message}`, ...(error === undefined ? [] : [error]));
  };

  constructor(
    private readonly config: DemoNodeConfig,
    /** One process: the stores every host shares. */
    private readonly sharedStores?: Stores,
    private readonly inspector?: LocalInspector,
  ) {}

  handle(cmd: string, args: Record<string, unknown>): Promise<unknown> {
    switch (cmd) {
      case 'start':
        return this.start();
      case 'create':
        return this.create();
      case 'reach':
        return this.reach(args.nodeId as string);
      case 'trafficStart':
        return Promise.resolve(this.trafficStart(args.rate as number));
      case 'trafficStop':
        return this.trafficStop();
      case 'relocate':
        return this.relocate(args.targetApplicationVersion as number);
      case 'progress':
        return Promise.resolve(this.progress());
      case 'waitSafeToShutdown':
        return this.waitSafeToShutdown();
      case 'shutdown':
        return this.shutdown();
      case 'stats':
        return Promise.resolve(this.stats());
      case 'stop':
        return this.stop();
      default:
        return Promise.reject(new Error(`demo host: unknown command '${cmd}'`));
    }
  }

  private async start(): Promise<{ nodeId: string }> {
    const { role, redis, ws, applicationVersion, followMs } = this.config;
    this.stores = this.sharedStores ?? (redis ? redisStores({ url: redis.url, keyPrefix: redis.prefix }) : memoryStores());
    if (this.config.inspectUrl) this.feed = await connectInspector({ url: this.config.inspectUrl });
    const inspector = this.feed ?? this.inspector;
    const n = this.config.sizes;
    this.host = await createRuntime({
      nodeId: role,
      applicationVersion,
      stores: this.stores,
      meshes: ws ? [{ name: 'main', listen: { host: '127.0.0.1', port: 0 } }] : [{ name: 'main' }],
      types: DEMO_TYPES,
      capacity: Math.max(100_000, 2 * (n.actors + n.rooms * (n.roomMembers + 1) + n.lobbies * (n.lobbyMembers + 1) + n.shards)),
      timing: { messageFollowDurationMs: followMs, discoveryIntervalMs: 100 },
      log: this.log,
      ...(inspector ? { inspect: inspector.inspect } : {}),
    });
    inspector?.watch(this.host);
    this.host.on(UNIT_CHANGED, (e) => this.onUnit(e));
    return { nodeId: this.host.nodeId };
  }

  /** Source: the workload; Instance Spots are created by their first message, here, so on this host (§10.4). */
  private async create(): Promise<{ ms: number; objects: number; shardsHere: number }> {
    const host = this.host!;
    const s = this.config.sizes;
    const t0 = performance.now();
    await pool(s.actors, 500, (i) => host.createActor(EntryActor.type, ids.actor(i)));
    await pool(s.rooms, 20, async (r) => {
      await host.createSpot(Room.type, ids.room(r));
      for (let m = 0; m < s.roomMembers; m++) await host.createActor(Member.type, ids.roomMember(r, m), { spot: ids.room(r) });
    });
    await pool(s.lobbies, 10, async (l) => {
      await host.createSpot(Lobby.type, ids.lobby(l));
      for (let m = 0; m < s.lobbyMembers; m++) {
        await host.createActor(Member.type, ids.lobbyMember(l, m));
        await host.join(ids.lobbyMember(l, m), ids.lobby(l));
      }
    });
    let shardsHere = 0;
    await pool(s.shards, 100, async (i) => {
      if ((await host.request({ spot: ids.shard(i), type: 'DemoShard' }, { op: 'where' } satisfies DemoMessage)) === host.nodeId) shardsHere++;
    });
    // Every Entry Actor gets a periodic timer, phases spread over one period.
    for (let i = 0; i < s.actors; i++) host.send({ actor: ids.actor(i) }, { op: 'arm', dueMs: 1 + Math.floor(Math.random() * this.config.timerMs), periodMs: this.config.timerMs } satisfies DemoMessage);
    const objects = s.actors + s.rooms * (1 + s.roomMembers) + s.lobbies * (1 + s.lobbyMembers) + s.shards;
    return { ms: performance.now() - t0, objects, shardsHere };
  }

  /** Waits until this host reaches an object through `nodeId` (the mesh between them is up). */
  private async reach(nodeId: string): Promise<void> {
    const until = Date.now() + 20_000;
    for (;;) {
      const where = await this.host!.request({ actor: ids.actor(0) }, { op: 'where' } satisfies DemoMessage, { timeoutMs: 2000 }).catch(() => undefined);
      if (where === nodeId) return;
      if (Date.now() > until) throw new Error(`${this.config.role} cannot reach ${ids.actor(0)} on ${nodeId}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  // ── traffic (spare) ───────────────────────────────────────────────────────────────────────

  /** One-way messages with sequence numbers to random objects, `rate` per second on average. */
  private trafficStart(rate: number): void {
    const host = this.host!;
    const refs = trafficRefs(this.config.sizes);
    const expected = new Map<number, number[]>();
    const t0 = performance.now();
    const state = { expected, sent: 0, sendErrors: 0, timer: undefined as unknown as NodeJS.Timeout };
    state.timer = setInterval(() => {
      const due = Math.floor(((performance.now() - t0) * rate) / 1000);
      while (state.sent < due) {
        const k = Math.floor(Math.random() * refs.length);
        const q = state.sent++;
        let list = expected.get(k);
        if (!list) expected.set(k, (list = []));
        list.push(q);
        try {
          host.send(refs[k]!, { op: 't', q } satisfies DemoMessage);
        } catch {
          state.sendErrors++;
        }
      }
    }, 5);
    this.traffic = state;
  }

  /** Stops sending, lets the last messages land, then asks every addressed object what it processed. */
  private async trafficStop(): Promise<TrafficReport> {
    const t = this.traffic!;
    clearInterval(t.timer);
    await new Promise((r) => setTimeout(r, 1000));
    const refs = trafficRefs(this.config.sizes);
    const seen = new Map<number, number[]>();
    let reportErrors = 0;
    const addressed = [...t.expected.keys()];
    await pool(addressed.length, 200, async (j) => {
      const k = addressed[j]!;
      try {
        seen.set(k, (await this.host!.request(refs[k]!, { op: 'report' } satisfies DemoMessage, { timeoutMs: 30_000 })) as number[]);
      } catch {
        reportErrors++;
      }
    });
    const result = compareSeen(t.expected, seen);
    let processed = 0;
    for (const list of seen.values()) processed += list.length;
    return { sent: t.sent, processed, lost: result.lost, duplicated: result.duplicated, reordered: result.reordered, sendErrors: t.sendErrors, reportErrors, samples: result.samples };
  }

  // ── relocation (source) ───────────────────────────────────────────────────────────────────

  private onUnit(e: UnitEvent): void {
    if (e.side === 'source') {
      if (e.point === 'S0') this.s0.set(e.unit, e.at);
      else if (e.point === 'S1') {
        const s0 = this.s0.get(e.unit);
        if (s0 !== undefined) this.s0s1.push(e.at - s0);
        this.s0.delete(e.unit);
        this.moved[e.kind] = (this.moved[e.kind] ?? 0) + 1;
      }
    } else if (e.point === 'S2') this.s2.set(e.unit, e.at);
    else if (e.point === 'S3') {
      const s2 = this.s2.get(e.unit);
      if (s2 !== undefined) this.s2s3.push(e.at - s2);
      this.s2.delete(e.unit);
    }
  }

  private async relocate(targetApplicationVersion: number): Promise<{ outcome: number; reason: number; ms: number }> {
    this.relocateStartedAt = performance.now();
    const result = await this.host!.relocate({ mode: RelocationMode.RollingUpdate, targetApplicationVersion, deadlineMs: 300_000 });
    return { outcome: result.outcome, reason: result.reason, ms: performance.now() - this.relocateStartedAt };
  }

  private progress(): Progress {
    const d = this.host!.diagnostics({ limit: 0 });
    const inv = d.lastInventory;
    return {
      state: d.state,
      ...(inv ? { total: { actor: inv.actors, spotWide: inv.spotWideAggregates, perActorShell: inv.perActorShells, instance: inv.instanceSpots } } : {}),
      moved: { ...this.moved },
    };
  }

  /** ms from the Relocate call until the host reports SafeToShutdown (§14: the follow windows ended). */
  private async waitSafeToShutdown(): Promise<number> {
    const host = this.host!;
    if (!host.status.safeToShutdown) {
      const stop = new AbortController();
      const bound = setTimeout(() => stop.abort(), 120_000);
      try {
        for await (const s of host.observe({ signal: stop.signal })) if (s.safeToShutdown || s.state === FrameworkRuntimeState.Stopped) break;
      } catch {
        // bounded wait ended
      } finally {
        clearTimeout(bound);
      }
    }
    if (!host.status.safeToShutdown) throw new Error('SafeToShutdown was not reported within 120 s');
    return performance.now() - this.relocateStartedAt;
  }

  private async shutdown(): Promise<{ result: TerminationResult; ms: number }> {
    const t0 = performance.now();
    const result = await this.host!.shutdown({ deadlineMs: 30_000 });
    return { result, ms: performance.now() - t0 };
  }

  private stats(): NodeStats {
    const summary = (xs: number[]) => {
      const s = sortNum([...xs]);
      return { count: s.length, p50: pct(s, 50), p95: pct(s, 95), p99: pct(s, 99), max: s[s.length - 1] ?? NaN };
    };
    const inventory = this.host?.diagnostics({ limit: 0 }).lastInventory;
    return { s0s1: summary(this.s0s1), s2s3: summary(this.s2s3), timerFires: Object.fromEntries(timerFires), log: { ...this.logged }, ...(inventory ? { inventory } : {}) };
  }

  private async stop(): Promise<void> {
    if (this.traffic) clearInterval(this.traffic.timer);
    if (this.host && this.host.status.state !== FrameworkRuntimeState.Stopped) await this.host.shutdown({ deadlineMs: 10_000 });
    await this.feed?.close();
    if (!this.sharedStores) await this.stores?.close();
  }
}
