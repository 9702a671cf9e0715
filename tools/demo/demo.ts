/**
 * `npm run demo`: a RollingUpdate of a loaded host, end to end, with a summary table.
 *
 * Three hosts — source (v1), spare (v1), target (v2) — on the embedded default (memory stores, one process), or on
 * Redis (`--redis URL`), or one process per host over ws (`--processes`, needs `--redis`). The source gets the
 * workload (defaults: 10,000 Entry Actors with timers, 20 SpotWide spots × 100 members, 10 PerActor spots × 50,
 * 500 Instance Spots); the spare sends traffic to random objects during the move; the source is relocated with
 * Relocate(RollingUpdate, target version 2) under a progress bar, waits for SafeToShutdown and shuts down.
 * `--inspect` serves the live inspector page (zlink/inspect) for all three hosts and prints its URL.
 *
 * Exit code: 0 when nothing was lost, duplicated or reordered, the move ended Relocated and every Shutdown ended
 * Stopped/None; 1 otherwise; 2 for bad flags.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import Redis from 'ioredis';
import { memoryStores, nameOf, redisStores, RelocationOutcome, RelocationReason, TerminationOutcome, TerminationReason, type Stores, type TerminationResult } from '../../runtime';
import { createInspector, type Inspector } from '../../inspect';
import { deleteKeys } from '../../stores/redis/delete-keys';
import { forkHost } from '../child-host';
import { DemoNode, type DemoNodeConfig, type NodeStats, type Progress, type Role, type TrafficReport } from './demo-node';
import { expectedUnits, type Sizes } from './demo-workload';

const USAGE = `usage: npm run demo -- [options]
  --actors <n>          Entry Actors with a periodic timer (default 10000)
  --rooms <n>           SpotWide User Spots (default 20)
  --room-members <n>    member Actors per SpotWide spot (default 100)
  --lobbies <n>         PerActor User Spots (default 10)
  --lobby-members <n>   Actors joined to each PerActor spot (default 50)
  --shards <n>          Instance Spots (default 500)
  --rate <msg/s>        traffic from the spare host during the move (default 2000)
  --timer-ms <ms>       period of each Entry Actor's timer (default 5000)
  --follow-ms <ms>      Message Follow duration; SafeToShutdown comes after it (default 5000)
  --redis <url>         Redis stores (e.g. redis://127.0.0.1:6379) instead of memory stores
  --processes           one process per host over ws (needs --redis)
  --inspect             serve the live inspector page and print its URL
  --inspect-port <n>    port of the inspector page (default 7070; 0 = any free port)
  -h, --help`;

export interface Flags {
  sizes: Sizes;
  rate: number;
  timerMs: number;
  followMs: number;
  redis?: string;
  processes: boolean;
  inspect: boolean;
  inspectPort: number;
}

/** The flags of `npm run demo`, strict: an unknown flag or a bad value throws an Error that names it. */
export function parseDemoFlags(args: string[]): Flags | 'help' {
  const { values } = parseArgs({
    args,
    strict: true,
    allowPositionals: false,
    options: {
      actors: { type: 'string', default: '10000' },
      rooms: { type: 'string', default: '20' },
      'room-members': { type: 'string', default: '100' },
      lobbies: { type: 'string', default: '10' },
      'lobby-members': { type: 'string', default: '50' },
      shards: { type: 'string', default: '500' },
      rate: { type: 'string', default: '2000' },
      'timer-ms': { type: 'string', default: '5000' },
      'follow-ms': { type: 'string', default: '5000' },
      redis: { type: 'string' },
      processes: { type: 'boolean', default: false },
      inspect: { type: 'boolean', default: false },
      'inspect-port': { type: 'string', default: '7070' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return 'help';
  const int = (name: keyof typeof values, min: number, max = 10_000_000): number => {
    const raw = values[name] as string;
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) throw new Error(`--${name} must be an integer from ${min} to ${max}; got '${raw}'`);
    return n;
  };
  if (values.processes && !values.redis) throw new Error('--processes needs --redis <url>: memory stores live inside one process, separate host processes share Redis');
  if (values.redis !== undefined && !/^rediss?:\/\//.test(values.redis)) throw new Error(`--redis must be a redis:// or rediss:// URL; got '${values.redis}'`);
  const sizes: Sizes = {
    actors: int('actors', 1),
    rooms: int('rooms', 0),
    roomMembers: int('room-members', 0, 100_000),
    lobbies: int('lobbies', 0),
    lobbyMembers: int('lobby-members', 0, 100_000),
    shards: int('shards', 0),
  };
  return {
    sizes,
    rate: int('rate', 0, 1_000_000),
    timerMs: int('timer-ms', 10, 3_600_000),
    followMs: int('follow-ms', 10, 600_000),
    ...(values.redis ? { redis: values.redis } : {}),
    processes: values.processes,
    inspect: values.inspect,
    inspectPort: int('inspect-port', 0, 65535),
  };
}

// ── hosts: DemoNode objects in this process, or one child process each ─────────────────────────────────────

interface Peer {
  call<T>(cmd: string, args?: Record<string, unknown>): Promise<T>;
  readonly child?: ChildProcess;
}

function childPeer(config: DemoNodeConfig): Peer {
  return forkHost(path.join(__dirname, 'demo-host.js'), config, config.role);
}

function localPeer(node: DemoNode): Peer {
  return { call: <T>(cmd: string, args: Record<string, unknown> = {}) => node.handle(cmd, args) as Promise<T> };
}

// ── output ─────────────────────────────────────────────────────────────────────────────────────────────

const KINDS = ['actor', 'spotWide', 'perActorShell', 'instance'] as const;
const fmt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : String(n));
const ms = (n: number) => `${fmt(n)} ms`;

function log(message: string): void {
  console.error(`[demo ${new Date().toISOString().slice(11, 23)}] ${message}`);
}

/** One line, redrawn in place on a terminal; on a pipe, a line each time another 10% moved. */
class ProgressBar {
  private lastDecile = -1;
  private readonly tty = process.stderr.isTTY === true;
  constructor(private readonly expected: Record<string, number>) {}

  draw(p: Progress, elapsedMs: number, final = false): void {
    const total = p.total ?? this.expected;
    const all = KINDS.reduce((n, k) => n + (total[k] ?? 0), 0);
    const moved = KINDS.reduce((n, k) => n + (p.moved[k] ?? 0), 0);
    const share = all === 0 ? 1 : moved / all;
    const width = 30;
    const bar = '█'.repeat(Math.round(share * width)).padEnd(width, '░');
    const kinds = KINDS.filter((k) => (total[k] ?? 0) > 0)
      .map((k) => `${k} ${fmt(p.moved[k] ?? 0)}/${fmt(total[k] ?? 0)}`)
      .join(' · ');
    const line = `[${bar}] ${fmt(moved)}/${fmt(all)} units (${(share * 100).toFixed(0)}%)  ${kinds}  ${(elapsedMs / 1000).toFixed(1)} s  ${p.state}`;
    if (this.tty) {
      process.stderr.write(`\r\x1b[2K${line}${final ? '\n' : ''}`);
      return;
    }
    const decile = Math.floor(share * 10);
    if (decile !== this.lastDecile || final) {
      this.lastDecile = decile;
      process.stderr.write(`${line}\n`);
    }
  }
}

async function pressEnter(prompt: string): Promise<void> {
  if (!process.stdin.isTTY) return;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  await new Promise<void>((resolve) => rl.question(prompt, () => resolve()));
  rl.close();
}

// ── the run ────────────────────────────────────────────────────────────────────────────────────────────

/** One demo run; resolves with the exit code (0: nothing lost, duplicated or reordered; Relocated; every Shutdown Stopped/None). */
export async function runDemo(flags: Flags): Promise<number> {
  const { sizes } = flags;
  const prefix = `zlink:demo:${randomBytes(4).toString('hex')}:`;
  const stack = flags.processes ? `Redis + ws, one process per host` : flags.redis ? 'Redis stores, one process' : 'memory stores, one process (embedded default)';
  const inspector: Inspector | undefined = flags.inspect ? await createInspector({ port: flags.inspectPort }) : undefined;
  const shared: Stores | undefined = flags.processes ? undefined : flags.redis ? redisStores({ url: flags.redis, keyPrefix: prefix }) : memoryStores();
  const base = {
    sizes,
    ws: flags.processes,
    followMs: flags.followMs,
    timerMs: flags.timerMs,
    ...(flags.redis ? { redis: { url: flags.redis, prefix } } : {}),
    ...(flags.processes && inspector ? { inspectUrl: inspector.url } : {}),
  };
  const peer = (role: Role, applicationVersion: number): Peer => {
    const config: DemoNodeConfig = { ...base, role, applicationVersion };
    return flags.processes ? childPeer(config) : localPeer(new DemoNode(config, shared, inspector));
  };
  const source = peer('source', 1);
  const spare = peer('spare', 1);
  const target = peer('target', 2);
  const peers = [source, spare, target];
  let code = 1;
  try {
    if (inspector) log(`inspector: ${inspector.url}  (live view of the three hosts; nothing leaves this machine)`);
    await Promise.all(peers.map((p) => p.call('start')));
    log(`hosts up on ${stack}: source v1, spare v1, target v2`);
    const created = await source.call<{ ms: number; objects: number; shardsHere: number }>('create');
    log(`source holds ${fmt(created.objects)} objects (created in ${ms(created.ms)}); ${fmt(created.shardsHere)}/${fmt(sizes.shards)} Instance Spots placed on the source`);
    await spare.call('reach', { nodeId: 'source' });
    if (inspector) await pressEnter(`open ${inspector.url} and press Enter to start the RollingUpdate… `);

    await spare.call('trafficStart', { rate: flags.rate });
    await new Promise((r) => setTimeout(r, 500));
    log(`RollingUpdate source v1 → target v2 (traffic ${fmt(flags.rate)} msg/s from spare)`);
    const bar = new ProgressBar(expectedUnits(sizes));
    const t0 = performance.now();
    let done = false;
    const relocation = source.call<{ outcome: number; reason: number; ms: number }>('relocate', { targetApplicationVersion: 2 }).finally(() => (done = true));
    while (!done) {
      await new Promise((r) => setTimeout(r, 100));
      if (!done) bar.draw(await source.call<Progress>('progress'), performance.now() - t0);
    }
    const moved = await relocation;
    bar.draw(await source.call<Progress>('progress'), moved.ms, true);
    const result = `${nameOf(RelocationOutcome, moved.outcome)}/${nameOf(RelocationReason, moved.reason)}`;
    log(`Relocate ended ${result} after ${ms(moved.ms)}`);
    await new Promise((r) => setTimeout(r, 300));
    const traffic = await spare.call<TrafficReport>('trafficStop');
    log(`traffic: ${fmt(traffic.sent)} sent, ${fmt(traffic.processed)} processed`);

    const safeMs = await source.call<number>('waitSafeToShutdown');
    log(`source reports SafeToShutdown ${ms(safeMs)} after the Relocate call`);
    const [sourceStats, targetStats] = await Promise.all([source.call<NodeStats>('stats'), target.call<NodeStats>('stats')]);
    const down = await source.call<{ result: TerminationResult; ms: number }>('shutdown');
    log(`source Shutdown: ${termination(down.result)} in ${ms(down.ms)}`);
    const others = await Promise.all([spare.call<{ result: TerminationResult; ms: number }>('shutdown'), target.call<{ result: TerminationResult; ms: number }>('shutdown')]);

    const stopped = (r: TerminationResult) => r.outcome === TerminationOutcome.Stopped && r.reason === TerminationReason.None;
    const fires = (s: NodeStats, node: string) => s.timerFires[node] ?? 0;
    const inv = sourceStats.inventory;
    const units: Record<string, number> = inv
      ? { actor: inv.actors, spotWide: inv.spotWideAggregates, perActorShell: inv.perActorShells, instance: inv.instanceSpots }
      : expectedUnits(sizes);
    const rows: [string, string][] = [
      ['stack', stack],
      ['units by kind', `${KINDS.map((k) => `${k} ${fmt(units[k] ?? 0)}`).join(' · ')}  (total ${fmt(KINDS.reduce((n, k) => n + (units[k] ?? 0), 0))}; ${fmt(inv?.objects ?? created.objects)} objects)`],
      ['Relocate (RollingUpdate v1 → v2)', `${result}, total ${ms(moved.ms)}`],
      ['S0→S1 p50 / p95 / p99 / max', `${ms(sourceStats.s0s1.p50)} / ${ms(sourceStats.s0s1.p95)} / ${ms(sourceStats.s0s1.p99)} / ${ms(sourceStats.s0s1.max)}  (${fmt(sourceStats.s0s1.count)} units, source clock)`],
      ['target resume S2→S3 p99', `${ms(targetStats.s2s3.p99)}  (max ${ms(targetStats.s2s3.max)}, ${fmt(targetStats.s2s3.count)} units, target clock)`],
      ['messages sent / processed', `${fmt(traffic.sent)} / ${fmt(traffic.processed)}  (send errors ${traffic.sendErrors}, report errors ${traffic.reportErrors})`],
      ['messages lost / duplicated / reordered', `${traffic.lost} / ${traffic.duplicated} / ${traffic.reordered}`],
      ['timer turns on source / target', `${fmt(fires(sourceStats, 'source'))} / ${fmt(fires(targetStats, 'target'))}  (period ${ms(flags.timerMs)})`],
      ['time to SafeToShutdown', `${ms(safeMs)} after the Relocate call (Message Follow ${ms(flags.followMs)})`],
      ['Shutdown source', `${termination(down.result)} in ${ms(down.ms)}`],
      ['Shutdown spare / target', `${termination(others[0].result)} / ${termination(others[1].result)}`],
      ['runtime warnings + errors (source, target)', `${sourceStats.log.warn}+${sourceStats.log.error}, ${targetStats.log.warn}+${targetStats.log.error}`],
    ];
    const w = Math.max(...rows.map(([k]) => k.length));
    console.log(`\nzlink demo — RollingUpdate of a loaded host\n${'-'.repeat(w)}-+-${'-'.repeat(60)}`);
    for (const [k, v] of rows) console.log(`${k.padEnd(w)} | ${v}`);
    console.log();
    if (traffic.samples.length) console.log('first anomalies (sent vs seen):', JSON.stringify(traffic.samples).slice(0, 2000));

    const clean = traffic.lost === 0 && traffic.duplicated === 0 && traffic.reordered === 0 && traffic.sendErrors === 0 && traffic.reportErrors === 0;
    const ok = clean && moved.outcome === RelocationOutcome.Relocated && stopped(down.result) && others.every((o) => stopped(o.result));
    if (!ok) console.log('demo: FAILED — see the table (lost, duplicated or reordered messages, a Blocked move or a forced Shutdown)');
    if (inspector) await pressEnter(`the inspector (${inspector.url}) shows the final states; press Enter to exit… `);
    code = ok ? 0 : 1;
  } finally {
    await Promise.allSettled(peers.map((p) => p.call('stop')));
    for (const p of peers) p.child?.kill();
    await shared?.close();
    await inspector?.close();
    if (flags.redis) {
      const redis = new Redis(flags.redis);
      await deleteKeys(redis, prefix).finally(() => redis.disconnect());
    }
  }
  return code;
}

function termination(r: TerminationResult): string {
  return `${nameOf(TerminationOutcome, r.outcome)}/${nameOf(TerminationReason, r.reason)}`;
}

if (require.main === module) {
  let flags: Flags | 'help';
  try {
    flags = parseDemoFlags(process.argv.slice(2));
  } catch (error) {
    console.error(`demo: ${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    process.exit(2);
  }
  if (flags === 'help') {
    console.log(USAGE);
    process.exit(0);
  }
  runDemo(flags).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error('demo failed:', error);
      process.exit(1);
    },
  );
}
