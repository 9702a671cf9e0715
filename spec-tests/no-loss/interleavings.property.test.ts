/**
 * [5/10] Property: random interleavings of createActor / createSpot / join / send / request / relocate / shutdown
 * across three hosts on the memory stack (memoryStores + in-process transport). Written against the public API only.
 *
 * After every run, for every object that was created (and not refused):
 *  - it is owned (Location Store, `locate`) by exactly one *running* host, and answers a request from there with its
 *    state (the handler's `ctx.nodeId` is the located owner);
 *  - per sender, the sequence numbers it processed are strictly increasing (order kept, nothing processed twice);
 *  - every accepted one-way send and every request that resolved appears exactly once (no loss);
 *  - every request settled (resolved, or rejected with RequestError/AdmissionError) — never left pending.
 * Relocate/Shutdown results are valid wire combinations; no unhandled rejection; no hang.
 *
 * Legitimate exceptions (tracked, not assumed): Shutdown without relocation drops the workload of that host, so an
 * object that may have been owned by a host when its Shutdown was called is "tainted": it need not exist any more and
 * no-loss is not required for it — but if it still exists it must still be owned by one running host, answer, and
 * show no duplicate and no reorder.
 *
 * The generator never relocates nor shuts down one "anchor" host per run (chosen at random), so there is always a
 * Serving host that can take the workload.
 *
 * Runs: 200 by default; ZLINK_PROPERTY_RUNS=n raises it. ZLINK_PROPERTY_SEED / ZLINK_PROPERTY_PATH replay one case;
 * ZLINK_PROPERTY_SHRINK=1 shrinks a failure (off by default: endOnFailure).
 */
import fc from 'fast-check';
import {
  AdmissionError,
  createRuntime,
  defineActor,
  defineSpot,
  FrameworkRuntimeState,
  isValidRelocationResult,
  isValidTerminationResult,
  memoryStores,
  preserveState,
  RelocationMode,
  RelocationOutcome,
  RequestError,
  type FrameworkRuntime,
  type ObjectContext,
  type ObjectRef,
  type RelocationResult,
  type Stores,
} from '../../runtime';

// ── application types ────────────────────────────────────────────────────────────────────────

interface Ledger {
  /** sender → sequence numbers processed, in processing order. */
  seen: Record<string, number[]>;
}
type Msg = { op: 'seq'; from: string; n: number } | { op: 'ledger' };

const json = preserveState<Ledger>({
  capture: (s) => Buffer.from(JSON.stringify(s)),
  restore: (b) => JSON.parse(b.toString('utf8')) as Ledger,
});

function receive(state: Ledger, message: Msg, ctx: ObjectContext<Ledger>): unknown {
  if (message.op === 'seq') {
    (state.seen[message.from] ??= []).push(message.n);
    return message.n;
  }
  return { seen: state.seen, node: ctx.nodeId };
}

const Acc = defineActor<Ledger>({ type: 'Acc', relocation: json, create: () => ({ seen: {} }), receive });
/** SpotWide: the Spot and its members move as one aggregate; its own state is preserved, so it is a message target. */
const Room = defineSpot<Ledger>({
  type: 'Room',
  kind: 'user',
  executionMode: 'SpotWide',
  readiness: 'Immediate',
  relocation: json,
  create: () => ({ seen: {} }),
  receive: receive as never,
});
/** PerActor: only its shell moves (its application state is not restored, §10.2), so it is not a message target. */
const Lobby = defineSpot<Ledger>({
  type: 'Lobby',
  kind: 'user',
  executionMode: 'PerActor',
  readiness: 'Immediate',
  relocation: json,
  create: () => ({ seen: {} }),
  receive: receive as never,
});
const TYPES = [Acc, Room, Lobby];

const TIMING = {
  discoveryIntervalMs: 10,
  messageFollowDurationMs: 50,
  relocationCutoverWaitTimeoutMs: 50,
  restoreValidityMs: 2000,
  leaseMs: 1000,
};
const RELOCATE_DEADLINE_MS = 3000;
const SHUTDOWN_DEADLINE_MS = 2000;
const REQUEST_TIMEOUT_MS = 4000;
/** Bound for everything started by a run to settle (a hang beyond it is a failure). */
const SETTLE_MS = 12_000;
/** Bound for the end state to converge (Location Store CAS retries, Message Follow, re-route). */
const CONVERGE_MS = 3000;

// ── generated operations ─────────────────────────────────────────────────────────────────────

type Op =
  | { t: 'create'; host: number; kind: 'actor' | 'room' | 'lobby'; wait: boolean }
  | { t: 'member'; spot: number; wait: boolean }
  | { t: 'join'; actor: number; spot: number; wait: boolean }
  | { t: 'send'; from: number; to: number; count: number }
  | { t: 'request'; from: number; to: number; wait: boolean }
  /** Background traffic: `count` one-way sends, one every `everyMs`, overlapping whatever runs next. */
  | { t: 'stream'; from: number; to: number; count: number; everyMs: number }
  /** host: index into the two non-anchor hosts. */
  | { t: 'relocate'; host: number; thenShutdown: boolean; wait: boolean }
  | { t: 'shutdown'; host: number; wait: boolean }
  | { t: 'pause'; ms: number };

const hostArb = fc.integer({ min: 0, max: 2 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ t: fc.constant('create' as const), host: hostArb, kind: fc.constantFrom('actor' as const, 'actor' as const, 'room' as const, 'lobby' as const), wait: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('member' as const), spot: fc.nat(7), wait: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('join' as const), actor: fc.nat(7), spot: fc.nat(7), wait: fc.boolean() }) },
  { weight: 5, arbitrary: fc.record({ t: fc.constant('send' as const), from: hostArb, to: fc.nat(7), count: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('request' as const), from: hostArb, to: fc.nat(7), wait: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('stream' as const), from: hostArb, to: fc.nat(7), count: fc.integer({ min: 5, max: 25 }), everyMs: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('relocate' as const), host: fc.integer({ min: 0, max: 1 }), thenShutdown: fc.boolean(), wait: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('shutdown' as const), host: fc.integer({ min: 0, max: 1 }), wait: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('pause' as const), ms: fc.integer({ min: 0, max: 25 }) }) },
);
/** A few objects exist before the interleaving starts (awaited creates), so the first operations have targets. */
const setupArb = fc.array(fc.record({ host: hostArb, kind: fc.constantFrom('actor' as const, 'actor' as const, 'room' as const, 'lobby' as const) }), { minLength: 1, maxLength: 4 });
const scenarioArb = fc.record({ anchor: hostArb, setup: setupArb, ops: fc.array(opArb, { minLength: 3, maxLength: 14 }) });
type Scenario = { anchor: number; setup: { host: number; kind: Obj['kind'] }[]; ops: Op[] };

// ── one run ──────────────────────────────────────────────────────────────────────────────────

interface Obj {
  ref: ObjectRef;
  name: string;
  kind: 'actor' | 'room' | 'lobby';
  /** true once the create resolved. */
  created: boolean;
  /** May have been owned by a host when its Shutdown was called: may be gone, no-loss not required. */
  tainted: string | undefined;
  /** Message target (Lobby state is not preserved by design). */
  target: boolean;
}

interface Sent {
  obj: Obj;
  sender: string;
  n: number;
  kind: 'send' | 'request';
  /** send: accepted by the call; request: resolved with its reply. */
  mustArrive: boolean;
}

/**
 * Investigation aid only, off by default (the property itself stays strict): excuse the loss of one-way sends whose
 * *sender* host was later shut down, to look past that known bug for others.
 */
const EXCUSE_SENDER_SHUTDOWN = process.env.ZLINK_PROPERTY_EXCUSE_SENDER_SHUTDOWN === '1';
let runCounter = 0;
const stats = { runs: 0, objects: 0, tainted: 0, messages: 0, relocated: 0, blocked: 0, refused: 0 };
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const label = (e: unknown) => (e instanceof Error ? `${e.name}${(e as { kind?: string }).kind ? `(${(e as { kind?: string }).kind})` : ''}: ${e.message}` : String(e));
const keyOf = (ref: ObjectRef) => ('actor' in ref ? `actor:${ref.actor}` : `spot:${ref.spot}`);

async function run(scenario: Scenario): Promise<void> {
  const runId = ++runCounter;
  const stores: Stores = memoryStores();
  const logs: string[] = [];
  const problems: string[] = [];
  const trace: string[] = [];
  const hosts: FrameworkRuntime[] = [];
  const names = [0, 1, 2].map((i) => `r${runId}-h${i}`);
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    for (const nodeId of names)
      hosts.push(
        await createRuntime({
          nodeId,
          applicationVersion: 1,
          stores,
          types: TYPES,
          timing: TIMING,
          log: (level, message, error) => void logs.push(`${nodeId} ${level} ${message}${error ? ` (${label(error)})` : ''}`),
        }),
      );
    const anchor = scenario.anchor;
    const others = [0, 1, 2].filter((i) => i !== anchor);
    const anchorHost = hosts[anchor]!;
    const shutdownCalled = new Set<number>();
    const relocating = new Map<number, number>(); // host → relocate calls in flight
    const objects: Obj[] = [];
    const sent: Sent[] = [];
    const seqs = new Map<string, number>(); // `${sender}|${key}` → next n
    const pending = new Map<number, string>(); // id → description of an operation not yet settled
    const all: Promise<unknown>[] = [];
    let nextPending = 0;
    let objCounter = 0;

    const track = (what: string, p: Promise<unknown>): Promise<unknown> => {
      const id = nextPending++;
      pending.set(id, what);
      const done = p.then(
        () => void pending.delete(id),
        (e: unknown) => {
          pending.delete(id);
          problems.push(`${what}: unexpected rejection ${label(e)}`);
        },
      );
      all.push(done);
      return done;
    };
    const isRefusal = (e: unknown) => e instanceof AdmissionError || e instanceof RequestError || (e instanceof Error && e.name === 'ArgumentError');
    const targets = () => objects.filter((o) => o.created && o.target);
    const spots = () => objects.filter((o) => o.created && o.kind !== 'actor');
    const actors = () => objects.filter((o) => o.created && o.kind === 'actor');
    const owner = async (ref: ObjectRef) => (await anchorHost.locate(ref))?.nodeId;
    const hostByName = (nodeId: string | undefined) => (nodeId === undefined ? undefined : names.indexOf(nodeId));

    /** Creates an object on host h (or in a spot); marks it tainted if its host's Shutdown was called meanwhile. */
    const create = (h: number, kind: Obj['kind'], spot: Obj | undefined): Promise<void> => {
      const name = `${kind[0]}${objCounter++}`;
      const ref: ObjectRef = kind === 'actor' ? { actor: name } : { spot: name };
      const obj: Obj = { ref, name, kind, created: false, tainted: undefined, target: kind !== 'lobby' };
      const host = hosts[h]!;
      const call =
        kind === 'actor' ? host.createActor('Acc', name, spot ? { spot: spot.name } : undefined) : host.createSpot(kind === 'room' ? 'Room' : 'Lobby', name);
      return call.then(
        () => {
          obj.created = true;
          if (shutdownCalled.has(h)) obj.tainted = `created on ${names[h]} after its Shutdown was called`;
          objects.push(obj);
          trace.push(`created ${name} on ${names[h]}${spot ? ` in ${spot.name}` : ''}`);
        },
        (e: unknown) => {
          if (!isRefusal(e)) throw e;
          trace.push(`create ${name} on ${names[h]} refused: ${label(e)}`);
        },
      );
    };

    const shutdown = async (h: number, why: string): Promise<void> => {
      if (shutdownCalled.has(h)) {
        const r = await hosts[h]!.shutdown({ deadlineMs: SHUTDOWN_DEADLINE_MS });
        if (!isValidTerminationResult(r.outcome, r.reason)) problems.push(`repeated shutdown ${names[h]}: invalid result ${JSON.stringify(r)}`);
        return;
      }
      shutdownCalled.add(h);
      // Which objects may be on h when the seal lands: located on h, or on a host whose relocation is still moving
      // units (its target may be h; the Location Store lags the move until the target's CAS).
      const located = await Promise.all(objects.map(async (o) => [o, await owner(o.ref)] as const));
      const moving = new Set<number>(relocating.keys());
      for (let i = 0; i < 3; i++) {
        if (shutdownCalled.has(i) && i !== h) continue;
        const d = hosts[i]!.diagnostics();
        if (d.units.sourceInFlight > 0 || d.units.targetInFlight > 0) for (let j = 0; j < 3; j++) moving.add(j);
      }
      for (const [o, at] of located) {
        const ah = hostByName(at);
        if (o.tainted) continue;
        if (ah === h) o.tainted = `owned by ${names[h]} when its Shutdown was called (${why})`;
        else if (ah !== undefined && moving.has(ah)) o.tainted = `on ${at}, moving while ${names[h]} was shut down (${why})`;
        else if (ah === undefined) o.tainted = `not located when ${names[h]} was shut down (${why})`;
      }
      const r = await hosts[h]!.shutdown({ deadlineMs: SHUTDOWN_DEADLINE_MS });
      trace.push(`shutdown ${names[h]} (${why}) → ${JSON.stringify(r)}`);
      if (!isValidTerminationResult(r.outcome, r.reason)) problems.push(`shutdown ${names[h]}: invalid result ${JSON.stringify(r)}`);
    };

    const relocate = async (h: number, thenShutdown: boolean): Promise<void> => {
      relocating.set(h, (relocating.get(h) ?? 0) + 1);
      let r: RelocationResult;
      try {
        r = await hosts[h]!.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: RELOCATE_DEADLINE_MS });
      } finally {
        const left = relocating.get(h)! - 1;
        if (left) relocating.set(h, left);
        else relocating.delete(h);
      }
      trace.push(`relocate ${names[h]} → ${JSON.stringify(r)}`);
      if (!isValidRelocationResult(r.outcome, r.reason) || r.mode !== RelocationMode.PlannedMaintenance || r.targetApplicationVersion !== 1)
        problems.push(`relocate ${names[h]}: invalid result ${JSON.stringify(r)}`);
      if (thenShutdown && r.outcome === RelocationOutcome.Relocated) await shutdown(h, 'after Relocated');
    };

    const nextSeq = (sender: string, obj: Obj) => {
      const k = `${sender}|${keyOf(obj.ref)}`;
      const n = seqs.get(k) ?? 0;
      seqs.set(k, n + 1);
      return n;
    };

    for (const c of scenario.setup) await create(c.host, c.kind, undefined);

    // ── interpret the operations ──
    for (const [i, op] of scenario.ops.entries()) {
      const step = `#${i} ${JSON.stringify(op)}`;
      let p: Promise<unknown> | undefined;
      let wait = false;
      switch (op.t) {
        case 'create':
          p = create(op.host, op.kind, undefined);
          wait = op.wait;
          break;
        case 'member': {
          const ss = spots();
          if (!ss.length) break;
          const spot = ss[op.spot % ss.length]!;
          wait = op.wait;
          p = (async () => {
            const h = hostByName(await owner(spot.ref));
            if (h === undefined || h < 0) return void trace.push(`member of ${spot.name}: spot not located`);
            await create(h, 'actor', spot);
          })();
          break;
        }
        case 'join': {
          const as = actors();
          const ss = spots();
          if (!as.length || !ss.length) break;
          const actor = as[op.actor % as.length]!;
          const spot = ss[op.spot % ss.length]!;
          wait = op.wait;
          p = (async () => {
            const [ha, hs] = [hostByName(await owner(actor.ref)), hostByName(await owner(spot.ref))];
            if (ha === undefined || ha < 0 || ha !== hs) return void trace.push(`join ${actor.name} ${spot.name}: not on one host`);
            await hosts[ha]!.join(actor.name, spot.name).then(
              () => void trace.push(`joined ${actor.name} to ${spot.name} on ${names[ha]}`),
              (e: unknown) => {
                if (!isRefusal(e)) throw e;
                trace.push(`join ${actor.name} ${spot.name} refused: ${label(e)}`);
              },
            );
          })();
          break;
        }
        case 'send': {
          const ts = targets();
          if (!ts.length) break;
          const obj = ts[op.to % ts.length]!;
          const sender = names[op.from]!;
          for (let c = 0; c < op.count; c++) {
            const n = nextSeq(sender, obj);
            try {
              hosts[op.from]!.send(obj.ref, { op: 'seq', from: sender, n } satisfies Msg);
              sent.push({ obj, sender, n, kind: 'send', mustArrive: true });
            } catch (e) {
              if (!isRefusal(e)) problems.push(`${step}: send threw ${label(e)}`);
              trace.push(`send ${sender}→${obj.name} #${n} refused: ${label(e)}`);
            }
          }
          break;
        }
        case 'stream': {
          const ts = targets();
          if (!ts.length) break;
          const obj = ts[op.to % ts.length]!;
          const sender = names[op.from]!;
          p = (async () => {
            for (let c = 0; c < op.count; c++) {
              const n = nextSeq(sender, obj);
              try {
                hosts[op.from]!.send(obj.ref, { op: 'seq', from: sender, n } satisfies Msg);
                sent.push({ obj, sender, n, kind: 'send', mustArrive: true });
              } catch (e) {
                if (!isRefusal(e)) problems.push(`${step}: send threw ${label(e)}`);
                trace.push(`stream ${sender}→${obj.name} #${n} refused: ${label(e)}`);
              }
              await sleep(op.everyMs);
            }
          })();
          break;
        }
        case 'request': {
          const ts = targets();
          if (!ts.length) break;
          const obj = ts[op.to % ts.length]!;
          const sender = names[op.from]!;
          const n = nextSeq(sender, obj);
          const rec: Sent = { obj, sender, n, kind: 'request', mustArrive: false };
          sent.push(rec);
          wait = op.wait;
          p = hosts[op.from]!.request(obj.ref, { op: 'seq', from: sender, n } satisfies Msg, { timeoutMs: REQUEST_TIMEOUT_MS }).then(
            (reply) => {
              rec.mustArrive = true;
              if (reply !== n) problems.push(`request ${sender}→${obj.name} #${n}: reply ${JSON.stringify(reply)}`);
            },
            (e: unknown) => {
              if (!(e instanceof RequestError || e instanceof AdmissionError)) throw e;
              trace.push(`request ${sender}→${obj.name} #${n} rejected: ${label(e)}`);
              if (e instanceof RequestError && e.kind === 'timeout' && !obj.tainted)
                problems.push(`request ${sender}→${obj.name} #${n} timed out after ${REQUEST_TIMEOUT_MS} ms (lost or stuck)`);
            },
          );
          break;
        }
        case 'relocate':
          p = relocate(others[op.host]!, op.thenShutdown);
          wait = op.wait;
          break;
        case 'shutdown':
          p = shutdown(others[op.host]!, 'without relocation');
          wait = op.wait;
          break;
        case 'pause':
          await sleep(op.ms);
          break;
      }
      if (p) {
        const tracked = track(step, p);
        if (wait) await tracked;
      }
    }

    // ── settle: everything started ends, then no unit is in flight ──
    const everything = Promise.all(all);
    let settleTimer: NodeJS.Timeout | undefined;
    const settled = await Promise.race([
      everything.then(() => true),
      new Promise<boolean>((r) => (settleTimer = setTimeout(() => r(false), SETTLE_MS))),
    ]);
    clearTimeout(settleTimer);
    if (!settled) problems.push(`hang: still pending after ${SETTLE_MS} ms: ${[...pending.values()].join('; ')}`);
    const running = [0, 1, 2].filter((i) => !shutdownCalled.has(i));
    for (const i of running)
      if (hosts[i]!.status.state !== FrameworkRuntimeState.Serving && hosts[i]!.status.state !== FrameworkRuntimeState.Relocated)
        problems.push(`${names[i]} ends in state ${hosts[i]!.status.state}`);
    const quiet = () => running.every((i) => hosts[i]!.diagnostics().units.sourceInFlight === 0 && hosts[i]!.diagnostics().units.targetInFlight === 0);
    const until = Date.now() + CONVERGE_MS;
    while (!quiet() && Date.now() < until) await sleep(10);
    if (!quiet()) problems.push(`units still in flight ${CONVERGE_MS} ms after every call settled`);

    // ── check every object ──
    const runningRefs = new Map(running.map((i) => [names[i]!, hosts[i]!.lifecycleGeneration]));
    for (const obj of objects) {
      const expect = sent.filter((s) => s.obj === obj);
      const deadline = Date.now() + CONVERGE_MS;
      let verdict: string | undefined;
      for (;;) {
        verdict = await checkObject(obj, expect);
        if (verdict === undefined || Date.now() > deadline) break;
        await sleep(25);
      }
      if (verdict) problems.push(`${obj.name}${obj.tainted ? ` [tainted: ${obj.tainted}]` : ''}: ${verdict}`);
    }

    async function checkObject(obj: Obj, expect: Sent[]): Promise<string | undefined> {
      const at = await anchorHost.locate(obj.ref);
      const onRunning = at !== undefined && runningRefs.get(at.nodeId) === at.lifecycleGeneration;
      if (!onRunning) {
        if (obj.tainted) return undefined; // legitimately gone with its host
        return at ? `owned by ${at.nodeId}/${at.lifecycleGeneration}, which is not a running host` : 'not located (no owner record)';
      }
      if (!obj.target) return undefined;
      let ledger: { seen: Record<string, number[]>; node: string };
      try {
        ledger = (await anchorHost.request(obj.ref, { op: 'ledger' } satisfies Msg, { timeoutMs: 2000 })) as typeof ledger;
      } catch (e) {
        return `located on ${at.nodeId} but does not answer: ${label(e)}`;
      }
      if (ledger.node !== at.nodeId) return `located on ${at.nodeId} but answered from ${ledger.node}`;
      for (const [sender, seen] of Object.entries(ledger.seen)) {
        for (let k = 1; k < seen.length; k++)
          if (seen[k]! <= seen[k - 1]!)
            return `from ${sender}: ${seen.includes(seen[k]!, 0) && seen.indexOf(seen[k]!) < k ? 'processed twice' : 'reordered'} — processed ${JSON.stringify(seen)}`;
      }
      if (obj.tainted) return undefined;
      const missing = expect.filter(
        (s) => s.mustArrive && !(EXCUSE_SENDER_SHUTDOWN && s.kind === 'send' && shutdownCalled.has(names.indexOf(s.sender))) && !(ledger.seen[s.sender] ?? []).includes(s.n),
      );
      if (missing.length)
        return `lost ${missing.map((s) => `${s.kind} ${s.sender}#${s.n}`).join(', ')} — processed ${JSON.stringify(ledger.seen)}`;
      return undefined;
    }

    stats.runs++;
    stats.objects += objects.length;
    stats.tainted += objects.filter((o) => o.tainted).length;
    stats.messages += sent.length;
    stats.relocated += trace.filter((t) => t.startsWith('relocate') && t.includes('"outcome":0')).length;
    stats.blocked += trace.filter((t) => t.startsWith('relocate') && t.includes('"outcome":1')).length;
    stats.refused += trace.filter((t) => t.includes('refused') || t.includes('rejected')).length;
    if (process.env.ZLINK_PROPERTY_TRACE === '1') console.log([`run ${runId}`, ...scenario.ops.map((o) => JSON.stringify(o)), '--', ...trace].join('\n'));
    if (unhandled.length) problems.push(`unhandled rejections: ${unhandled.map(label).join('; ')}`);
    if (problems.length) {
      throw new Error(
        [`run ${runId} (anchor ${names[anchor]}) failed:`, ...problems.map((p) => `  ✗ ${p}`), 'trace:', ...trace.map((t) => `  ${t}`), 'runtime log (first 30):', ...logs.slice(0, 30).map((l) => `  ${l}`)].join('\n'),
      );
    }
  } finally {
    await Promise.all(hosts.map((h) => h.shutdown({ deadlineMs: SHUTDOWN_DEADLINE_MS }).catch(() => undefined)));
    await stores.close();
    // late rejections of this run still count while we are here
    await sleep(0);
    process.off('unhandledRejection', onUnhandled);
  }
}

// ── the property ─────────────────────────────────────────────────────────────────────────────

const RUNS = Number(process.env.ZLINK_PROPERTY_RUNS ?? 200);
const SEED = process.env.ZLINK_PROPERTY_SEED ? Number(process.env.ZLINK_PROPERTY_SEED) : undefined;
const PATH = process.env.ZLINK_PROPERTY_PATH;
/** endOnFailure keeps `npm test` fast; ZLINK_PROPERTY_SHRINK=1 lets fast-check shrink the counterexample instead. */
const SHRINK = process.env.ZLINK_PROPERTY_SHRINK === '1';

describe('no loss across random interleavings (memory stack, three hosts)', () => {
  test(
    'every object ends on one running host with its state; nothing lost, duplicated or reordered; every request ends once',
    async () => {
      await fc.assert(
        fc.asyncProperty(scenarioArb, (s) => run(s)),
        { numRuns: RUNS, endOnFailure: !SHRINK, verbose: SHRINK ? 1 : 0, ...(SEED !== undefined ? { seed: SEED } : {}), ...(PATH ? { path: PATH } : {}) },
      );
    },
    Math.max(120_000, RUNS * 2000),
  );
  afterAll(() => {
    if (process.env.ZLINK_PROPERTY_STATS === '1') console.log(`property stats: ${JSON.stringify(stats)}`);
  });
});
