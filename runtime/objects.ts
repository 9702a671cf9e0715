/**
 * The Object Server of one host: the Entry Spot, Actors, User Spots (SpotWide / PerActor) and Instance Spots,
 * their lanes, timers and membership. Location Store claims for creation live here too, because a local
 * instance exists only once its record names this host.
 */
import { randomUUID } from 'node:crypto';
import type { LocationStore, NodeRef, OwnerRecord, RelocationStore } from '../stores/types';
import type { Clock } from './clock';
import type { ChannelApi, ObjectContext, ObjectRef, RelocationReadyHandle, RequestOptions, SessionsApi, SpotContext } from './context';
import type { ActorDefinition, ClosingReason, ObjectDefinition, ReadyCompletion, SpotDefinition } from './definitions';
import { decodeValue, encodeValue } from './codec';
import type { Envelope } from './envelope';
import { AdmissionError, ArgumentError } from './errors';
import { actorKey, refOf, spotKey, type ObjectKey } from './keys';
import { Lane, type WorkItem } from './lane';
import { TimerTable, type TimerOwner } from './timers';
import type { RuntimeLog } from './logger';

export type HostedMode = 'entry' | 'member' | 'SpotWide' | 'PerActor' | 'instance';

export interface Terminal {
  readonly ok: boolean;
  /** The reply, encoded when the handler returned (runtime/codec.ts); decoded where the request settles. */
  readonly value?: Uint8Array;
  readonly error?: string;
  readonly kind?: 'handler' | 'not-found' | 'stale-generation' | 'unavailable' | 'shutdown' | 'closed' | 'moving';
}

export interface ObjectServerDeps {
  readonly self: NodeRef;
  readonly clock: Clock;
  readonly location: LocationStore;
  readonly relocationStore: RelocationStore;
  readonly types: ReadonlyMap<string, ObjectDefinition>;
  /** Sends the one terminal of a request back to its caller. */
  reply(env: Envelope, terminal: Terminal): void;
  /** §12: a message for another ObjectGeneration reached an object: a request ends stale-generation, a one-way sender is told. */
  rejectStaleGeneration(env: Envelope, current: number): void;
  send(to: ObjectRef, message: unknown): void;
  request(to: ObjectRef, message: unknown, options?: RequestOptions): Promise<unknown>;
  /** Logical Multicast membership of a Spot (runtime/components/multicast); absent: Channels are not available. */
  channels?: {
    join(spot: { spot: string; type?: string }, channel: string): Promise<void>;
    leave(spot: { spot: string; type?: string }, channel: string): Promise<void>;
  };
  readonly logger: RuntimeLog;
}

/**
 * State a host component keeps on one hosted object that moves with it in its relocation unit (STREAM session
 * bindings, §12 "A session connected to an Actor"). Captured into the unit payload at the seal.
 */
export interface ObjectExtension {
  /** The bytes the target's restorer of the same name reads; undefined carries nothing. */
  capture(): Uint8Array | undefined;
}

/** Rebuilds a component's extension on the target from its captured bytes; a throw fails the restore (§11). */
export type ExtensionRestorer = (hosted: Hosted, bytes: Uint8Array) => void;

/** What a Spot (or a host without the sessions component) sees as `ctx.sessions`: nothing bound. */
const NO_SESSIONS: SessionsApi = Object.freeze({ list: () => [], get: () => undefined, broadcast: () => 0 });

/** The extensions of one object as payload bytes, by name (source side of a unit). */
export function captureExtensions(hosted: Hosted): Record<string, Uint8Array> | undefined {
  if (!hosted.ext) return undefined;
  let out: Record<string, Uint8Array> | undefined;
  for (const [name, ext] of hosted.ext) {
    const bytes = ext.capture();
    if (bytes !== undefined) (out ??= {})[name] = bytes;
  }
  return out;
}

/**
 * The context handed to an object's handlers. Its members are getters on one prototype, and the functions are
 * created on first use, then kept (so `const { send } = ctx` works): one context object per hosted object instead of
 * seven closures (issue [6/10] RSS: every hosted Actor paid ~0.5 KB for them, most never used).
 */
class HostedContext implements ObjectContext<unknown>, SpotContext<unknown> {
  private ref: ObjectRef | undefined;
  private sendFn: ObjectContext<unknown>['send'] | undefined;
  private requestFn: ObjectContext<unknown>['request'] | undefined;
  private setStateFn: ObjectContext<unknown>['setState'] | undefined;
  private readyFn: SpotContext<unknown>['relocationReady'] | undefined;
  private channelsApi: ChannelApi | undefined;

  constructor(
    private readonly hosted: Hosted,
    private readonly server: ObjectServer,
  ) {}

  get self(): ObjectRef {
    return (this.ref ??= refOf(this.hosted.key));
  }
  get id(): string {
    return this.hosted.id;
  }
  get nodeId(): string {
    return this.server.self.nodeId;
  }
  get spotId(): string | undefined {
    return this.hosted.spotId;
  }
  get timers(): TimerTable {
    return this.hosted.timers;
  }
  get signal(): AbortSignal | undefined {
    return this.hosted.closingSignal;
  }
  get members(): readonly string[] {
    return this.hosted.members ? [...this.hosted.members] : [];
  }
  get sessions(): SessionsApi {
    return this.server.sessionsApi(this.hosted);
  }
  get send(): ObjectContext<unknown>['send'] {
    const server = this.server;
    return (this.sendFn ??= (to, message) => server.deps.send(to, message));
  }
  get request(): ObjectContext<unknown>['request'] {
    const server = this.server;
    return (this.requestFn ??= (to, message, options) => server.deps.request(to, message, options));
  }
  get setState(): ObjectContext<unknown>['setState'] {
    const hosted = this.hosted;
    return (this.setStateFn ??= (next) => {
      hosted.state = next;
    });
  }
  /** Spots only (an Actor's context has no `channels`); an Instance Spot is recorded with its type. */
  get channels(): ChannelApi {
    const { hosted, server } = this;
    if (hosted.kind !== 'spot') return undefined as never;
    return (this.channelsApi ??= (() => {
      const member = hosted.def.kind === 'instance' ? { spot: hosted.id, type: hosted.def.type } : { spot: hosted.id };
      const port = () => {
        if (!server.deps.channels) throw new TypeError('channels: Logical Multicast is not available on this host');
        return server.deps.channels;
      };
      return { join: async (channel) => port().join(member, channel), leave: async (channel) => port().leave(member, channel) };
    })());
  }
  get relocationReady(): SpotContext<unknown>['relocationReady'] {
    const { hosted, server } = this;
    return (this.readyFn ??= (): RelocationReadyHandle => ({ defer: () => server.onDeferSignaled(hosted) }));
  }
}

/** Instance Spot Close (runtime/spot-close): what the owner does with a close request and with arrivals while closing. */
export interface SpotCloseHandler {
  /** A close request reached the Spot on its owner. */
  request(spot: Hosted, env: Envelope): void;
  /** A message reached a Spot that is closing: it ends `closed`. */
  arrived(spot: Hosted, env: Envelope): void;
}

/** One Actor or Spot hosted here. */
export class Hosted implements TimerOwner {
  state: unknown;
  readonly timers: TimerTable;
  /** Ingress hold (§12): set from the seal until the unit ends; arriving messages wait here in order. */
  hold: Envelope[] | undefined;
  /** User Spots: member Actor ids. */
  readonly members: Set<string> | undefined;
  closingSignal: AbortSignal | undefined;
  /**
   * Instance Spot Close (§12, runtime/spot-close): set once a close was accepted, with the close requests that wait
   * for it to end. From then nothing new runs here: what arrives ends `closed`, and no relocation unit takes the Spot.
   */
  closing: Envelope[] | undefined;
  /** Component state that moves with this object (ObjectExtension), by component name; most objects have none. */
  ext: Map<string, ObjectExtension> | undefined;
  readonly ctx: ObjectContext<unknown> & SpotContext<unknown>;

  constructor(
    readonly key: ObjectKey,
    readonly def: ObjectDefinition,
    public mode: HostedMode,
    public lane: Lane,
    public objectGeneration: number,
    public authorityGeneration: number,
    /** Actors: their User Spot (undefined = Entry Spot). */
    public spotId: string | undefined,
    server: ObjectServer,
  ) {
    this.members = def.kind === 'user' ? new Set() : undefined;
    this.timers = new TimerTable(server.clock, this);
    this.ctx = new HostedContext(this, server);
  }

  /** TimerOwner: a due timer's tick joins this object's lane. */
  timerFired(name: string, seq: number): void {
    this.lane.push({ k: 'tick', to: this.key, name, seq });
  }

  get kind(): 'actor' | 'spot' {
    return this.def.kind === 'actor' ? 'actor' : 'spot';
  }

  get id(): string {
    return this.key.slice(2);
  }
}

export class ObjectServer {
  readonly self: NodeRef;
  readonly clock: Clock;
  private readonly objects = new Map<ObjectKey, Hosted>();
  /** Admin work (create, join, leave, placement) in flight: preflight waits for it (§4). */
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Listeners for ApplicationSignaled safe points (the relocation unit of that Spot). */
  readonly deferListeners = new Map<ObjectKey, () => void>();
  /** Instance Spot Close (runtime/spot-close); set by the host. */
  closeHandler: SpotCloseHandler | undefined;
  /**
   * Requests whose handler returned a promise that has not settled: a bounded teardown ends them with a shutdown
   * result (§15 last paragraph: an accepted request ends exactly once, also when its handler never returns).
   */
  private readonly running = new Map<string, Envelope>();
  /** Component hooks (runtime/components): restorers of object extensions, by component name. */
  readonly extensions = new Map<string, ExtensionRestorer>();
  /** STREAM: runs a session envelope (`env.ses`) in the object's turn, beside `receive` (components/sessions). */
  sessionHandler: ((obj: Hosted, env: Envelope) => unknown) | undefined;
  /** STREAM: what `ctx.sessions` is for an object. */
  sessionsApi: (hosted: Hosted) => SessionsApi = () => NO_SESSIONS;

  constructor(readonly deps: ObjectServerDeps) {
    this.self = deps.self;
    this.clock = deps.clock;
  }

  get(key: ObjectKey): Hosted | undefined {
    return this.objects.get(key);
  }

  get size(): number {
    return this.objects.size;
  }

  values(): IterableIterator<Hosted> {
    return this.objects.values();
  }

  /** Work the relocation preflight must see finish first (§4 "concurrently in-progress work"). */
  async settleInFlight(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  /** Admin work that preflight (§4) and Shutdown's drain (§14 step 3) wait for. */
  track<T>(work: Promise<T>): Promise<T> {
    this.inFlight.add(work);
    const done = () => this.inFlight.delete(work);
    work.then(done, done);
    return work;
  }

  definition(type: string): ObjectDefinition {
    const def = this.deps.types.get(type);
    if (!def) throw new ArgumentError('type', `no actor or spot type '${type}' is registered on this host`);
    return def;
  }

  // ── creation and membership ────────────────────────────────────────────────────────────────

  createActor(type: string, id: string, spotId: string | undefined): Promise<void> {
    const def = this.definition(type);
    if (def.kind !== 'actor') throw new ArgumentError('type', `'${type}' is a Spot type; use createSpot`);
    const key = actorKey(id);
    if (this.objects.has(key)) throw new AdmissionError('Serving', `actor '${id}' already exists on this host`);
    let spot: Hosted | undefined;
    if (spotId !== undefined) {
      spot = this.objects.get(spotKey(spotId));
      if (!spot || spot.def.kind !== 'user')
        throw new ArgumentError('options.spot', `no User Spot '${spotId}' is hosted here (Actors are created beside their Spot)`);
    }
    return this.track(this.doCreateActor(def, id, spot));
  }

  private async doCreateActor(def: ActorDefinition, id: string, spot: Hosted | undefined): Promise<void> {
    const key = actorKey(id);
    if (spot) await this.inSpotTurn(spot, () => (spot.def as SpotDefinition).onActorJoin?.(spot.state, id, spot.ctx));
    const spotWide = spot?.mode === 'SpotWide';
    const { applied, record } = await this.deps.location.claim({
      object: { kind: 'actor', id },
      type: def.type,
      owner: this.self,
      opId: randomUUID(),
      spot: spot?.id,
      spotWide: spot ? spotWide : undefined,
    });
    if (!applied) throw new AdmissionError('Serving', `actor '${id}' already exists (owned by ${record.owner.nodeId})`);
    if (this.objects.has(key)) throw new AdmissionError('Serving', `actor '${id}' already exists on this host`);
    const lane = spot && spotWide ? spot.lane : this.newLane();
    const hosted = new Hosted(key, def, spot ? 'member' : 'entry', lane, record.objectGeneration, record.authorityGeneration, spot?.id, this);
    hosted.state = def.create(id);
    this.objects.set(key, hosted);
    if (spot) {
      spot.members!.add(id);
      await this.inSpotTurn(spot, () => (spot.def as SpotDefinition).onJoinedActor?.(spot.state, id, spot.ctx));
    }
  }

  createSpot(type: string, id: string): Promise<void> {
    const def = this.definition(type);
    if (def.kind !== 'user') throw new ArgumentError('type', `'${type}' is not a User Spot type (Instance Spots are created by their first message)`);
    if (this.objects.has(spotKey(id))) throw new AdmissionError('Serving', `spot '${id}' already exists on this host`);
    return this.track(this.doCreateSpot(def, id)).then(() => undefined);
  }

  private async doCreateSpot(def: SpotDefinition, id: string): Promise<Hosted> {
    const { applied, record } = await this.deps.location.claim({ object: { kind: 'spot', id }, type: def.type, owner: this.self, opId: randomUUID() });
    if (!applied) throw new AdmissionError('Serving', `spot '${id}' already exists (owned by ${record.owner.nodeId})`);
    return this.installSpot(def, id, record);
  }

  private installSpot(def: SpotDefinition, id: string, record: OwnerRecord): Hosted {
    const mode: HostedMode = def.kind === 'instance' ? 'instance' : def.executionMode;
    const hosted = new Hosted(spotKey(id), def, mode, this.newLane(), record.objectGeneration, record.authorityGeneration, undefined, this);
    hosted.state = def.create(id);
    this.objects.set(hosted.key, hosted);
    return hosted;
  }

  /**
   * §10.4: an Instance Spot is created only by its first message. Claims the record; a lost race returns
   * the winner's record so the caller routes there.
   */
  placeInstance(type: string, id: string): Promise<{ local: Hosted } | { record: OwnerRecord }> {
    const def = this.definition(type);
    if (def.kind !== 'instance') throw new ArgumentError('to.type', `'${type}' is not an Instance Spot type`);
    return this.track(
      (async () => {
        const existing = this.objects.get(spotKey(id));
        if (existing) return { local: existing };
        const opId = randomUUID();
        const { applied, record } = await this.deps.location.claim({ object: { kind: 'spot', id }, type, owner: this.self, opId });
        if (!applied) return { record };
        const local = this.objects.get(spotKey(id)) ?? this.installSpot(def, id, record);
        await this.deps.relocationStore
          .recordInstanceCreation({ spotId: id, type, owner: this.self, objectGeneration: record.objectGeneration, createdAt: this.clock.now() }, opId)
          .catch((error: unknown) => this.deps.logger.warn({ spot: id, type, err: error }, 'Instance Spot creation record not written to the Relocation Store'));
        return { local };
      })(),
    );
  }

  join(actorId: string, spotId: string): Promise<void> {
    const actor = this.objects.get(actorKey(actorId));
    if (!actor) throw new ArgumentError('actorId', `no actor '${actorId}' is hosted here`);
    const spot = this.objects.get(spotKey(spotId));
    if (!spot || spot.def.kind !== 'user') throw new ArgumentError('spotId', `no User Spot '${spotId}' is hosted here`);
    if (actor.spotId === spotId) return Promise.resolve();
    if (actor.spotId !== undefined) throw new ArgumentError('actorId', `actor '${actorId}' is a member of '${actor.spotId}'; leave it first`);
    return this.track(this.changeMembership(actor, spot));
  }

  leave(actorId: string): Promise<void> {
    const actor = this.objects.get(actorKey(actorId));
    if (!actor) throw new ArgumentError('actorId', `no actor '${actorId}' is hosted here`);
    if (actor.spotId === undefined) return Promise.resolve();
    return this.track(this.changeMembership(actor, undefined));
  }

  private async changeMembership(actor: Hosted, spot: Hosted | undefined): Promise<void> {
    const previous = actor.spotId !== undefined ? this.objects.get(spotKey(actor.spotId)) : undefined;
    if (spot) await this.inSpotTurn(spot, () => (spot.def as SpotDefinition).onActorJoin?.(spot.state, actor.id, spot.ctx));
    // The Actor's current turn ends before its lane can change.
    await actor.lane.pause();
    try {
      const result = await this.deps.location.cas({
        object: { kind: 'actor', id: actor.id },
        opId: randomUUID(),
        expectedAuthorityGeneration: actor.authorityGeneration,
        spot: spot ? spot.id : null,
        spotWide: spot ? spot.mode === 'SpotWide' : false,
      });
      if (result.status !== 'applied') throw new AdmissionError('Serving', `membership of actor '${actor.id}' changed concurrently (${result.status})`);
      actor.authorityGeneration = result.record!.authorityGeneration;
      previous?.members!.delete(actor.id);
      actor.spotId = spot?.id;
      actor.mode = spot ? 'member' : 'entry';
      const nextLane = spot?.mode === 'SpotWide' ? spot.lane : previous?.mode === 'SpotWide' ? this.newLane() : actor.lane;
      if (nextLane !== actor.lane) {
        const queued = actor.lane.take((item) => item.to === actor.key);
        actor.lane.resume();
        actor.lane = nextLane;
        for (const item of queued) nextLane.push(item);
      } else actor.lane.resume();
      spot?.members!.add(actor.id);
    } catch (error) {
      actor.lane.resume();
      throw error;
    }
    if (previous) await this.inSpotTurn(previous, () => (previous.def as SpotDefinition).onLeaveActor?.(previous.state, actor.id, previous.ctx));
    if (spot) await this.inSpotTurn(spot, () => (spot.def as SpotDefinition).onJoinedActor?.(spot.state, actor.id, spot.ctx));
  }

  /** Runs `fn` as one turn of `spot`'s lane and resolves with its result. */
  inSpotTurn<T>(spot: Hosted, fn: () => T | Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      spot.lane.push({
        k: 'ctl',
        to: spot.key,
        run: async () => {
          try {
            resolve(await fn());
          } catch (error) {
            reject(error);
          }
        },
      });
    });
  }

  // ── dispatch ──────────────────────────────────────────────────────────────────────────────

  /** Local delivery. false = no such object here (the router decides: follow, place or bounce). */
  deliver(env: Envelope): boolean {
    const obj = this.objects.get(env.to);
    if (!obj) return false;
    // Instance Spot Close (§12): the owner answers a close itself; a closing Spot takes nothing new.
    if ((env.close || obj.closing) && this.closeHandler) {
      if (env.close) this.closeHandler.request(obj, env);
      else this.closeHandler.arrived(obj, env);
      return true;
    }
    // §12: packets of a previous generation are rejected, never handed to a re-created object (the one check,
    // for routed messages and for the work a relocated unit merges).
    if (env.gen !== 0 && env.gen !== obj.objectGeneration) {
      this.deps.rejectStaleGeneration(env, obj.objectGeneration);
      return true;
    }
    if (obj.hold) obj.hold.push(env);
    // post, not push: the receiver's turn never runs inside the caller's (a handler's local send only enqueues).
    else obj.lane.post({ k: 'msg', to: env.to, env });
    return true;
  }

  execute = (item: WorkItem): unknown => {
    const obj = this.objects.get(item.to);
    if (item.k === 'ctl') return item.run();
    if (!obj) {
      if (item.k === 'msg' && item.env.req) this.deps.reply(item.env, { ok: false, kind: 'not-found', error: `object ${item.to} is not hosted here` });
      return undefined;
    }
    if (item.k === 'tick') {
      if (obj.closing || !obj.timers.beginTick(item.name, item.seq)) return undefined;
      const onTimer = obj.def.onTimer as ((s: unknown, n: string, c: unknown) => unknown) | undefined;
      if (!onTimer) return undefined;
      return this.guard(obj, () => onTimer(obj.state, item.name, obj.ctx), `timer '${item.name}'`);
    }
    const env = item.env;
    if (env.ses) {
      if (this.sessionHandler) return this.sessionHandler(obj, env);
      if (env.req) this.deps.reply(env, { ok: false, kind: 'unavailable', error: 'STREAM sessions are not available on this host' });
      return undefined;
    }
    let result: unknown;
    try {
      // Decoded at the start of the turn: the handler gets its own copy, whatever the caller did since.
      const message = decodeValue(env.body);
      result = (obj.def.receive as (s: unknown, m: unknown, c: unknown) => unknown)(obj.state, message, obj.ctx);
    } catch (error) {
      this.handlerFailed(obj, env, error);
      return undefined;
    }
    if (isThenable(result)) {
      if (env.req) this.running.set(env.id, env);
      return result.then(
        (value) => {
          // Not when a bounded teardown already ended it (endAccepted): a request ends once.
          if (env.req && this.running.delete(env.id)) this.replyWith(env, value);
        },
        (error: unknown) => {
          if (!env.req || this.running.delete(env.id)) this.handlerFailed(obj, env, error);
        },
      );
    }
    if (env.req) this.replyWith(env, result);
    return undefined;
  };

  /** Encodes the reply as the handler returns it (a copy: later state changes never reach the caller). */
  private replyWith(env: Envelope, value: unknown): void {
    let bytes: Uint8Array;
    try {
      bytes = encodeValue(value, 'reply');
    } catch (error) {
      return this.deps.reply(env, { ok: false, kind: 'handler', error: `the reply could not be encoded: ${(error as Error).message}` });
    }
    this.deps.reply(env, { ok: true, value: bytes });
  }

  private handlerFailed(obj: Hosted, env: Envelope, error: unknown): void {
    if (env.req) this.deps.reply(env, { ok: false, kind: 'handler', error: error instanceof Error ? error.message : String(error) });
    else this.deps.logger.warn({ object: obj.key, err: error }, 'handler threw on a one-way message');
  }

  private guard(obj: Hosted, fn: () => unknown, what: string): unknown {
    const fail = (error: unknown) => this.deps.logger.warn({ object: obj.key, callback: what, err: error }, `${what} threw`);
    try {
      const result = fn();
      return isThenable(result) ? result.then(undefined, fail) : result;
    } catch (error) {
      fail(error);
      return undefined;
    }
  }

  newLane(): Lane {
    return new Lane(this.execute);
  }

  onDeferSignaled(spot: Hosted): void {
    const listener = this.deferListeners.get(spot.key);
    if (listener) listener();
    else {
      // §7: no relocation prepared → Continued runs on the source in the next application turn.
      this.runReadyCompleted(spot, 'Continued');
    }
  }

  runReadyCompleted(spot: Hosted, outcome: ReadyCompletion): void {
    const cb = (spot.def as SpotDefinition).onRelocationReadyCompleted;
    if (!cb) return;
    spot.lane.push({ k: 'ctl', to: spot.key, run: () => this.guard(spot, () => cb(spot.state, outcome, spot.ctx), 'onRelocationReadyCompleted') });
  }

  // ── relocation support (units install and remove hosted objects) ───────────────────────

  /** Registers an object restored by a relocation unit (target side). */
  adopt(hosted: Hosted): void {
    this.objects.set(hosted.key, hosted);
    if (hosted.kind === 'actor' && hosted.spotId !== undefined) this.objects.get(spotKey(hosted.spotId))?.members?.add(hosted.id);
  }

  /** Target side of a unit: each captured extension goes to its component's restorer (unknown name: the restore fails). */
  restoreExtensions(hosted: Hosted, ext: Readonly<Record<string, Uint8Array>>): void {
    for (const [name, bytes] of Object.entries(ext)) {
      const restore = this.extensions.get(name);
      if (!restore) throw new Error(`object ${hosted.key} carries '${name}' state, which no component of this host restores`);
      restore(hosted, bytes);
    }
  }

  newHosted(key: ObjectKey, def: ObjectDefinition, mode: HostedMode, lane: Lane, objectGeneration: number, authorityGeneration: number, spotId: string | undefined): Hosted {
    return new Hosted(key, def, mode, lane, objectGeneration, authorityGeneration, spotId, this);
  }

  /** Removes a moved or discarded object from local dispatch. */
  forget(key: ObjectKey): Hosted | undefined {
    const hosted = this.objects.get(key);
    if (!hosted) return undefined;
    this.objects.delete(key);
    hosted.timers.clear();
    if (hosted.kind === 'actor' && hosted.spotId !== undefined) this.objects.get(spotKey(hosted.spotId))?.members?.delete(hosted.id);
    return hosted;
  }

  /**
   * §14 bounded teardown, §15 last paragraph: every request accepted here that has not ended — queued in a lane, or
   * running in a handler that has not returned — is ended through `end` (a shutdown result to its caller), once; a
   * handler that returns later replies nothing. Queued one-way messages go through `end` too (counted, logged).
   */
  endAccepted(end: (env: Envelope) => void): void {
    const lanes = new Set<Lane>();
    for (const o of this.objects.values()) lanes.add(o.lane);
    for (const lane of lanes) for (const item of lane.take((i) => i.k === 'msg')) if (item.k === 'msg') end(item.env);
    for (const o of this.objects.values()) if (o.hold) for (const env of o.hold.splice(0)) end(env);
    const running = [...this.running.values()];
    this.running.clear();
    for (const env of running) end(env);
  }

  /** §14 step 5 done: local scope is cleaned up, so a stopped host the application still holds keeps no workload. */
  releaseAll(): void {
    for (const hosted of this.objects.values()) hosted.timers.clear();
    this.objects.clear();
    this.deferListeners.clear();
  }

  // ── shutdown (§14 steps 3–5) ───────────────────────────────────────────────────────────

  /** Resolves when every lane ran its accepted work. */
  async drain(): Promise<void> {
    const lanes = new Set<Lane>();
    for (const o of this.objects.values()) lanes.add(o.lane);
    await Promise.all([...lanes].map((l) => l.whenIdle()));
  }

  /** §14 step 4: HostShutdown closing context to every User and Instance Spot; rejects if a callback threw. */
  async closeSpots(reason: ClosingReason, signal: AbortSignal): Promise<void> {
    const failures: unknown[] = [];
    const closing: Promise<void>[] = [];
    for (const spot of this.objects.values()) {
      // A Spot being closed by closeSpot gets its Closed callback, not a second one (§12).
      if (spot.kind !== 'spot' || spot.closing) continue;
      const onClosing = (spot.def as SpotDefinition).onClosing;
      if (!onClosing) continue;
      closing.push(
        this.inSpotTurn(spot, async () => {
          spot.closingSignal = signal;
          try {
            await onClosing(spot.state, reason, spot.ctx);
          } finally {
            spot.closingSignal = undefined;
          }
        }).catch((error: unknown) => {
          failures.push(error);
        }),
      );
    }
    await Promise.all(closing);
    if (failures.length) throw new AggregateError(failures, `${failures.length} closing callback(s) threw`);
  }

  stopTimers(): void {
    for (const o of this.objects.values()) o.timers.clear();
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
