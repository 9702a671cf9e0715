/**
 * The target side of relocation alone, in one process (`node dist/tools/bench/target-intake.bench.js --n 10000`):
 * a real Object Server and Inbound (target/inbound.ts) fed what a source sends — batched `r.prepare`s kept
 * `--lookahead` units ahead of the payloads, as the source's pool starts units only within a lookahead of its seal
 * window (source/pool.ts; `--lookahead 0`: every unit prepared in one message first), parcels
 * of `--parcel` units of 1 KiB preserved state, one `r.cutover` per unit — with replies batched by a real
 * ControlBatcher into msgpack frames, owner commits through a real OwnerCommitBatcher over an in-memory commitOwners, and a
 * unit-event listener (as the bench has). Reports the process CPU per unit (user + system) for the whole
 * intake → open path, median of `--runs`. No sockets and no Redis: what is left is the target's own work per unit
 * (issue [6/10]: the target must stay well under the source's cost).
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { parseArgs } from 'node:util';
import { pack, unpack } from 'msgpackr';
import { memoryStores } from '../../stores/memory/memory-stores';
import type { CasResult, NodeRef, OwnerCommitRequest } from '../../stores/types';
import { systemClock } from '../../runtime/clock';
import { defineActor, preserveState } from '../../runtime/definitions';
import { silentLog } from '../../runtime/logger';
import { ObjectServer } from '../../runtime/objects';
import { OwnerCommitBatcher } from '../../runtime/relocation/owner-commit-batcher';
import { describeType } from '../../runtime/relocation/compatibility';
import { ControlBatcher } from '../../runtime/relocation/control-batcher';
import { UnitEvents } from '../../runtime/relocation/events';
import { encodeParcel } from '../../runtime/relocation/parcel';
import { encodePayload, PAYLOAD_VERSION } from '../../runtime/relocation/payload';
import { RELOCATION_MESSAGE, parseRelocationMessage, type CutoverMessage, type PrepareMessage } from '../../runtime/relocation/protocol';
import { PARCEL_ID_PREFIX } from '../../runtime/relocation/source/parcel-sender';
import { Inbound } from '../../runtime/relocation/target/inbound';
import type { RuntimeMessage, Transport } from '../../transport/types';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '10000' },
    parcel: { type: 'string', default: '64' },
    lookahead: { type: 'string', default: '512' },
    runs: { type: 'string', default: '7' },
    /** Writes a V8 CPU profile of the timed part of every run to this file. */
    profile: { type: 'string' },
  },
  strict: true,
});
const n = Number(values.n);
const perParcel = Number(values.parcel);
const runs = Number(values.runs);
const lookahead = Number(values.lookahead);
for (const [flag, value, least] of [['n', n, 1], ['parcel', perParcel, 1], ['runs', runs, 1], ['lookahead', lookahead, 0]] as const)
  if (!Number.isInteger(value) || value < least) throw new TypeError(`target-intake: --${flag} must be a whole number >= ${least}; got '${values[flag]}'`);

const SOURCE: NodeRef = { nodeId: 'bench-source', lifecycleGeneration: 1 };
const SELF: NodeRef = { nodeId: 'bench-target', lifecycleGeneration: 1 };
const Counter = defineActor<{ n: number; pad: Buffer }>({
  type: 'Counter',
  relocation: preserveState({ capture: (s) => s.pad, restore: (b) => ({ n: 0, pad: Buffer.from(b) }) }),
  create: () => ({ n: 0, pad: Buffer.alloc(1024) }),
  receive: () => undefined,
});
const types = new Map([['Counter', Counter]]);
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function once(run: number): Promise<number> {
  const clock = systemClock;
  const stores = memoryStores();
  const objects = new ObjectServer({
    self: SELF,
    clock,
    location: stores.location,
    relocationStore: stores.relocation,
    types,
    reply: () => undefined,
    rejectStaleGeneration: () => undefined,
    send: () => undefined,
    request: async () => undefined,
    logger: silentLog,
  });
  let frames = 0;
  const transport = { maxFrameBytes: 4 * 1024 * 1024, send: (_to: NodeRef, message: RuntimeMessage) => ((frames += pack(message).length), true) } as unknown as Transport;
  const control = new ControlBatcher(() => transport);
  // Every commit applies (the store's own cost is measured by the Redis stores bench); one result object per entry.
  const commitOwners = async (request: OwnerCommitRequest): Promise<CasResult[]> =>
    request.entries.map((e) => ({ status: 'applied', record: { kind: 'actor', id: e.object.id, type: 'Counter', owner: request.owner, objectGeneration: e.objectGeneration, authorityGeneration: e.expectedAuthorityGeneration + 1 } }));
  const owners = new OwnerCommitBatcher({ commitOwners }, () => SELF);
  const unitEvents = new UnitEvents();
  let opened = 0;
  unitEvents.on((e) => void (e.state === 'opened' && opened++));
  const inbound = new Inbound({
    self: SELF,
    clock,
    timing: { restoreValidityMs: 60_000, relocationCutoverWaitTimeoutMs: 60_000 },
    capacity: n * 2,
    types,
    objects,
    routes: { dispatch: () => undefined, invalidate: () => undefined, terminal: () => undefined },
    location: stores.location,
    owners,
    replies: {
      prepared: (source, u) => control.prepared(source, u),
      ready: (source, u) => control.ready(source, u),
      fail: (_s, u, _r, error) => {
        throw new Error(`unit ${u} failed: ${error}`);
      },
      flush: (source) => control.flush(source),
    },
    logger: silentLog,
    unitEvents,
    inspect: undefined,
    refusal: () => undefined,
    closed: () => false,
    unitsEnded: () => undefined,
  });

  // What the source sends, built before the clock starts (msgpack round trip, as the transport delivers it).
  const ids = Array.from({ length: n }, (_, i) => `r${run}-${i.toString(16).padStart(30, '0')}`);
  const keys = ids.map((_, i) => `a:actor-${run}-${i}`);
  // One prepare message per parcel's units (the source batches the prepares of one turn), or one for all.
  const prepareOf = (from: number, to: number) =>
    parseRelocationMessage(
      roundTrip({ t: RELOCATION_MESSAGE.prepare, units: ids.slice(from, to).map((u, i) => ({ u, kind: 'actor', keys: [keys[from + i]!], ty: [0] })), types: [describeType(Counter)] }),
    ) as PrepareMessage;
  const prepares: PrepareMessage[] = [];
  if (lookahead === 0) prepares.push(prepareOf(0, n));
  else for (let i = 0; i < n; i += perParcel) prepares.push(prepareOf(i, Math.min(n, i + perParcel)));
  const ahead = lookahead === 0 ? 1 : Math.max(1, Math.ceil(lookahead / perParcel));
  const parcels: Buffer[] = [];
  for (let i = 0; i < n; i += perParcel)
    parcels.push(
      encodeParcel(
        ids.slice(i, i + perParcel).map((u, k) => ({
          unit: u,
          payload: encodePayload({
            v: PAYLOAD_VERSION,
            unit: u,
            kind: 'actor',
            objects: [{ key: keys[i + k]!, type: 'Counter', gen: 1, auth: 3, mode: 'entry', state: Buffer.alloc(1024, k), timers: [] }],
            queue: [],
          }),
        })),
      ),
    );
  const cutovers = ids.map((u) => roundTrip({ t: RELOCATION_MESSAGE.cutover, u, relay: [], first: true }));

  await profiler?.('Profiler.start');
  const cpu = process.cpuUsage();
  for (let m = 0; m < Math.min(ahead, prepares.length); m++) inbound.onPrepare(SOURCE, prepares[m]!);
  await turn();
  for (let p = 0; p < parcels.length; p++) {
    if (p + ahead < prepares.length) inbound.onPrepare(SOURCE, prepares[p + ahead]!);
    inbound.onPayload(SOURCE, `${PARCEL_ID_PREFIX}${run}-${p}`, { ok: true, bytes: parcels[p]! });
    await turn();
    for (let i = p * perParcel; i < Math.min(n, (p + 1) * perParcel); i++) inbound.onCutover(parseRelocationMessage(cutovers[i]) as CutoverMessage);
    await turn();
  }
  while (inbound.inFlight > 0) await turn();
  const used = process.cpuUsage(cpu);
  await profiler?.('Profiler.stop').then((r) => profiles.push((r as { profile: unknown }).profile));
  if (opened !== n) throw new Error(`opened ${opened} of ${n}`);
  inbound.close();
  await stores.close();
  return (used.user + used.system) / n;
}

function roundTrip(message: unknown): RuntimeMessage {
  return unpack(pack(message)) as RuntimeMessage;
}

const session = values.profile === undefined ? undefined : new Session();
const profiler = session && ((method: string, params?: object) => new Promise<unknown>((resolve, reject) => session.post(method, params, (e, r) => (e ? reject(e) : resolve(r)))));
const profiles: unknown[] = [];

async function main(): Promise<void> {
  if (session) {
    session.connect();
    await profiler!('Profiler.enable');
    await profiler!('Profiler.setSamplingInterval', { interval: 250 });
  }
  const results: number[] = [];
  for (let run = 0; run < runs; run++) {
    const us = await once(run);
    results.push(us);
    console.log(`run ${run}: ${us.toFixed(1)} µs CPU per unit`);
  }
  // The last run's profile (warm), as a .cpuprofile for DevTools.
  if (values.profile !== undefined) writeFileSync(values.profile, JSON.stringify(profiles.at(-1)));
  const sorted = [...results].sort((a, b) => a - b);
  console.log(`target intake → open, N = ${n}, ${perParcel} units per parcel, prepared ${lookahead === 0 ? 'all at once' : `${lookahead} ahead`}: median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} µs CPU per unit (${runs} runs)`);
}

void main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
