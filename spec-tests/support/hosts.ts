/**
 * Hosts for the host-level contract tests (spec 05 §17): one memoryStores() per test, the in-process transport,
 * short timings, and every host shut down at the end. Public API only.
 */
import {
  createRuntime,
  defineActor,
  defineSpot,
  disableRelocation,
  memoryStores,
  preserveState,
  UNIT_CHANGED,
  type FrameworkRuntime,
  type RuntimeOptions,
  type RuntimeStatus,
  type Stores,
  type UnitEvent,
} from '../../runtime';

export const TIMING = { discoveryIntervalMs: 20, messageFollowDurationMs: 200, relocationCutoverWaitTimeoutMs: 100, leaseMs: 3000 };

/** The relocation policy of the test types: the state preserved as JSON. */
export const json = <S>() => preserveState<S>({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString('utf8')) as S });

export type CounterMessage = { op: 'add'; by?: number } | { op: 'get' } | { op: 'where' } | { op: 'fail'; why: string } | { op: 'hang' };

/** A preserved counter; 'where' answers the node that ran the turn, 'fail' throws, 'hang' never ends its turn. */
export const Counter = defineActor<{ n: number }>({
  type: 'Counter',
  relocation: json<{ n: number }>(),
  create: () => ({ n: 0 }),
  receive: (state, message: CounterMessage, ctx) => {
    switch (message.op) {
      case 'add':
        state.n += message.by ?? 1;
        return state.n;
      case 'get':
        return state.n;
      case 'where':
        return ctx.nodeId;
      case 'fail':
        throw new Error(message.why);
      case 'hang':
        return new Promise(() => undefined);
    }
  },
});

/** An Actor whose policy is DisableRelocation (§13: Blocked/RelocationDisabled while it remains). */
export const Pinned = defineActor<{ n: number }>({
  type: 'Pinned',
  relocation: disableRelocation(),
  create: () => ({ n: 0 }),
  receive: (state, message: CounterMessage, ctx) => (message.op === 'where' ? ctx.nodeId : ++state.n),
});

/**
 * A SpotWide User Spot with ApplicationSignaled readiness: it calls relocationReady().defer() only on a
 * { op: 'defer' } turn, so a relocation that includes it stays in Relocating (its unit waits for the safe point)
 * until then, the deadline or a Shutdown ends the operation. Every turn answers { n, node }.
 */
export const Signaled = defineSpot<{ n: number }>({
  type: 'Signaled',
  kind: 'user',
  executionMode: 'SpotWide',
  readiness: 'ApplicationSignaled',
  relocation: json<{ n: number }>(),
  create: () => ({ n: 0 }),
  receive: (state, message: { op?: string } | null, ctx) => {
    if (message?.op === 'defer') ctx.relocationReady().defer();
    return { n: ++state.n, node: ctx.nodeId };
  },
});

export const BASE_TYPES = [Counter, Pinned, Signaled];

/**
 * The closing callbacks of Closer Spots: how many ran, a hook each one calls, and open() to let the waiting ones
 * finish. Per test file (jest gives each its own module registry); useStack resets it around each test.
 */
export const closer = {
  calls: 0,
  onCall: undefined as (() => void) | undefined,
  waiting: [] as (() => void)[],
  /** Lets every closing callback that waits now finish. */
  open(): void {
    for (const release of this.waiting.splice(0)) release();
  },
  /** Opens what waits and forgets the count and the hook. */
  reset(): void {
    this.open();
    this.calls = 0;
    this.onCall = undefined;
  },
};

/** A User Spot whose HostShutdown closing callback waits until `closer.open()`: it holds its host at §14 step 4, after the drain. */
export const Closer = defineSpot<object>({
  type: 'Closer',
  kind: 'user',
  relocation: json(),
  create: () => ({}),
  receive: () => 'ok',
  onClosing: () => {
    closer.calls++;
    closer.onCall?.();
    return new Promise<void>((resolve) => void closer.waiting.push(resolve));
  },
});

export interface HostSet {
  readonly stores: Stores;
  host(options: Omit<RuntimeOptions, 'stores'>): Promise<FrameworkRuntime>;
  /** Shuts every host down (each at most once) and closes the stores. */
  close(): Promise<void>;
}

export function hostSet(): HostSet {
  const stores = memoryStores();
  const hosts: FrameworkRuntime[] = [];
  return {
    stores,
    async host(options) {
      const host = await createRuntime({ types: BASE_TYPES, timing: TIMING, ...options, stores });
      hosts.push(host);
      return host;
    },
    async close() {
      await Promise.all(hosts.map((h) => h.shutdown({ deadlineMs: 2000 }).catch(() => undefined)));
      await stores.close();
    },
  };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Lets pending promise callbacks and I/O callbacks run (SimulatedClock tests advance time between these). */
export async function flush(rounds = 10): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Polls `check` on real time until it holds or `ms` pass. */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** Records every status the host publishes, in order, from now on. */
export function recordStatuses(host: FrameworkRuntime): { values: RuntimeStatus[]; states(): number[]; stop(): void } {
  const values: RuntimeStatus[] = [host.status];
  const controller = new AbortController();
  void (async () => {
    for await (const s of host.observe({ signal: controller.signal })) if (s !== values[values.length - 1]) values.push(s);
  })();
  return {
    values,
    /** Distinct consecutive states. */
    states: () => values.map((v) => v.state).filter((s, i, all) => i === 0 || all[i - 1] !== s),
    stop: () => controller.abort(),
  };
}

/** Records every unit event of the host from now on. */
export function unitEvents(host: FrameworkRuntime): UnitEvent[] {
  const events: UnitEvent[] = [];
  host.on(UNIT_CHANGED, (e) => void events.push(e));
  return events;
}

/** Records how a promise ended, and how often (a promise settles once; this also shows it did at all). */
export function outcome<T>(p: Promise<T>) {
  const r: { settled: number; value?: T; error?: unknown } = { settled: 0 };
  p.then(
    (value) => {
      r.settled++;
      r.value = value;
    },
    (error: unknown) => {
      r.settled++;
      r.error = error;
    },
  );
  return r;
}

/** Captures a settled promise's outcome without letting a rejection go unhandled. */
export function settle<T>(promise: Promise<T>): { done: boolean; value?: T; error?: unknown; promise: Promise<void> } {
  const box: { done: boolean; value?: T; error?: unknown; promise: Promise<void> } = { done: false, promise: Promise.resolve() };
  box.promise = promise.then(
    (value) => {
      box.done = true;
      box.value = value;
    },
    (error: unknown) => {
      box.done = true;
      box.error = error;
    },
  );
  return box;
}
