/**
 * Transport benchmark between two processes on loopback (ws transport, child_process.fork for the peer):
 *  - bulk: 1 MiB payloads sent in chunks (acquireBudget + sendPayload, as many in flight as the budget allows), MB/s
 *  - msgs: 100-byte runtime messages (coalesced per tick), msgs/s
 *  - envelopes: application messages shaped as the router sends them (`{t:'msg', env}`), the body encoded with the
 *    value codec at send and decoded at receipt (runtime/codec.ts), msgs/s — what the codec costs end to end
 * Prints each run and the medians.  npm run bench:transport -- --runs 5 --payloads 200 --messages 200000
 */
import { fork } from 'node:child_process';
import { parseArgs } from 'node:util';
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
  },
});

const MiB = 1024 * 1024;
const chunkBytes = Number(values.chunk);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const descriptor = (ref: NodeRef, endpoint: string): NodeDescriptor => ({
  ...ref, applicationVersion: 1, state: 1, endpoints: { main: endpoint }, types: [], capacity: 1, load: 0, weight: 1,
});

type Ctl = { type: 'endpoint'; endpoint: string } | { type: 'peer'; endpoint: string } | { type: 'expect'; messages: number } | { type: 'done' };

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
        if (m.t === 'msg') decodeValue((m.env as { body: Uint8Array }).body);
        if (++got === expected) {
          t.send(from, { t: 'done' });
          got = 0;
        }
      },
      onPayload: (_from, _id, r) => {
        if (!r.ok) throw r.error;
      },
      onPeer: (p) => {
        if (p.state === 'Ready') parentRef = p;
      },
    },
  });
  const endpoints = await t.start();
  process.on('message', (m: Ctl) => {
    if (m.type === 'peer') t.updatePeers([descriptor(self, endpoints.main!), descriptor({ nodeId: 'bench-a', lifecycleGeneration: 1 }, m.endpoint)]);
    if (m.type === 'expect') expected = m.messages;
    if (m.type === 'done') void t.close().then(() => process.exit(0));
  });
  void parentRef;
  process.send!({ type: 'endpoint', endpoint: endpoints.main! } satisfies Ctl);
}

async function parent(): Promise<void> {
  const runs = Number(values.runs);
  const payloads = Number(values.payloads);
  const messages = Number(values.messages);
  const peer = fork(__filename, ['--role', 'child', '--chunk', String(chunkBytes)]);
  const childEndpoint = await new Promise<string>((resolve) => peer.once('message', (m: Ctl) => m.type === 'endpoint' && resolve(m.endpoint)));
  const self = { nodeId: 'bench-a', lifecycleGeneration: 1 };
  const b = { nodeId: 'bench-b', lifecycleGeneration: 1 };
  let onDone: (() => void) | undefined;
  const t = createWsTransport({
    self: { ...self, applicationVersion: 1 },
    meshes: [{ name: 'main', listen: { host: '127.0.0.1', port: 0 } }],
    chunkBytes,
    handlers: { onMessage: (_f, m: RuntimeMessage) => m.t === 'done' && onDone?.(), onPayload: () => undefined },
  });
  const endpoints = await t.start();
  peer.send({ type: 'peer', endpoint: endpoints.main! } satisfies Ctl);
  t.updatePeers([descriptor(self, endpoints.main!), descriptor(b, childEndpoint)]); // bench-a < bench-b: a dials
  while (!t.isReadyOnEveryMesh(b)) await new Promise((r) => setTimeout(r, 5));

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
  }
  console.log(JSON.stringify({ medianBulkMBps: Number(median(bulk).toFixed(1)), medianMsgsPerSec: Math.round(median(rates)), medianEnvelopesPerSec: Math.round(median(envRates)), runs }));
  peer.send({ type: 'done' } satisfies Ctl);
  await t.close();
  await new Promise((r) => peer.once('exit', r));
}

(values.role === 'child' ? child() : parent()).catch((err) => {
  console.error(err);
  process.exit(1);
});
