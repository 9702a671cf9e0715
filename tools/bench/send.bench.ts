/**
 * What a sender's one-way messages cost, without a move (issue [6/10]: the 1k msg/s of `npm run bench` from a third
 * host made a 100k move ~18% longer, median of five alternated pairs against `--rate 0`, most of it the sender's own
 * CPU). One host in this process sends `{ op: 't' }` to Entry Actors that a host in a child process holds (Redis
 * stores + ws on loopback, as the bench's redis stack), at --rate messages a second, and prints what each message
 * cost in CPU: this process (the sender: the owner read for an Actor it has not sent to, encoding, ws), the
 * receiving process and the Redis server (INFO cpu), and how many messages the sender counted undeliverable (exit
 * code 1 when any).
 *
 * --actors K addresses the first K of the --n Actors at random: K = n (default) sends almost every message to an
 * Actor the sender has not resolved yet, as the bench's traffic does; a small K sends mostly to known routes.
 * Each run sends --warmup seconds unmeasured (JIT, routes) and then --seconds measured. Prints each run and the medians.
 *   npm run bench:send -- --n 100000 --rate 1000 --warmup 5 --seconds 5 --runs 3 [--actors 1000]
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Redis from 'ioredis';
import { createRuntime, redisStores } from '../../runtime';
import { deleteKeys } from '../../stores/redis/delete-keys';
import { forkHost } from '../child-host';
import { actorId, cpuMs, installMetrics, redisCpuMs, sleep } from './bench-common';
import type { NodeConfig } from './bench-node';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '100000' },
    actors: { type: 'string' },
    rate: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '5' },
    runs: { type: 'string', default: '3' },
    url: { type: 'string', default: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
  },
});

function whole(flag: 'n' | 'actors' | 'rate' | 'warmup' | 'seconds' | 'runs', least: number): number {
  const value = Number(values[flag]);
  if (!Number.isInteger(value) || value < least) throw new TypeError(`send: --${flag} must be a whole number >= ${least}; got '${values[flag]}'`);
  return value;
}
const n = whole('n', 1);
const actors = values.actors === undefined ? n : whole('actors', 1);
if (actors > n) throw new TypeError(`send: --actors must be at most --n (${n}); got '${values.actors}'`);
const rate = whole('rate', 1);
const warmupS = whole('warmup', 0);
const seconds = whole('seconds', 1);
const runs = whole('runs', 1);
const url = values.url!;
const prefix = `zlink:bench:${randomBytes(4).toString('hex')}:`;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Sends at `rate` a second (a tick every 5 ms, as the bench's traffic) until `stop`; counts what was sent. */
function startSending(send: (actor: number) => void): { sent(): number; stop(): void } {
  const t0 = performance.now();
  let sent = 0;
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - t0) * rate) / 1000);
    for (; sent < due; sent++) send(Math.floor(Math.random() * actors));
  }, 5);
  return { sent: () => sent, stop: () => clearInterval(timer) };
}

interface RunResult {
  readonly sent: number;
  readonly sendErrors: number;
  readonly senderUs: number;
  readonly receiverUs: number;
  readonly redisUs: number;
}

async function main(): Promise<void> {
  // The sender records its metrics into an SDK, as the traffic host of `npm run bench` does (what it costs is part of a
  // send), and its undeliverable counter tells a message dropped after the call from one delivered.
  const metrics = installMetrics();
  const config: NodeConfig = { role: 'target', stack: 'redis', url, prefix, n };
  // `ZLINK_BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/p"` (space-separated): node flags for the receiver, as `npm run bench` takes them.
  const nodeArgs = process.env.ZLINK_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const receiver = forkHost(path.join(__dirname, 'bench-host.js'), config, 'receiver', ['--max-old-space-size=8192', ...nodeArgs]);
  const stores = redisStores({ url, keyPrefix: prefix });
  const redis = new Redis(url);
  let started = false;
  let sender: Awaited<ReturnType<typeof createRuntime>> | undefined;
  try {
    await redis.ping();
    await receiver.call('start');
    started = true;
    sender = await createRuntime({
      nodeId: 'bench-sender',
      applicationVersion: 1,
      stores,
      meshes: [{ name: 'main', listen: { host: '127.0.0.1', port: 0 } }],
      types: [], // hosts no BenchEntry: every message goes to the other process
    });
    const createMs = await receiver.call<number>('create');
    console.log(`send bench: ${n} Entry Actors on the receiver (${createMs.toFixed(0)} ms), ${actors} addressed, ${rate} msg/s, ${warmupS} s warm-up + ${seconds} s measured per run`);
    const results: RunResult[] = [];
    for (let run = 1; run <= runs; run++) {
      let sendErrors = 0;
      const host = sender;
      const sending = startSending((a) => {
        try {
          host.send({ actor: actorId(a) }, { op: 't', q: 0 });
        } catch {
          sendErrors++;
        }
      });
      await sleep(warmupS * 1000);
      const before = { sent: sending.sent(), self: cpuMs(), receiver: await receiver.call<number>('cpu'), redis: await redisCpuMs(redis) };
      await sleep(seconds * 1000);
      const after = { sent: sending.sent(), self: cpuMs(), receiver: await receiver.call<number>('cpu'), redis: await redisCpuMs(redis) };
      sending.stop();
      const sent = after.sent - before.sent;
      const per = (from: number, to: number) => ((to - from) * 1000) / sent;
      const result = { sent, sendErrors, senderUs: per(before.self, after.self), receiverUs: per(before.receiver, after.receiver), redisUs: per(before.redis, after.redis) };
      results.push(result);
      console.log(
        `run ${run}: ${sent} sent (${sendErrors} refused at the call) — CPU per message: sender ${result.senderUs.toFixed(1)} µs, receiver ${result.receiverUs.toFixed(1)} µs, Redis ${result.redisUs.toFixed(1)} µs`,
      );
      await sleep(500); // the last messages land before the next run counts
    }
    const pick = (f: (r: RunResult) => number) => median(results.map(f)).toFixed(1);
    console.log(`medians of ${runs}: sender ${pick((r) => r.senderUs)} µs, receiver ${pick((r) => r.receiverUs)} µs, Redis ${pick((r) => r.redisUs)} µs per message`);
    const undeliverable = await metrics.counter('zlink.runtime.message.undeliverable');
    console.log(`undeliverable (the sender's zlink.runtime.message.undeliverable, all runs): ${undeliverable}`);
    if (undeliverable > 0) process.exitCode = 1;
  } finally {
    if (started) await receiver.call('stop').catch(() => undefined);
    if (sender) await sender.shutdown({ deadlineMs: 15_000 });
    await stores.close();
    await deleteKeys(redis, prefix);
    redis.disconnect();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
