/**
 * The runtime side of the model-based tests: real hosts (createRuntime) on the memory stack — one memoryStores()
 * per path and the in-process transport — with fault hooks only at the boundaries a deployment also has: a Stores
 * view whose calls can be held, failed or answered differently, a transport whose messages can be dropped, a
 * SimulatedClock, and application types whose handlers and callbacks wait for the test.
 *
 * A Gate holds whatever waits on it until the test opens it (with a value) or fails it: a step of the runtime that
 * waits on a gate stays in its machine state while the test looks at the public surface, then goes on the way the
 * path says.
 */
import {
  createRuntime,
  defineActor,
  defineSpot,
  disableRelocation,
  memoryStores,
  preserveState,
  SimulatedClock,
  StoreUnavailableError,
  type FrameworkRuntime,
  type RuntimeOptions,
  type Stores,
} from '../../../runtime';
import type { ObjectDefinition } from '../../../runtime/definitions';
import type { CasResult, ClaimRequest, NodeDescriptor, NodeRef, ObjectId, OwnerCommitRequest, RemoveRequest } from '../../../stores/types';
import { createTransport } from '../../../transport';
import type { RuntimeMessage, Transport, TransportFactory } from '../../../transport/types';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const tick = () => new Promise<void>((r) => setImmediate(r));

/** Something the runtime waits on until the test decides: open (with a value) or fail. */
export class Gate<T = void> {
  private outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
  private waiters: { resolve: (v: T) => void; reject: (e: unknown) => void }[] = [];
  /** How many calls reached the gate so far. */
  reached = 0;

  wait(): Promise<T> {
    this.reached++;
    if (this.outcome) return this.outcome.ok ? Promise.resolve(this.outcome.value) : Promise.reject(this.outcome.error);
    return new Promise<T>((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  get decided(): boolean {
    return this.outcome !== undefined;
  }

  open(value: T): void {
    if (this.outcome) return;
    this.outcome = { ok: true, value };
    for (const w of this.waiters.splice(0)) w.resolve(value);
  }

  fail(error: unknown): void {
    if (this.outcome) return;
    this.outcome = { ok: false, error };
    for (const w of this.waiters.splice(0)) w.reject(error);
  }
}

/** A store failure as the real stores report one. */
export const storeDown = (what: string) => new StoreUnavailableError(`injected: ${what} has no answer`);

/**
 * Boundary hooks of one host's Stores view; set or cleared at any time. A hook runs before the real call and may
 * wait (a gate), throw or reject (a failure); `renew`/`commitOwners` may also replace the answer.
 */
export interface StoreHooks {
  ping?: () => Promise<void> | void;
  renew?: () => boolean | undefined;
  publish?: (descriptor: NodeDescriptor) => Promise<void> | void;
  list?: () => Promise<void> | void;
  release?: () => Promise<void> | void;
  get?: (object: ObjectId) => Promise<void> | void;
  claim?: (request: ClaimRequest) => Promise<void> | void;
  remove?: (request: RemoveRequest) => Promise<void> | void;
  /** Replaces the results of a relocation target's owner commit (undefined: the real call). */
  commitOwners?: (request: OwnerCommitRequest) => CasResult[] | undefined;
}

/** The real stores, with `hooks` in front of the calls named there. */
export function hookedStores(inner: Stores, hooks: StoreHooks): Stores {
  const d = inner.descriptors;
  const l = inner.location;
  return {
    provider: inner.provider,
    relocation: inner.relocation,
    channels: inner.channels,
    close: () => inner.close(),
    ping: async () => {
      await hooks.ping?.();
      return inner.ping();
    },
    descriptors: {
      nextLifecycleGeneration: (nodeId) => d.nextLifecycleGeneration(nodeId),
      acquire: (descriptor, leaseMs) => d.acquire(descriptor, leaseMs),
      renew: async (lease, leaseMs) => {
        const forced = hooks.renew?.();
        return forced ?? d.renew(lease, leaseMs);
      },
      publish: async (lease, descriptor) => {
        await hooks.publish?.(descriptor);
        return d.publish(lease, descriptor);
      },
      release: async (lease) => {
        await hooks.release?.();
        return d.release(lease);
      },
      list: async () => {
        await hooks.list?.();
        return d.list();
      },
    },
    location: {
      get: async (o) => {
        await hooks.get?.(o);
        return l.get(o);
      },
      getMany: (o) => l.getMany(o),
      claim: async (request) => {
        await hooks.claim?.(request);
        return l.claim(request);
      },
      cas: (request) => l.cas(request),
      casMany: (requests) => l.casMany(requests),
      commitOwners: async (request) => hooks.commitOwners?.(request) ?? l.commitOwners(request),
      remove: async (request) => {
        await hooks.remove?.(request);
        return l.remove(request);
      },
      stageAggregate: (r) => l.stageAggregate(r),
      commitAggregate: (r) => l.commitAggregate(r),
      discardAggregate: (r, s) => l.discardAggregate(r, s),
    },
  };
}

/** Transport hooks of one host: what it sends or receives can be dropped; `seal` may throw (a transport defect). */
export interface TransportHooks {
  /** true: the runtime message is not sent (send answers false, as for a connection that is gone). */
  dropOutbound?: (peer: NodeRef, message: RuntimeMessage) => boolean;
  /** true: the runtime message that arrived is not handed to the host (lost on the way). */
  dropInbound?: (from: NodeRef, message: RuntimeMessage) => boolean;
  seal?: () => void;
}

export function hookedTransport(hooks: TransportHooks, box: { transport?: Transport } = {}): TransportFactory {
  return (options) => {
    const inner = createTransport({
      ...options,
      handlers: {
        ...options.handlers,
        onMessage: (from, message) => {
          if (hooks.dropInbound?.(from, message)) return;
          options.handlers.onMessage(from, message);
        },
      },
    });
    const transport: Transport = Object.assign(Object.create(inner) as Transport, {
      send: (peer: NodeRef, message: RuntimeMessage) => (hooks.dropOutbound?.(peer, message) ? false : inner.send(peer, message)),
      seal: () => {
        hooks.seal?.();
        inner.seal();
      },
    });
    box.transport = transport;
    return transport;
  };
}

/** Short timings: nothing here waits on a real timer for long (simulated hosts advance only when told). */
export const MODEL_TIMING = {
  discoveryIntervalMs: 20,
  messageFollowDurationMs: 5_000,
  relocationCutoverWaitTimeoutMs: 1_000,
  restoreValidityMs: 60_000,
  // The memory stores expire leases on real time: long enough that a simulated host never loses its lease by itself.
  leaseMs: 60_000,
};

export interface ProbeState {
  id: string;
  n: number;
}

export type ProbeMessage = { op: 'where' } | { op: 'add' } | { op: 'get' } | { op: 'hold'; gate: string };

export interface HostSpec {
  nodeId: string;
  /** A SimulatedClock host only moves its time when the test does. */
  clock?: SimulatedClock;
  storeHooks?: StoreHooks;
  transportHooks?: TransportHooks;
  inspect?: RuntimeOptions['inspect'];
  timing?: Partial<typeof MODEL_TIMING>;
  /** Types as this host runs them (a target's Restore may fail for poisoned ids). */
  role?: 'source' | 'target';
  log?: RuntimeOptions['log'];
}

/** One path's world: its stores, gates, hosts and clocks. */
export class World {
  readonly stores = memoryStores();
  readonly hosts: FrameworkRuntime[] = [];
  readonly clocks: SimulatedClock[] = [];
  /** Object ids whose Restore (or factory, for PerActor shells) fails on a target host. */
  readonly poisoned = new Set<string>();
  /** What the runtimes logged (the tests assert outcomes; logs are kept for failure messages). */
  readonly logs: string[] = [];
  private readonly gates = new Map<string, Gate<unknown>>();
  private readonly pending: Promise<unknown>[] = [];

  gate<T = void>(name: string): Gate<T> {
    let g = this.gates.get(name);
    if (!g) this.gates.set(name, (g = new Gate<unknown>()));
    return g as Gate<T>;
  }

  /** Keeps a promise the test does not await now (a relocate or shutdown call); its rejection is not unhandled. */
  keep<T>(promise: Promise<T>): Promise<T> {
    this.pending.push(promise.catch(() => undefined));
    return promise;
  }

  /** The application types, as a source or a target host runs them. */
  types(role: 'source' | 'target'): ObjectDefinition[] {
    const world = this;
    const restoreOrFail = (bytes: Buffer): ProbeState => {
      const state = JSON.parse(bytes.toString('utf8')) as ProbeState;
      if (role === 'target' && world.poisoned.has(state.id)) throw new Error(`injected: ${state.id} cannot be restored on this target`);
      return state;
    };
    const relocation = preserveState<ProbeState>({ adapter: 'probe-v1', capture: (s) => Buffer.from(JSON.stringify(s)), restore: restoreOrFail });
    const create = (id: string): ProbeState => {
      // A PerActor shell carries no state: its target runs the factory (§9), which fails for a poisoned id.
      if (role === 'target' && world.poisoned.has(id)) throw new Error(`injected: ${id} cannot be created on this target`);
      return { id, n: 0 };
    };
    const receive = (state: ProbeState, message: ProbeMessage, ctx: { nodeId: string }): unknown => {
      switch (message.op) {
        case 'where':
          return ctx.nodeId;
        case 'add':
          return ++state.n;
        case 'get':
          return state.n;
        case 'hold':
          // A turn that ends when the test opens the gate: the object's relocation unit waits for this safe point (§7).
          return world.gate(message.gate).wait().then(() => 'released');
      }
    };
    const closing = (_state: ProbeState, reason: string, ctx: { id: string }) =>
      reason === 'HostShutdown' && world.gates.has(`closing:${ctx.id}`) ? world.gate(`closing:${ctx.id}`).wait() : undefined;
    return [
      defineActor<ProbeState>({ type: 'Item', relocation, create, receive }),
      defineActor<ProbeState>({ type: 'Pinned', relocation: disableRelocation(), create, receive }),
      defineSpot<ProbeState>({ type: 'Shell', kind: 'user', executionMode: 'PerActor', relocation, create, receive, onClosing: closing }),
      defineSpot<ProbeState>({ type: 'Group', kind: 'user', executionMode: 'SpotWide', relocation, create, receive, onClosing: closing }),
      // An Instance Spot (created by its first message; closable with closeSpot, §12).
      defineSpot<ProbeState>({ type: 'Piece', kind: 'instance', relocation, create, receive, onClosing: closing }),
    ];
  }

  async host(spec: HostSpec): Promise<FrameworkRuntime> {
    const stores = spec.storeHooks ? hookedStores(this.stores, spec.storeHooks) : this.stores;
    if (spec.clock) this.clocks.push(spec.clock);
    const log: RuntimeOptions['log'] = spec.log ?? ((level, message) => void this.logs.push(`${spec.nodeId} ${level}: ${message}`));
    const host = await this.nudging(
      createRuntime({
        nodeId: spec.nodeId,
        applicationVersion: 1,
        stores,
        types: this.types(spec.role ?? 'source'),
        timing: { ...MODEL_TIMING, ...spec.timing },
        log,
        ...(spec.clock ? { clock: spec.clock } : {}),
        ...(spec.inspect ? { inspect: spec.inspect } : {}),
        ...(spec.transportHooks ? { transport: hookedTransport(spec.transportHooks) } : {}),
      }),
    );
    this.hosts.push(host);
    return host;
  }

  /** Moves every simulated clock on by `ms` (their discovery, lease renewal, expiry queues and deadlines). */
  advance(ms: number): void {
    for (const clock of this.clocks) clock.increment(ms);
  }

  /**
   * Awaits `promise` while letting simulated hosts discover and connect (their clocks move by one discovery
   * interval per turn); real hosts move on their own.
   */
  async nudging<T>(promise: Promise<T>, step = MODEL_TIMING.discoveryIntervalMs, ms = 15_000): Promise<T> {
    let done = false;
    const result = promise.finally(() => (done = true));
    result.catch(() => undefined);
    const end = Date.now() + ms;
    while (!done) {
      if (Date.now() > end) throw new Error(`still waiting after ${ms} ms (real time)`);
      await sleep(2);
      if (!done) this.advance(step);
    }
    return result;
  }

  /** Opens every gate, waits for the calls the test kept, shuts every host down and closes the stores. */
  async close(): Promise<void> {
    for (const g of this.gates.values()) g.open(undefined);
    await this.nudging(Promise.all(this.pending));
    await this.nudging(Promise.all(this.hosts.map((h) => h.shutdown({ deadlineMs: 5_000 }).catch(() => undefined))), 50);
    await this.stores.close();
  }
}

/** Polls `check` (real time) until it holds; `onPoll` may move simulated time between polls. */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000, onPoll?: () => void): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
    onPoll?.();
  }
}
