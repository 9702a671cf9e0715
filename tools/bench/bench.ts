/**
 * `npm run bench [-- --n 10000 --stack redis|memory]`: one run of the host-relocation benchmark ([6/10] deliverable 5).
 *
 * Workload: N Entry Actors × 1 KiB state on a source host, one target host, and a third (traffic) host sending
 * one-way messages with sequence numbers to random Actors at --rate msg/s (default 1,000) during the move.
 * Stacks: `redis` (default; Redis stores + ws, source and target each in its own child process, the traffic host in
 * this process) and `memory` (memory stores + in-process transport, every host in this process).
 *
 * Measures, in the same run and between the same processes:
 *  (a) floor = one batched CAS pass over N owner records (casMany, 128 per script, all calls in flight; target
 *      process, its clock) + a raw ws transfer of N × 1 KiB from the source process to the target process (the
 *      `ws` package directly; source clock from the first send to the target's 'done');
 *  (a′) the same floor again after the move, once the source's follow window ended (SafeToShutdown), without the
 *      stores reference pass: a diagnostic of whether the machine changed during the run, printed and written apart
 *      (details.floorAfterMove); zlinkOverFloor is the floor before the move;
 *  (b) zlink = Relocate until Relocated and until every owner record names the target: the later of the result and
 *      the target's last owner CAS applied (its S2, same machine wall clock), counted only when reading every record
 *      afterwards finds it on the target — the read itself (~13 µs per record, ~1.3 s at 100k) is printed apart, it
 *      is the measurement's cost, not the move's (source clock for both); S0→S1 per
 *      unit (source clock), S2→S3 per unit (target clock), peak RSS of source and target in the move (to Relocated
 *      on the source, to its last owner CAS on the target, like the CPU of the move; the peak with the record reads
 *      after it is printed apart), the CPU in the move of each host, the Redis server, this process (the traffic
 *      host) and the whole machine (busy share of all its CPUs: near 100% means the move waits for CPU), messages lost /
 *      duplicated / reordered (each Actor reports the sequence numbers it saw), cutover-wait fallbacks, and the
 *      target's CAS (S2) relative to the source's S1 per unit — a cross-process difference the spec forbids for
 *      metrics (§8); here both processes read the same machine's wall clock (Date.now()), so a benchmark may
 *      correlate them, with ~1 ms resolution;
 *  (c) naive = what users run today with ioredis: per batch of 1,000, SET each state + a deactivated flag, stop
 *      accepting, flip the owner key; the target GETs the states and activates; callers that hit an inactive Actor
 *      get a nack and retry after 10 ms with a fresh owner lookup. Total time on this process's clock; per-Actor
 *      unavailability = target activation − source snapshot (two processes, same machine wall clock).
 * Prints one table and writes bench/results.json (see --out).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Redis from 'ioredis';
import WebSocket from 'ws';
import { createRuntime, memoryStores, nameOf, redisStores, RelocationOutcome, RelocationReason, type FrameworkRuntime, type Stores } from '../../runtime';
import { BenchNode, type NodeConfig } from './bench-node';
import { actorId, compareSeen, cpuAt, cpuMs, installMetrics, pct, peakUntil, pool, redisCpuMs, s0s1Deciles, sleep, sortNum, startRamp, STATE_BYTES, tenths } from './bench-common';
import { forkHost, type ChildPeer } from '../child-host';
import { deleteKeys } from '../../stores/redis/delete-keys';

const USAGE = `usage: npm run bench -- [--n <actors>] [--stack redis|memory] [--rate <msg/s>] [--url <redis url>] [--out <file>]
  --n      number of Entry Actors (1 KiB state each), default 10000; 100000 is the documented large run
  --stack  redis (default: Redis stores + ws, source and target in child processes) | memory (one process)
  --rate   traffic from the third host during the move, messages/s, default 1000
  --url    Redis for the redis stack, the floor CAS pass and the naive baseline (default $REDIS_URL or redis://127.0.0.1:6379)
  --out    results file, default bench/results.json`;

/**
 * `ZLINK_BENCH_CPU_PROF=<dir>`: each child host writes a V8 CPU profile there (open it in Chrome DevTools, or summarize it
 * with `node dist/tools/bench/profile-summary.js <file> --timeline`, then `--from <ms> --to <ms>`).
 */
function cpuProfileArgs(config: NodeConfig): string[] {
  const dir = process.env.ZLINK_BENCH_CPU_PROF;
  // `ZLINK_BENCH_NODE_ARGS="--trace-gc"` (space-separated): more node flags for the child hosts, for diagnosis.
  const extra = process.env.ZLINK_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  return [...extra, ...(dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=bench-${config.role}.cpuprofile`] : [])];
}

function parseFlags() {
  try {
    const { values } = parseArgs({
      strict: true,
      allowPositionals: false,
      options: {
        n: { type: 'string', default: '10000' },
        stack: { type: 'string', default: 'redis' },
        rate: { type: 'string', default: '1000' },
        url: { type: 'string', default: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
        out: { type: 'string', default: path.join('bench', 'results.json') },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
    if (values.help) {
      console.log(USAGE);
      process.exit(0);
    }
    const n = Number(values.n);
    if (!/^\d+$/.test(values.n) || !Number.isSafeInteger(n) || n < 1) throw new Error(`--n must be a positive integer; got '${values.n}'`);
    const rate = Number(values.rate);
    if (!Number.isFinite(rate) || rate < 0) throw new Error(`--rate must be a number >= 0; got '${values.rate}'`);
    if (values.stack !== 'redis' && values.stack !== 'memory') throw new Error(`--stack must be 'redis' or 'memory'; got '${values.stack}'`);
    return { n, rate, stack: values.stack as 'redis' | 'memory', url: values.url, out: values.out };
  } catch (error) {
    console.error(`bench: ${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    process.exit(2);
  }
}

const flags = parseFlags();
const { n, rate, stack, url } = flags;
const prefix = `zlink:bench:${randomBytes(4).toString('hex')}:`;
const NAIVE_BATCH = 1000;
const RETRY_MS = 10;

// ── hosts: a child process per host (redis) or BenchNode objects in this process (memory) ──────────────────

interface Peer {
  call<T>(cmd: string, args?: Record<string, unknown>): Promise<T>;
}

function childPeer(config: NodeConfig): ChildPeer {
  return forkHost(path.join(__dirname, 'bench-host.js'), config, config.role, ['--max-old-space-size=8192', ...cpuProfileArgs(config)]);
}

function localPeer(config: NodeConfig, stores: Stores, counter: (name: string) => Promise<number>): Peer {
  const node = new BenchNode(config, stores, counter);
  return { call: <T>(cmd: string, args: Record<string, unknown> = {}) => node.handle(cmd, args) as Promise<T> };
}

// ── traffic: one sender, sequence numbers, random Actors, paced to `rate` on average ───────────────────────

interface Traffic {
  readonly expected: Map<number, number[]>;
  sent(): number;
  stop(): void;
}

function startTraffic(send: (a: number, q: number) => void): Traffic {
  const expected = new Map<number, number[]>();
  const t0 = performance.now();
  let q = 0;
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - t0) * rate) / 1000);
    while (q < due) {
      const a = Math.floor(Math.random() * n);
      let list = expected.get(a);
      if (!list) expected.set(a, (list = []));
      list.push(q);
      send(a, q++);
    }
  }, 5);
  return { expected, sent: () => q, stop: () => clearInterval(timer) };
}

/** Main-thread GC pauses of one process during the move (perf_hooks 'gc' entries). */
interface GcPauses {
  minor: { count: number; ms: number; maxMs: number };
  major: { count: number; ms: number; maxMs: number };
}

interface UnitStats {
  cpuMs: number;
  /** (wall clock ms, CPU ms) pairs, flat, every 100 ms from `watch` to `stats` (bench-node.ts). */
  cpuSamples: number[];
  /** The system (kernel) part of the same samples. */
  cpuSystemSamples: number[];
  /** The main thread's part of the same samples (NaN off Linux). */
  cpuMainSamples: number[];
  loopDelayMs?: { p99: number; max: number };
  gcPauses?: GcPauses;
  rssBeforeMB: number;
  /** From `watch` to `stats`: the move, then the owner-record reads and the traffic reports. */
  rssPeakMB: number;
  /** (wall clock ms, RSS MiB) pairs, flat (bench-node.ts). */
  rssSamples: number[];
  s0s1: { count: number; p50: number; p99: number; max: number };
  /** Units between S0 and S1 at once (the seal window in use): mean over the move and most (source). */
  sealedAtOnce: { mean: number; max: number };
  s2s3: { count: number; p50: number; p99: number; max: number };
  s1: [string, number][];
  s2: [string, number][];
  /** Only with ZLINK_BENCH_S0S1_DECILES: source S0 stamps, target relay-ready stamps. */
  s0?: [string, number][];
  ready?: [string, number][];
  fellBack: number;
  submitFailed: number;
  discarded: number;
  cutoverTimeoutCounter: number;
  undeliverableCounter: number;
  runtimeLog: { warn: number; error: number };
  diagnostics: unknown;
}

const round = (x: number, d = 1): number => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : x);

async function main(): Promise<void> {
  // The hosts write their profiles at the end of the move: a missing folder must not fail the run there.
  for (const dir of [process.env.ZLINK_BENCH_CPU_PROF, process.env.ZLINK_BENCH_HEAP_PROF]) if (dir) mkdirSync(dir, { recursive: true });
  const reader = installMetrics(); // this process: the traffic host (and, in the memory stack, every host)
  const shared = stack === 'memory' ? memoryStores() : undefined;
  const base = { stack, url, prefix, n };
  const counter = (name: string) => reader.counter(name);
  const source = shared ? localPeer({ ...base, role: 'source' }, shared, counter) : childPeer({ ...base, role: 'source' });
  const target = shared ? localPeer({ ...base, role: 'target' }, shared, counter) : childPeer({ ...base, role: 'target' });
  let traffic: FrameworkRuntime | undefined;
  const trafficStores = shared ?? redisStores({ url, keyPrefix: prefix });
  const redis = new Redis(url);
  const sockets: WebSocket[] = [];
  const started: Peer[] = [];
  const loadStart = loadavg()[0]!;
  try {
    await redis.ping();
    // ── setup ──
    const [src, dst] = await Promise.all([source.call<{ nodeId: string }>('start'), target.call<{ nodeId: string }>('start')]);
    started.push(source, target);
    traffic = await createRuntime({
      nodeId: 'bench-traffic',
      applicationVersion: 1,
      stores: trafficStores,
      meshes: stack === 'redis' ? [{ name: 'main', listen: { host: '127.0.0.1', port: 0 } }] : [{ name: 'main' }],
      types: [], // hosts no BenchEntry, so never a relocation target (§5 order 3)
    });
    log(`hosts up (${stack}): ${src.nodeId}, ${dst.nodeId}, ${traffic.nodeId}; creating ${n} Actors`);
    const createMs = await source.call<number>('create');
    log(`created ${n} Actors in ${createMs.toFixed(0)} ms`);

    // ── (a) floor ──
    const { cas, wsTransferMs, floorMs } = await measureFloor(source, target, false);
    log(`floor: CAS pass ${cas.ms.toFixed(0)} ms + ws transfer ${wsTransferMs.toFixed(0)} ms`);

    // ── (b) zlink ──
    await sleep(1000); // a few discovery rounds: the source sees the target Ready on every mesh
    const rss = await Promise.all([source.call<{ rssMB: number }>('watch'), target.call<{ rssMB: number }>('watch')]);
    let sendErrors = 0;
    const zt = startTraffic((a, q) => {
      try {
        traffic!.send({ actor: actorId(a) }, { op: 't', q });
      } catch {
        sendErrors++;
      }
    });
    await sleep(300);
    log(`relocating ${n} Actors (traffic ${rate} msg/s)`);
    // The Redis server's CPU is part of the move's cost on a 2-core machine (it shares the cores with both hosts), and
    // so are this process (the traffic host) and whatever else runs: the machine's busy time says how full it was.
    const moveCpu = sampleMoveCpu(stack === 'redis' ? redis : undefined);
    const reloc = await source.call<{ outcome: number; reason: number; startedAt: number; relocatedMs: number; ownedMs: number; notOwned: number; selectedTarget?: string }>('relocate', {
      target: dst.nodeId,
    });
    log(`Relocate: outcome ${reloc.outcome} reason ${reloc.reason}, ${reloc.relocatedMs.toFixed(0)} ms; every owner record read on target at ${reloc.ownedMs.toFixed(0)} ms`);
    const moveCpuSamples = await moveCpu.stop();
    await sleep(500);
    zt.stop();
    await sleep(1000);
    const seen = new Map<number, number[]>();
    const actors = [...zt.expected.keys()];
    let reportErrors = 0;
    await pool(actors.length, 200, async (k) => {
      const a = actors[k]!;
      try {
        seen.set(a, (await traffic!.request({ actor: actorId(a) }, { op: 'report' }, { timeoutMs: 60_000 })) as number[]);
      } catch {
        reportErrors++;
      }
    });
    const zlinkDelivery = compareSeen(zt.expected, seen);
    const [ss, ts] = await Promise.all([source.call<UnitStats>('stats'), target.call<UnitStats>('stats')]);
    // ── (a′) the floor again once the source's follow window ended: did the machine change during the run? A
    // diagnostic only — zlinkOverFloor is the floor before the move, as the issue defines it.
    const settledMs = await source.call<number>('settled');
    const floorAfter = await measureFloor(source, target, true);
    log(`floor after the move: CAS pass ${floorAfter.cas.ms.toFixed(0)} ms + ws transfer ${floorAfter.wsTransferMs.toFixed(0)} ms`);
    const trafficUndeliverable = shared ? NaN : await reader.counter('zlink.runtime.message.undeliverable');
    const s1 = new Map(ss.s1);
    const casAfterS1 = sortNum(ts.s2.filter(([u]) => s1.has(u)).map(([u, at]) => at - s1.get(u)!));
    const matchedUnits = casAfterS1.length;
    if (ss.s0 && ts.ready) {
      console.log(s0s1Deciles(ss.s0, new Map(ts.ready), s1, new Map(ts.s2)));
      console.log(startRamp(reloc.startedAt, new Map(ss.s0), s1));
    }

    // ── (c) naive ──
    log(`naive baseline: ${n} Actors, batches of ${NAIVE_BATCH}`);
    const [srcPort, dstPort] = await Promise.all([source.call<number>('naiveSetup'), target.call<number>('naiveSetup')]);
    const owner = new Uint8Array(n); // the caller's owner cache: 0 = source, 1 = target
    const links = await Promise.all(
      [srcPort, dstPort].map(
        (p) =>
          new Promise<WebSocket>((resolve, reject) => {
            const ws = new WebSocket(`ws://127.0.0.1:${p}`, { perMessageDeflate: false });
            sockets.push(ws);
            ws.once('open', () => resolve(ws));
            ws.once('error', reject);
          }),
      ),
    );
    let retries = 0;
    let retrying = 0;
    let lastNack = 0;
    const sendNaive = (a: number, q: number) => links[owner[a]!]!.send(JSON.stringify({ a, q }));
    for (const ws of links)
      ws.on('message', (data: Buffer) => {
        const { a, q } = JSON.parse(data.toString()) as { a: number; q: number };
        retries++;
        retrying++;
        lastNack = performance.now();
        setTimeout(() => {
          redis.get(`${prefix}naive:owner:${a}`).then(
            (o) => {
              owner[a] = o === 'target' ? 1 : 0;
              retrying--;
              sendNaive(a, q);
            },
            () => {
              retrying--;
              sendNaive(a, q);
            },
          );
        }, RETRY_MS);
      });
    const nt = startTraffic(sendNaive);
    await sleep(300);
    const unavailable: number[] = [];
    const n0 = performance.now();
    const activations: Promise<void>[] = [];
    for (let from = 0; from < n; from += NAIVE_BATCH) {
      const to = Math.min(n, from + NAIVE_BATCH);
      const snapAt = await source.call<number>('naiveDeactivate', { from, to });
      activations.push(
        target.call<number>('naiveActivate', { from, to }).then((at) => {
          for (let i = from; i < to; i++) unavailable.push(at - snapAt);
        }),
      );
    }
    await Promise.all(activations);
    const naiveMs = performance.now() - n0;
    log(`naive move done in ${naiveMs.toFixed(0)} ms`);
    await sleep(500);
    nt.stop();
    while (retrying > 0 || performance.now() - lastNack < 500) await sleep(50);
    await sleep(200);
    const naiveSeen = new Map<number, number[]>([
      ...(await source.call<[number, number[]][]>('naiveReport')),
      ...(await target.call<[number, number[]][]>('naiveReport')),
    ]);
    const naiveDelivery = compareSeen(nt.expected, naiveSeen);
    sortNum(unavailable);

    // ── results ──
    // Only a Relocated run whose owner records all name the target has a zlink time (NaN → null in the JSON).
    // The last owner CAS applied (target S2, wall clock) since Relocate started: when the last record named the target.
    let lastCas = Number.NEGATIVE_INFINITY;
    for (const [, at] of ts.s2) lastCas = Math.max(lastCas, at);
    const lastCasMs = lastCas - reloc.startedAt;
    const verified = reloc.outcome === RelocationOutcome.Relocated && reloc.notOwned === 0 && ts.s2.length > 0;
    const zlinkMs = verified ? Math.max(reloc.relocatedMs, lastCasMs) : NaN;
    // CPU of the move alone: Relocate → Relocated on the source, → its last owner CAS on the target (one process on
    // the memory stack: to the later of the two). The totals above also hold the owner-record reads and reports.
    const relocatedAt = reloc.startedAt + reloc.relocatedMs;
    const cpuIn = (samples: readonly number[], end: number) => (Number.isFinite(end) ? cpuAt(samples, end) - cpuAt(samples, reloc.startedAt) : NaN);
    const sourceEnd = shared ? Math.max(relocatedAt, lastCas) : relocatedAt;
    const sourceMoveCpuMs = cpuIn(ss.cpuSamples, sourceEnd);
    const targetMoveCpuMs = shared ? sourceMoveCpuMs : cpuIn(ts.cpuSamples, lastCas);
    // The kernel's part of that CPU (sockets: ws between the hosts, the Redis connection), over the same spans.
    const sourceMoveSystemCpuMs = cpuIn(ss.cpuSystemSamples, sourceEnd);
    const targetMoveSystemCpuMs = shared ? sourceMoveSystemCpuMs : cpuIn(ts.cpuSystemSamples, lastCas);
    // The main thread's part; the rest is V8's GC and compiler threads (and libuv's pool), over the same spans.
    const sourceMoveMainCpuMs = cpuIn(ss.cpuMainSamples, sourceEnd);
    const targetMoveMainCpuMs = shared ? sourceMoveMainCpuMs : cpuIn(ts.cpuMainSamples, lastCas);
    // The Redis server's CPU (user + system, whole server), this process's and the machine's busy time, from Relocate
    // until the last owner CAS.
    const redisMoveCpuMs = cpuIn(moveCpuSamples.redis, reloc.startedAt + zlinkMs);
    const trafficHostMoveCpuMs = cpuIn(moveCpuSamples.self, reloc.startedAt + zlinkMs);
    const machineBusyMoveMs = cpuIn(moveCpuSamples.machine, reloc.startedAt + zlinkMs);
    // Peak RSS of the move, over the same spans as its CPU: the owner-record reads after Relocated are the bench's
    // own check and allocate as much again (a 100k move's source heap went ~330 → ~400 MB during them, --trace-gc-nvp).
    const movePeak = (s: UnitStats, end: number) => (Number.isFinite(end) ? peakUntil(s.rssSamples, end) : s.rssPeakMB);
    const sourceMovePeakMB = movePeak(ss, sourceEnd);
    const targetMovePeakMB = shared ? sourceMovePeakMB : movePeak(ts, lastCas);
    const peakRssGrowthMB = Math.max(sourceMovePeakMB - rss[0]!.rssMB, targetMovePeakMB - rss[1]!.rssMB);
    const cutoverTimeouts = shared ? ts.cutoverTimeoutCounter : ss.cutoverTimeoutCounter + ts.cutoverTimeoutCounter;
    const results = {
      n,
      stack,
      floorMs: round(floorMs),
      zlinkMs: round(zlinkMs),
      zlinkOverFloor: round(zlinkMs / floorMs, 2),
      s0s1P99Ms: ss.s0s1.p99,
      usPerUnit: round((zlinkMs * 1000) / n),
      peakRssGrowthMB: round(peakRssGrowthMB),
      stateBytes: STATE_BYTES,
      naiveMs: round(naiveMs),
      naiveUnavailableP99Ms: pct(unavailable, 99),
      naiveLost: naiveDelivery.lost,
      lost: zlinkDelivery.lost,
      duplicated: zlinkDelivery.duplicated,
      reordered: zlinkDelivery.reordered,
      cutoverTimeouts,
      casAfterS1P99Ms: pct(casAfterS1, 99),
      details: {
        clocks:
          (stack === 'memory' ? 'one process holds every host, so every clock below is that process’s; ' : '') +
          'floor CAS: target host performance.now(); floor ws: source host performance.now(); zlink totals: source performance.now(); ' +
          'S0→S1: source Date.now() (runtime clock); S2→S3: target Date.now(); casAfterS1 = target S2 − source S1 per unit, ' +
          (stack === 'memory' ? 'one process’s wall clock' : 'two processes reading one machine’s wall clock') +
          ' (benchmark correlation, not a §8 metric); naive total: orchestrator performance.now(); ' +
          'naive unavailability = target activation Date.now() − source snapshot Date.now() (same machine).',
        machine: { cpus: cpus().length, loadAvg1mAtStart: round(loadStart, 2), loadAvg1mAtEnd: round(loadavg()[0]!, 2) },
        createMs: round(createMs),
        floor: {
          casPassMs: round(cas.ms),
          casPass: stack === 'redis' ? 'raw Lua EVALSHA, 128 records per call, one pipeline' : 'memory store casMany, 128 per call',
          wsTransferMs: round(wsTransferMs),
          storesCommitMs: round(cas.storesCommitMs),
        },
        floorAfterMove: {
          casPassMs: round(floorAfter.cas.ms),
          wsTransferMs: round(floorAfter.wsTransferMs),
          floorMs: round(floorAfter.floorMs),
          settledMs: round(settledMs),
        },
        zlink: {
          result: `${nameOf(RelocationOutcome, reloc.outcome)}/${nameOf(RelocationReason, reloc.reason)}`,
          selectedTarget: reloc.selectedTarget,
          relocatedMs: round(reloc.relocatedMs),
          ownersOnTargetMs: round(Math.max(reloc.relocatedMs, lastCasMs)),
          ownersReadOnTargetMs: round(reloc.ownedMs),
          ownersNotOnTarget: reloc.notOwned,
          s0s1: ss.s0s1,
          sealedAtOnce: { mean: round(ss.sealedAtOnce.mean), max: ss.sealedAtOnce.max },
          // Source clock: from Relocate to the last S1 of each tenth of the units (the first one includes the cold start).
          cutOverByTenthMs: tenths(reloc.startedAt, s1.values()).map((ms) => round(ms)),
          targetResumeS2S3: ts.s2s3,
          casAfterS1: { units: matchedUnits, p50: pct(casAfterS1, 50), p99: pct(casAfterS1, 99), max: casAfterS1[casAfterS1.length - 1] ?? NaN, min: casAfterS1[0] ?? NaN },
          fallbacksFromUnitEvents: ts.fellBack,
          cutoverSubmitFailed: ss.submitFailed,
          targetUnitsDiscarded: ts.discarded,
          runtimeLog: { source: ss.runtimeLog, target: ts.runtimeLog },
          cpuMs: {
            source: round(ss.cpuMs),
            target: round(ts.cpuMs),
            sourceMove: round(sourceMoveCpuMs),
            targetMove: round(targetMoveCpuMs),
            sourceMoveSystem: round(sourceMoveSystemCpuMs),
            targetMoveSystem: round(targetMoveSystemCpuMs),
            sourceMoveMainThread: round(sourceMoveMainCpuMs),
            targetMoveMainThread: round(targetMoveMainCpuMs),
            redisServerMove: round(redisMoveCpuMs),
            trafficHostMove: round(trafficHostMoveCpuMs),
            machineBusyMove: round(machineBusyMoveMs),
            oneProcess: stack === 'memory',
          },
          eventLoopDelayMs: { source: ss.loopDelayMs, target: ts.loopDelayMs },
          gcPausesMs: { source: ss.gcPauses, target: ts.gcPauses },
          rss: {
            sourceBeforeMB: round(rss[0]!.rssMB),
            sourcePeakMB: round(sourceMovePeakMB),
            targetBeforeMB: round(rss[1]!.rssMB),
            targetPeakMB: round(targetMovePeakMB),
            // with the owner-record reads and traffic reports after the move (the figure before this split)
            sourcePeakWithReadsMB: round(ss.rssPeakMB),
            targetPeakWithReadsMB: round(ts.rssPeakMB),
            oneProcess: stack === 'memory',
          },
          anomalies: zlinkDelivery.samples,
          traffic: { sent: zt.sent(), actorsAddressed: zt.expected.size, sendErrors, reportErrors, undeliverableCounter: shared ? ts.undeliverableCounter : trafficUndeliverable },
        },
        naive: {
          batch: NAIVE_BATCH,
          retryMs: RETRY_MS,
          unavailableP50Ms: pct(unavailable, 50),
          unavailableP99Ms: pct(unavailable, 99),
          unavailableMaxMs: unavailable[unavailable.length - 1] ?? NaN,
          sent: nt.sent(),
          retries,
          lost: naiveDelivery.lost,
          duplicated: naiveDelivery.duplicated,
          reordered: naiveDelivery.reordered,
        },
      },
    };
    printTable(results);
    mkdirSync(path.dirname(path.resolve(flags.out)), { recursive: true });
    writeFileSync(flags.out, JSON.stringify(results, null, 2) + '\n');
    console.log(`wrote ${flags.out}`);
    if (reloc.outcome !== 0) process.exitCode = 1;
  } finally {
    for (const ws of sockets) ws.terminate();
    await Promise.allSettled(started.map((p) => p.call('stop')));
    if (traffic) await traffic.shutdown({ deadlineMs: 15_000 });
    await trafficStores.close();
    await cleanup(redis);
    redis.disconnect();
  }
}

function share(part: number, whole: number): string {
  return Number.isFinite(part) && whole > 0 ? `${Math.round((100 * part) / whole)}%` : 'n/a';
}

interface MoveCpuSamples {
  /** The Redis server's CPU (INFO cpu: used_cpu_user + used_cpu_sys, whole server); empty without Redis. */
  readonly redis: number[];
  /** This process's CPU (user + system). */
  readonly self: number[];
  /** Busy time summed over every CPU of the machine (os.cpus(): user + nice + sys + irq). */
  readonly machine: number[];
}

/**
 * CPU around the move every 100 ms, each as (wall clock ms, CPU ms) pairs like the hosts' samples; `stop` takes a
 * last sample. A failed Redis read is skipped, not fatal: it is context.
 */
function sampleMoveCpu(redis: Redis | undefined): { stop(): Promise<MoveCpuSamples> } {
  const samples: MoveCpuSamples = { redis: [], self: [], machine: [] };
  const sample = async (): Promise<void> => {
    const now = Date.now();
    samples.self.push(now, cpuMs());
    let busy = 0;
    for (const { times } of cpus()) busy += times.user + times.nice + times.sys + times.irq;
    samples.machine.push(now, busy);
    if (!redis) return;
    try {
      const ms = await redisCpuMs(redis);
      if (Number.isFinite(ms)) samples.redis.push(Date.now(), ms);
    } catch {
      // context only
    }
  };
  let pending = sample();
  const timer = setInterval(() => {
    pending = pending.then(sample);
  }, 100);
  timer.unref(); // a Relocate call that throws must not leave the bench running
  return {
    async stop() {
      clearInterval(timer);
      await pending;
      await sample();
      return samples;
    },
  };
}

function log(message: string): void {
  console.error(`[bench ${new Date().toISOString().slice(11, 23)}] ${message}`);
}

/** The floor (a): the raw ws transfer source → target, then the CAS pass on the target (`rawOnly`: without the stores reference pass). */
async function measureFloor(source: Peer, target: Peer, rawOnly: boolean): Promise<{ cas: { ms: number; applied: number; storesCommitMs: number }; wsTransferMs: number; floorMs: number }> {
  const port = await target.call<number>('floorServe', { n });
  const wsTransferMs = await source.call<number>('floorSend', { port, n });
  const cas = await target.call<{ ms: number; applied: number; storesCommitMs: number }>('floorCas', { rawOnly });
  if (cas.applied !== n) throw new Error(`floor CAS pass applied ${cas.applied} of ${n}`);
  return { cas, wsTransferMs, floorMs: cas.ms + wsTransferMs };
}

function cleanup(redis: Redis): Promise<void> {
  return deleteKeys(redis, prefix);
}

type Results = {
  n: number;
  stack: string;
  floorMs: number;
  zlinkMs: number;
  zlinkOverFloor: number;
  usPerUnit: number;
  peakRssGrowthMB: number;
  stateBytes: number;
  naiveMs: number;
  lost: number;
  duplicated: number;
  reordered: number;
  cutoverTimeouts: number;
  details: {
    machine: { cpus: number; loadAvg1mAtStart: number; loadAvg1mAtEnd: number };
    floor: { casPassMs: number; wsTransferMs: number; storesCommitMs: number };
    floorAfterMove: { casPassMs: number; wsTransferMs: number; floorMs: number; settledMs: number };
    zlink: {
      result: string;
      ownersNotOnTarget: number;
      targetUnitsDiscarded: number;
      runtimeLog: { source: { warn: number; error: number }; target: { warn: number; error: number } };
      relocatedMs: number;
      ownersOnTargetMs: number;
      ownersReadOnTargetMs: number;
      s0s1: { p50: number; p99: number; max: number };
      sealedAtOnce?: { mean: number; max: number };
      cutOverByTenthMs?: number[];
      targetResumeS2S3: { p99: number };
      casAfterS1: { units: number; p50: number; p99: number; max: number };
      fallbacksFromUnitEvents: number;
      cpuMs: {
        source: number;
        target: number;
        sourceMove: number;
        targetMove: number;
        /** The kernel's part of sourceMove / targetMove. */
        sourceMoveSystem: number;
        targetMoveSystem: number;
        /** The main thread's part of sourceMove / targetMove (null in results.json off Linux). */
        sourceMoveMainThread: number;
        targetMoveMainThread: number;
        /** The Redis server's CPU over the move (null in results.json on the memory stack). */
        redisServerMove: number;
        /** This process's CPU over the move: the traffic host (on the memory stack, every host). */
        trafficHostMove: number;
        /** Busy time of all the machine's CPUs over the move (every process and the kernel; os.cpus()). */
        machineBusyMove: number;
        oneProcess: boolean;
      };
      eventLoopDelayMs: { source?: { p99: number; max: number }; target?: { p99: number; max: number } };
      gcPausesMs: { source?: GcPauses; target?: GcPauses };
      rss: { sourceBeforeMB: number; sourcePeakMB: number; targetBeforeMB: number; targetPeakMB: number; sourcePeakWithReadsMB: number; targetPeakWithReadsMB: number; oneProcess: boolean };
      traffic: { sent: number; sendErrors: number; reportErrors: number };
    };
    naive: { unavailableP50Ms: number; unavailableP99Ms: number; sent: number; retries: number; lost: number; duplicated: number; reordered: number };
  };
};

function printTable(r: Results): void {
  const z = r.details.zlink;
  const nv = r.details.naive;
  const rows: [string, string, string][] = [
    ['floor', r.stack === 'redis' ? 'CAS pass (raw Lua, 128 records/script, pipelined)' : 'CAS pass (memory store casMany, 128/call)', `${r.details.floor.casPassMs} ms  [target clock]`],
    ...(r.stack === 'redis'
      ? [['(ref)', 'same pass via stores commitOwners (guarded, op record per call)', `${r.details.floor.storesCommitMs} ms  [target clock; not in floorMs]`] as [string, string, string]]
      : []),
    ['floor', `raw ws transfer ${r.n} × 1 KiB${z.rss.oneProcess ? ' (loopback, one process)' : ''}`, `${r.details.floor.wsTransferMs} ms  [source clock]`],
    ['floor', 'floorMs', `${r.floorMs} ms`],
    [
      '(diag)',
      'floorMs again after the move (source settled first; not in zlinkOverFloor)',
      `${r.details.floorAfterMove.floorMs} ms = ${r.details.floorAfterMove.casPassMs} + ${r.details.floorAfterMove.wsTransferMs}  (${round(r.details.floorAfterMove.floorMs / r.floorMs, 2)}× the floor before; waited ${r.details.floorAfterMove.settledMs} ms)`,
    ],
    ['zlink', 'Relocate → result', `${z.result} after ${z.relocatedMs} ms  [source clock]`],
    [
      'zlink',
      'Relocate → every owner record on target',
      z.ownersNotOnTarget === 0
        ? `${z.ownersOnTargetMs} ms  (last owner CAS applied; reading all ${r.n} records back found them there at ${z.ownersReadOnTargetMs} ms)  [source clock]`
        : `never: ${z.ownersNotOnTarget} records do not name the target`,
    ],
    ['zlink', 'zlinkMs / floor', `${r.zlinkMs} ms  (${r.zlinkOverFloor}× floor, ${r.usPerUnit} µs/unit)`],
    ['zlink', 'S0→S1 p50 / p99 / max', `${z.s0s1.p50} / ${z.s0s1.p99} / ${z.s0s1.max} ms  [source clock]`],
    ['zlink', 'units sealed at once (S0 to S1) mean / most', z.sealedAtOnce ? `${z.sealedAtOnce.mean} / ${z.sealedAtOnce.max}  (the seal window in use; at most 128 unless the S0→S1 tail has room)` : 'not recorded'],
    [
      'zlink',
      'ms each tenth of the units took to reach S1',
      z.cutOverByTenthMs?.length ? `${z.cutOverByTenthMs.join(' / ')}  (the first from Relocate: it includes the hosts' cold start)  [source clock]` : 'not recorded',
    ],
    ['zlink', 'target resume S2→S3 p99', `${z.targetResumeS2S3.p99} ms  [target clock]`],
    ['zlink', 'target CAS (S2) − source S1 p50 / p99 / max', `${z.casAfterS1.p50} / ${z.casAfterS1.p99} / ${z.casAfterS1.max} ms  (${z.casAfterS1.units} units; ${z.rss.oneProcess ? 'one process' : '2 processes, same machine'} wall clock — correlation, not a §8 metric)`],
    [
      'zlink',
      'target units discarded / runtime warnings+errors',
      `${z.targetUnitsDiscarded} / source ${z.runtimeLog.source.warn}+${z.runtimeLog.source.error}, target ${z.runtimeLog.target.warn}+${z.runtimeLog.target.error}`,
    ],
    ['zlink', 'cutover-wait fallbacks', `${r.cutoverTimeouts} (OTel zlink.relocation.cutover_timeout); ${z.fallbacksFromUnitEvents} S2 events with fellBack`],
    [
      'zlink',
      z.cpuMs.oneProcess ? 'CPU of the process (move + owner polls)' : 'CPU source / target (move + owner polls)',
      z.cpuMs.oneProcess
        ? `${z.cpuMs.source} ms (${round((z.cpuMs.source * 1000) / r.n)} µs/unit)`
        : `${z.cpuMs.source} / ${z.cpuMs.target} ms  (${round((z.cpuMs.source * 1000) / r.n)} / ${round((z.cpuMs.target * 1000) / r.n)} µs/unit; user + system, robust to load)`,
    ],
    [
      'zlink',
      z.cpuMs.oneProcess ? 'CPU of the process in the move (to the last owner CAS)' : 'CPU source / target in the move (→ Relocated / → last CAS)',
      z.cpuMs.oneProcess
        ? `${z.cpuMs.sourceMove} ms (${round((z.cpuMs.sourceMove * 1000) / r.n)} µs/unit)`
        : `${z.cpuMs.sourceMove} / ${z.cpuMs.targetMove} ms  (${round((z.cpuMs.sourceMove * 1000) / r.n)} / ${round((z.cpuMs.targetMove * 1000) / r.n)} µs/unit; sampled every 100 ms)`,
    ],
    [
      'zlink',
      z.cpuMs.oneProcess ? 'of which the kernel (system CPU)' : 'of which the kernel (system CPU), source / target',
      z.cpuMs.oneProcess
        ? `${z.cpuMs.sourceMoveSystem} ms (${share(z.cpuMs.sourceMoveSystem, z.cpuMs.sourceMove)})`
        : `${z.cpuMs.sourceMoveSystem} / ${z.cpuMs.targetMoveSystem} ms  (${share(z.cpuMs.sourceMoveSystem, z.cpuMs.sourceMove)} / ${share(z.cpuMs.targetMoveSystem, z.cpuMs.targetMove)}; sockets cost more on some machines)`,
    ],
    [
      'zlink',
      z.cpuMs.oneProcess ? 'of which the main thread | other threads' : 'of which the main thread | other threads, source / target',
      z.cpuMs.oneProcess
        ? `${z.cpuMs.sourceMoveMainThread} | ${round(z.cpuMs.sourceMove - z.cpuMs.sourceMoveMainThread)} ms  (the others: V8's GC and compiler threads, libuv's pool)`
        : `${z.cpuMs.sourceMoveMainThread} | ${round(z.cpuMs.sourceMove - z.cpuMs.sourceMoveMainThread)} / ${z.cpuMs.targetMoveMainThread} | ${round(z.cpuMs.targetMove - z.cpuMs.targetMoveMainThread)} ms  (others ${share(z.cpuMs.sourceMove - z.cpuMs.sourceMoveMainThread, z.cpuMs.sourceMove)} / ${share(z.cpuMs.targetMove - z.cpuMs.targetMoveMainThread, z.cpuMs.targetMove)}: V8's GC and compiler threads, libuv's pool; a V8 profile sees the main thread only)`,
    ],
    ...(r.stack === 'redis'
      ? [
          ['zlink', 'Redis server CPU in the move', `${z.cpuMs.redisServerMove} ms  (whole server, user + system, → last owner CAS; it shares the cores with the hosts)`] as [string, string, string],
          ['zlink', 'traffic host CPU in the move (this process)', `${z.cpuMs.trafficHostMove} ms  (its sends, their owner lookups, the Redis CPU sampling)`] as [string, string, string],
        ]
      : []),
    [
      'zlink',
      'machine busy in the move (all CPUs, every process)',
      `${z.cpuMs.machineBusyMove} ms of ${round(r.details.machine.cpus * r.zlinkMs, 0)} (${share(z.cpuMs.machineBusyMove, r.details.machine.cpus * r.zlinkMs)}; near 100%: the move waits for CPU, not for I/O)`,
    ],
    [
      'zlink',
      'event loop delay p99 / max, source | target',
      `${round(z.eventLoopDelayMs.source?.p99 ?? NaN)} / ${round(z.eventLoopDelayMs.source?.max ?? NaN)} ms | ${round(z.eventLoopDelayMs.target?.p99 ?? NaN)} / ${round(z.eventLoopDelayMs.target?.max ?? NaN)} ms  (blocked loop: every reply waits)`,
    ],
    [
      'zlink',
      z.cpuMs.oneProcess ? 'GC pauses scavenge | other (count, total / max ms)' : 'GC pauses scavenge | other, source ‖ target',
      z.cpuMs.oneProcess ? gcCell(z.gcPausesMs.source) : `${gcCell(z.gcPausesMs.source)} ‖ ${gcCell(z.gcPausesMs.target)}`,
    ],
    [
      'zlink',
      z.rss.oneProcess ? 'peak RSS in the move (one process)' : 'peak RSS in the move, source / target',
      z.rss.oneProcess
        ? `${z.rss.sourceBeforeMB} → ${z.rss.sourcePeakMB} MB (+${r.peakRssGrowthMB})`
        : `${z.rss.sourceBeforeMB} → ${z.rss.sourcePeakMB} MB / ${z.rss.targetBeforeMB} → ${z.rss.targetPeakMB} MB (max growth +${r.peakRssGrowthMB} MB)`,
    ],
    [
      'zlink',
      'peak RSS with the owner reads after it',
      z.rss.oneProcess ? `${z.rss.sourcePeakWithReadsMB} MB` : `${z.rss.sourcePeakWithReadsMB} / ${z.rss.targetPeakWithReadsMB} MB  (the bench's own check; not the move's)`,
    ],
    ['zlink', 'messages sent / lost / duplicated / reordered', `${z.traffic.sent} / ${r.lost} / ${r.duplicated} / ${r.reordered}  (send errors ${z.traffic.sendErrors}, report errors ${z.traffic.reportErrors})`],
    ['naive', 'total (persist, deactivate, flip, reactivate)', `${r.naiveMs} ms  [orchestrator clock]`],
    ['naive', 'per-actor unavailability p50 / p99', `${nv.unavailableP50Ms} / ${nv.unavailableP99Ms} ms  (target activation − source snapshot, same machine wall clock)`],
    ['naive', 'messages sent / lost / duplicated / reordered', `${nv.sent} / ${nv.lost} / ${nv.duplicated} / ${nv.reordered}  (${nv.retries} retries)`],
  ];
  const w0 = Math.max(...rows.map((x) => x[0].length));
  const w1 = Math.max(...rows.map((x) => x[1].length));
  console.log(`\nzlink bench — stack ${r.stack}, N = ${r.n} Entry Actors × ${r.stateBytes} B state, traffic ${rate} msg/s from a third host` +
      `\n(${r.details.machine.cpus} CPUs; 1-min load average ${r.details.machine.loadAvg1mAtStart} at start, ${r.details.machine.loadAvg1mAtEnd} at end — other processes on the machine skew every figure)`);
  console.log(`${'-'.repeat(w0)}-+-${'-'.repeat(w1)}-+-${'-'.repeat(40)}`);
  for (const [a, b, c] of rows) console.log(`${a.padEnd(w0)} | ${b.padEnd(w1)} | ${c}`);
  console.log();
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    console.error('bench failed:', error);
    process.exit(1);
  },
);

/** `n × total / max ms` for scavenges, then for the other GCs (main-thread pause time, all of the move). */
function gcCell(gc: GcPauses | undefined): string {
  if (!gc) return 'n/a';
  const part = (p: GcPauses['minor']) => `${p.count} × ${round(p.ms)} / ${round(p.maxMs)}`;
  return `${part(gc.minor)} | ${part(gc.major)} ms`;
}
