/**
 * Transport benchmark between two processes on loopback (ws transport, child_process.fork for the peer):
 *  - bulk: 1 MiB payloads sent in chunks (acquireBudget + sendPayload, as many in flight as the budget allows), MB/s
 *  - msgs: 100-byte runtime messages (coalesced per tick), msgs/s
 *  - envelopes: application messages shaped as the router sends them (`{t:'msg', env}`), the body encoded with the
 *    value codec at send and decoded at receipt (runtime/codec.ts), msgs/s — what the codec costs end to end
 *  - with `--units N`: the move's transfer shape against the floor's (issue [6/10]): N × 1 KiB as the floor of
 *    `npm run bench` sends it (one raw ws message per KiB, no zlink framing) and as a relocation sends it (parcels of
 *    PARCEL_UNITS units through acquireBudget + sendPayload, at most SEAL_WINDOW_PARCELS parcels unanswered — the
 *    128-unit seal window — each answered by one runtime message, and one runtime message per parcel naming its units
 *    the other way, as the cutovers go): wall ms and the CPU ms of each process, so the transport's share of a move
 *    can be told apart from the rest of it.
 * Prints each run and the medians.  npm run bench:transport -- --runs 5 --payloads 200 --messages 200000 [--units 100000]
 */
import { fork } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import WebSocket, { WebSocketServer } from 'ws';
import { encodeParcel } from '../../runtime/relocation/parcel';
import { PARCEL_ID_PREFIX, parcelUnitsFor } from '../../runtime/relocation/source/parcel-sender';
import { SEAL_GATE_DEFAULTS } from '../../runtime/relocation/source/seal-gate';
import { createWsTransport } from '../../transport/ws';
import type { NodeDescriptor, NodeRef } from '../../stores/types';
import type { RuntimeMessage } from '../../transport/types';
import { decodeValue, encodeValue } from '../../runtime/codec';

/** The envelope a router sends for `send({ actor: 'counter-1' }, { op: 'add', by: i, note })` (runtime/router.ts). */
const envelope = (i: number, from: NodeRef): RuntimeMessage => ({
  t: 'msg',
  env: { id: '6f1c2b9e-3d4a-4f5e-8a7b-9c0d1e2f3a4b', to: 'a:counter-1', gen: 1, body: encodeValue({ op: 'add', by: i, note: 'hello' }, 'message'), from, seq: i },
});

const { values } = parseArgs({
  options: {
    role: { type: 'string', default: 'parent' },
    runs: { type: 'string', default: '5' },
    payloads: { type: 'string', default: '200' },
    messages: { type: 'string', default: '200000' },
    chunk: { type: 'string', default: String(256 * 1024) },
    units: { type: 'string', default: '0' },
  },
});

const MiB = 1024 * 1024;
const chunkBytes = Number(values.chunk);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const descriptor = (ref: NodeRef, endpoint: string): NodeDescriptor => ({
  ...ref, applicationVersion: 1, state: 1, endpoints: { main: endpoint }, types: [], capacity: 1, load: 0, weight: 1,
});

type Ctl =
  | { type: 'endpoint'; endpoint: string; raw: number }
  | { type: 'peer'; endpoint: string }
  | { type: 'expect'; messages: number }
  | { type: 'cpu' }
  | { type: 'cpuMs'; ms: number }
  | { type: 'done' };

/** Units per parcel for the soft seal window (128: parcel-sender.ts parcelUnitsFor), and the window in parcels. */
const PARCEL_UNITS = parcelUnitsFor(SEAL_GATE_DEFAULTS.softWindow);
const SEAL_WINDOW_PARCELS = Math.max(1, Math.floor(SEAL_GATE_DEFAULTS.softWindow / PARCEL_UNITS));
const cpuMs = (): number => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};

/** The floor's receiver (bench-node.ts floorServe): counts raw ws messages, answers once `expected` arrived. */
async function rawServer(expected: () => number): Promise<number> {
  const server = http.createServer();
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  wss.on('connection', (ws) => {
    let got = 0;
    ws.on('message', () => {
      if (++got === expected()) ws.send('done');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  return (server.address() as AddressInfo).port;
}

async function child(): Promise<void> {
  const self = { nodeId: 'bench-b', lifecycleGeneration: 1 };
  let expected = Infinity;
  let got = 0;
  let parentRef: NodeRef | undefined;
  const t = createWsTransport({
    self: { ...self, applicationVersion: 1 },
    meshes: [{ name: 'main', listen: { host: '127.0.0.1', port: 0 } }],
    chunkBytes,
    handlers: {
      onMessage: (from, m) => {
        if (m.t === 'x.cut') return void t.send(from, { t: 'x.cutDone', n: (m.us as string[]).length });
        if (m.t === 'msg') decodeValue((m.env as { body: Uint8Array }).body);
        if (++got === expected) {
          t.send(from, { t: 'done' });
          got = 0;
        }
      },
      onPayload: (from, id, r) => {
        if (!r.ok) throw r.error;
        if (id.startsWith(PARCEL_ID_PREFIX)) t.send(from, { t: 'x.ready', id }); // the relay-ready of its units
      },
      onPeer: (p) => {
        if (p.state === 'Ready') parentRef = p;
      },
    },
  });
  const endpoints = await t.start();
  const raw = await rawServer(() => Number(values.units));
  process.on('message', (m: Ctl) => {
    if (m.type === 'peer') t.updatePeers([descriptor(self, endpoints.main!), descriptor({ nodeId: 'bench-a', lifecycleGeneration: 1 }, m.endpoint)]);
    if (m.type === 'cpu') process.send!({ type: 'cpuMs', ms: cpuMs() } satisfies Ctl);
    if (m.type === 'expect') expected = m.messages;
    if (m.type === 'done') void t.close().then(() => process.exit(0));
  });
  void parentRef;
  process.send!({ type: 'endpoint', endpoint: endpoints.main!, raw } satisfies Ctl);
}

async function parent(): Promise<void> {
  const runs = Number(values.runs);
  const payloads = Number(values.payloads);
  const messages = Number(values.messages);
  const units = Number(values.units);
  const peer = fork(__filename, ['--role', 'child', '--chunk', String(chunkBytes), '--units', String(units)]);
  const hello = await new Promise<{ endpoint: string; raw: number }>((resolve) => peer.once('message', (m: Ctl) => m.type === 'endpoint' && resolve(m)));
  const childEndpoint = hello.endpoint;
  const self = { nodeId: 'bench-a', lifecycleGeneration: 1 };
  const b = { nodeId: 'bench-b', lifecycleGeneration: 1 };
  let onDone: (() => void) | undefined;
  let onAnswer: ((m: RuntimeMessage) => void) | undefined;
  const t = createWsTransport({
    self: { ...self, applicationVersion: 1 },
    meshes: [{ name: 'main', listen: { host: '127.0.0.1', port: 0 } }],
    chunkBytes,
    handlers: {
      onMessage: (_f, m: RuntimeMessage) => {
        if (m.t === 'done') onDone?.();
        else onAnswer?.(m);
      },
      onPayload: () => undefined,
    },
  });
  const endpoints = await t.start();
  peer.send({ type: 'peer', endpoint: endpoints.main! } satisfies Ctl);
  t.updatePeers([descriptor(self, endpoints.main!), descriptor(b, childEndpoint)]); // bench-a < bench-b: a dials
  while (!t.isReadyOnEveryMesh(b)) await new Promise((r) => setTimeout(r, 5));

  const childCpu = (): Promise<number> =>
    new Promise((resolve) => {
      peer.once('message', (m: Ctl) => m.type === 'cpuMs' && resolve(m.ms));
      peer.send({ type: 'cpu' } satisfies Ctl);
    });
  /** Wall and CPU (this process, the peer) of one pass. */
  const measure = async (pass: () => Promise<void>): Promise<Shape> => {
    const [c0, k0] = [cpuMs(), await childCpu()];
    const t0 = performance.now();
    await pass();
    const ms = performance.now() - t0;
    return { ms, sourceCpuMs: cpuMs() - c0, targetCpuMs: (await childCpu()) - k0 };
  };
  const unitState = Buffer.alloc(1024, 0x5a);
  const unitIds = Array.from({ length: units }, () => randomBytes(16).toString('hex'));
  /** The floor of `npm run bench` (bench-node.ts floorSend): one ws message per unit, paced by bufferedAmount. */
  const rawPass = async (): Promise<void> => {
    const ws = new WebSocket(`ws://127.0.0.1:${hello.raw}`, { perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => ws.once('open', () => resolve()).once('error', reject));
    const done = new Promise<void>((resolve) => ws.once('message', () => resolve()));
    for (let i = 0; i < units; i++) {
      ws.send(unitState);
      if (ws.bufferedAmount > 8 * MiB) while (ws.bufferedAmount > MiB) await new Promise((r) => setImmediate(r));
    }
    await done;
    ws.close();
  };
  /** The relocation's shape: parcels through the transport, a seal window of them, a reply and a cutover message each. */
  const parcelPass = async (): Promise<void> => {
    const parcels = Math.ceil(units / PARCEL_UNITS);
    let unanswered = 0;
    let answers = 0;
    const waiting: (() => void)[] = [];
    let allAnswered!: () => void;
    const finished = new Promise<void>((resolve) => (allAnswered = resolve));
    onAnswer = (m) => {
      if (m.t === 'x.ready') {
        unanswered--;
        waiting.shift()?.();
      }
      if (++answers === 2 * parcels) allAnswered();
    };
    const sends: Promise<void>[] = [];
    for (let p = 0; p < parcels; p++) {
      if (unanswered >= SEAL_WINDOW_PARCELS) await new Promise<void>((resolve) => waiting.push(resolve));
      unanswered++;
      const ids = unitIds.slice(p * PARCEL_UNITS, (p + 1) * PARCEL_UNITS);
      const bytes = encodeParcel(ids.map((unit) => ({ unit, payload: unitState })));
      sends.push(t.sendPayload(b, `${PARCEL_ID_PREFIX}${randomUUID()}`, bytes, await t.acquireBudget(b, bytes.length)));
      t.send(b, { t: 'x.cut', us: ids });
    }
    await Promise.all(sends);
    await finished;
    onAnswer = undefined;
  };
  const raws: Shape[] = [];
  const shaped: Shape[] = [];

  const payload = Buffer.alloc(MiB, 0x5a);
  const bulk: number[] = [];
  const rates: number[] = [];
  const envRates: number[] = [];
  for (let run = 0; run < runs; run++) {
    const start = process.hrtime.bigint();
    const inFlight: Promise<void>[] = [];
    for (let i = 0; i < payloads; i++) {
      const lease = await t.acquireBudget(b, payload.length); // paced by the 16 MiB budget (§7)
      inFlight.push(t.sendPayload(b, `r${run}-p${i}`, payload, lease));
    }
    await Promise.all(inFlight);
    const s = Number(process.hrtime.bigint() - start) / 1e9;
    bulk.push((payloads * payload.length) / MiB / s);

    peer.send({ type: 'expect', messages } satisfies Ctl);
    await new Promise((r) => setTimeout(r, 20));
    const pad = 'x'.repeat(100 - JSON.stringify({ t: 'm', i: 0, p: '' }).length - 4);
    const done = new Promise<void>((resolve) => (onDone = resolve));
    const m0 = process.hrtime.bigint();
    for (let i = 0; i < messages; i++) {
      t.send(b, { t: 'm', i, p: pad });
      if (i % 2000 === 1999) await new Promise((r) => setImmediate(r)); // let the per-tick flush and reads run
    }
    await done;
    const ms = Number(process.hrtime.bigint() - m0) / 1e9;
    rates.push(messages / ms);

    peer.send({ type: 'expect', messages } satisfies Ctl);
    await new Promise((r) => setTimeout(r, 20));
    const envDone = new Promise<void>((resolve) => (onDone = resolve));
    const e0 = process.hrtime.bigint();
    for (let i = 0; i < messages; i++) {
      t.send(b, envelope(i, self));
      if (i % 2000 === 1999) await new Promise((r) => setImmediate(r));
    }
    await envDone;
    envRates.push(messages / (Number(process.hrtime.bigint() - e0) / 1e9));
    console.log(
      `run ${run + 1}: bulk ${bulk[run]!.toFixed(1)} MB/s (${payloads} x 1 MiB, ${chunkBytes / 1024} KiB chunks), messages ${Math.round(rates[run]!)} msg/s (${messages} x 100 B), envelopes ${Math.round(envRates[run]!)} msg/s`,
    );
    if (units > 0) {
      raws.push(await measure(rawPass));
      shaped.push(await measure(parcelPass));
      console.log(`run ${run + 1}: ${units} x 1 KiB — floor's raw ws ${describeShape(raws[run]!)}; relocation's parcels ${describeShape(shaped[run]!)}`);
    }
  }
  console.log(
    JSON.stringify({
      medianBulkMBps: Number(median(bulk).toFixed(1)),
      medianMsgsPerSec: Math.round(median(rates)),
      medianEnvelopesPerSec: Math.round(median(envRates)),
      ...(units > 0 && { units, raw: medianShape(raws), parcels: medianShape(shaped) }),
      runs,
    }),
  );
  peer.send({ type: 'done' } satisfies Ctl);
  await t.close();
  await new Promise((r) => peer.once('exit', r));
}

interface Shape {
  readonly ms: number;
  readonly sourceCpuMs: number;
  readonly targetCpuMs: number;
}
const describeShape = (x: Shape): string => `${x.ms.toFixed(0)} ms, CPU sender / receiver ${x.sourceCpuMs.toFixed(0)} / ${x.targetCpuMs.toFixed(0)} ms`;
const medianShape = (xs: Shape[]): Shape => ({
  ms: Math.round(median(xs.map((x) => x.ms))),
  sourceCpuMs: Math.round(median(xs.map((x) => x.sourceCpuMs))),
  targetCpuMs: Math.round(median(xs.map((x) => x.targetCpuMs))),
});

(values.role === 'child' ? child() : parent()).catch((err) => {
  console.error(err);
  process.exit(1);
});
