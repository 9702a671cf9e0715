/**
 * The actor a flat machine runs in when actors of it exist by the hundred thousand: the relocation source's one
 * machine per unit, alive from its turn to S4 (issue [6/10]). It is an xstate `ActorRef` of the parent's system —
 * a child of its parent, with a session id booked there, and sending the inspection events xstate's `Actor` sends in the
 * same order (`@xstate.actor`, `@xstate.event`, `@xstate.action`, `@xstate.microstep` from the logic,
 * `@xstate.snapshot`) — so an inspector and the model-based tests see it as they see any machine actor, and its done
 * event reaches the parent.
 *
 * Why not xstate's `Actor`: each one carries a mailbox, an observer Set, a listener Map, a copy of its options and
 * four closures of its scope, ~1.3 KB that lives as long as the unit (to S4) and so is copied by two scavenges and
 * promoted. Here the actor is its own scope, and observers, listeners and queued events cost nothing until there are
 * any. `npm run bench -- --n 100000`, seven alternated pairs against xstate's `Actor` (2026-12-05): the source's CPU in
 * the move 4.0–4.4 s against 5.3–6.8 s (−26% by the medians), the move 7.4–8.2 s against 8.1–9.5 s (−13%); the machines
 * alone (`unit-machines.bench`, 20k units to S4) 1.5 µs per unit against 11.5.
 *
 * What it leaves out of xstate's `Actor`, on purpose: delayed events (flat logic has no `after`), `systemId`,
 * `syncSnapshot`, devTools and a bound `send` (call it as a method). Only `flatMachineLogic` runs in it.
 */
import { toObserver, type AnyActorRef, type EventObject, type InspectionEvent, type Observer, type Subscription } from 'xstate';
import type { FlatMachineLogic, FlatSnapshot } from './flat-machine';

/**
 * The parts of xstate's actor system every actor uses and the public type does not declare (xstate 5.x). Not
 * `_register` / `_unregister`: in xstate 5 (5.33) they only write a map of session ids that nothing reads (`system.get`
 * reads the systemId map, which a flat actor never enters), and at 100k units that map's inserts were 3% of the
 * source's CPU in the move (`npm run bench -- --n 100000` profile, 2026-12-05) and its entries lived as long as the
 * units. Should a later xstate read that map, a flat actor must register again.
 */
interface SystemInternals {
  _bookId(): string;
  _relay(source: AnyActorRef | undefined, target: AnyActorRef, event: EventObject): void;
  /** Takes any inspection event without its rootId (the system adds it). */
  _sendInspectionEvent(event: { readonly type: InspectionEvent['type']; readonly actorRef: unknown } & Record<string, unknown>): void;
  _logger: (...args: unknown[]) => void;
}

const symbolObservable = ((Symbol as { observable?: symbol }).observable ?? '@@observable') as typeof Symbol.observable;

/** xstate's ProcessingStatus values (an inspector or a parent may read `_processingStatus`). */
const NOT_STARTED = 0;
const RUNNING = 1;
const STOPPED = 2;

interface Action {
  readonly type: string;
  readonly info: unknown;
  readonly params: unknown;
  readonly exec: ((info: unknown, params: unknown) => void) | undefined;
}

/** As xstate: an error nobody listens to is thrown on its own turn, never into the caller. */
function reportUnhandledError(error: unknown): void {
  setTimeout(() => {
    throw error;
  });
}

export interface FlatActorOptions {
  /** The parent actor: its system is this actor's (registration ids, relay, inspection, logger). */
  readonly parent: AnyActorRef;
  readonly id: string;
  /**
   * Whether the system may have an inspection observer (default true). False only where the owner knows none can be
   * added: the relocation's system gets one from the host's `inspect` option at creation, and is never handed out.
   * Then no inspection event is built at all: up to five objects per step that xstate's system would drop unread,
   * and their scavenges, at 100k units (issue [6/10]; create + three steps 4.1 → 2.1 µs per unit in
   * tools/bench/unit-machines.bench.ts). With an observer the events are exactly xstate's.
   */
  readonly inspected?: boolean;
}

export class FlatActor<TEvent extends EventObject, TOutput> {
  readonly id: string;
  readonly sessionId: string;
  readonly system: SystemInternals;
  readonly _parent: AnyActorRef;
  readonly logic: FlatMachineLogic<TEvent, TOutput>;
  _processingStatus: number = NOT_STARTED;
  private snapshot: FlatSnapshot<TOutput>;
  /** Events sent while a step runs or before start (xstate's mailbox), taken in order after it. */
  private queue: EventObject[] | undefined;
  private processing = false;
  /** Entry actions of the initial state, run at start (xstate defers them the same way). */
  private deferred: (() => void)[] | undefined;
  private observers: Set<Observer<FlatSnapshot<TOutput>>> | undefined;
  private listeners: Map<string, Set<(event: EventObject) => void>> | undefined;
  /**
   * Whether the system has an inspection observer (FlatActorOptions.inspected). Without one, no inspection event is
   * built: xstate's system drops them only after each was allocated, several per step (see the option).
   */
  readonly inspected: boolean;

  constructor(logic: FlatMachineLogic<TEvent, TOutput>, options: FlatActorOptions) {
    const system = options.parent.system as unknown as Partial<SystemInternals>;
    if (typeof system._relay !== 'function' || typeof system._sendInspectionEvent !== 'function' || typeof system._bookId !== 'function')
      throw new Error(`FlatActor(${options.id}): the parent's actor system lacks the internals of xstate 5 (_relay, _sendInspectionEvent, _bookId)`);
    this.system = system as SystemInternals;
    this.logic = logic;
    this._parent = options.parent;
    this.id = options.id;
    this.sessionId = this.system._bookId();
    this.inspected = options.inspected ?? true;
    if (this.inspected) this.system._sendInspectionEvent({ type: '@xstate.actor', actorRef: this as never });
    try {
      this.snapshot = logic.getInitialSnapshot(this as never, undefined);
    } catch (error) {
      this.snapshot = { status: 'error', output: undefined, error, value: '', context: undefined } as unknown as FlatSnapshot<TOutput>;
    }
  }

  // ── the actor scope (the actor is its own: no object and closures per actor) ─────────────────

  get self(): this {
    return this;
  }

  get src(): FlatMachineLogic<TEvent, TOutput> {
    return this.logic;
  }

  get logger(): (...args: unknown[]) => void {
    return this.system._logger;
  }

  /** xstate's actionExecutor: inspected, then run — or deferred until start, as the initial state's entry actions. */
  actionExecutor(action: Action): void {
    if (this._processingStatus !== RUNNING) {
      (this.deferred ??= []).push(() => this.runAction(action));
      return;
    }
    this.runAction(action);
  }

  private runAction(action: Action): void {
    if (this.inspected) this.system._sendInspectionEvent({ type: '@xstate.action', actorRef: this as never, action: { type: action.type, params: action.params } });
    action.exec?.(action.info, action.params);
  }

  defer(fn: () => void): void {
    (this.deferred ??= []).push(fn);
  }

  emit(event: EventObject): void {
    const listeners = this.listeners;
    if (!listeners) return;
    for (const handler of [...(listeners.get(event.type) ?? []), ...(listeners.get('*') ?? [])]) {
      try {
        handler(event);
      } catch (error) {
        reportUnhandledError(error);
      }
    }
  }

  stopChild(): void {
    throw new Error(`${this.id}: a flat machine has no children to stop`);
  }

  // ── ActorRef ─────────────────────────────────────────────────────────────────────────────

  start(): this {
    if (this._processingStatus === RUNNING) return this;
    this._processingStatus = RUNNING;
    const init = { type: 'xstate.init', input: undefined };
    if (this.inspected) this.system._sendInspectionEvent({ type: '@xstate.event', sourceRef: this._parent, actorRef: this as never, event: init });
    const status = this.snapshot.status;
    if (status === 'error') {
      this.fail(this.snapshot.error);
      return this;
    }
    this.processing = true;
    try {
      this.update(this.snapshot, init);
    } finally {
      this.processing = false;
    }
    this.drain();
    return this;
  }

  send(event: TEvent): void {
    // The system's relay is the inspection event, then `_send`.
    if (this.inspected) this.system._relay(undefined, this as never, event);
    else this._send(event);
  }

  /** What the system's relay calls (xstate's `_send`): the event is taken now, or after the step that is running. */
  _send(event: EventObject): void {
    if (this._processingStatus === STOPPED) return;
    if (this._processingStatus === NOT_STARTED || this.processing) {
      (this.queue ??= []).push(event);
      return;
    }
    this.processing = true;
    try {
      this.process(event);
    } finally {
      this.processing = false;
    }
    this.drain();
  }

  private drain(): void {
    const queue = this.queue;
    if (!queue || queue.length === 0) return;
    this.processing = true;
    try {
      while (queue.length > 0 && this._processingStatus === RUNNING) this.process(queue.shift()!);
    } finally {
      this.processing = false;
    }
  }

  private process(event: EventObject): void {
    let next: FlatSnapshot<TOutput>;
    try {
      next = this.logic.transition(this.snapshot, event as TEvent, this as never);
    } catch (error) {
      this.snapshot = { ...this.snapshot, status: 'error', error } as unknown as FlatSnapshot<TOutput>;
      this.fail(error);
      return;
    }
    this.update(next, event);
    if (event.type === 'xstate.stop') {
      this.stopProcedure();
      this.complete();
    }
  }

  private update(snapshot: FlatSnapshot<TOutput>, event: EventObject): void {
    this.snapshot = snapshot;
    const deferred = this.deferred;
    if (deferred) {
      this.deferred = undefined;
      for (const fn of deferred) {
        try {
          fn();
        } catch (error) {
          this.snapshot = { ...snapshot, status: 'error', error } as unknown as FlatSnapshot<TOutput>;
          break;
        }
      }
    }
    const current = this.snapshot;
    if (current.status === 'active' || current.status === 'done') this.notify(snapshot);
    if (current.status === 'done') {
      this.stopProcedure();
      this.complete();
      this.relay(this._parent, { type: `xstate.done.actor.${this.id}`, output: current.output, actorId: this.id } as EventObject);
    } else if (current.status === 'error') this.fail(current.error);
    if (this.inspected) this.system._sendInspectionEvent({ type: '@xstate.snapshot', actorRef: this as never, event, snapshot: snapshot as never });
  }

  private notify(snapshot: FlatSnapshot<TOutput>): void {
    if (!this.observers) return;
    for (const observer of this.observers) {
      try {
        observer.next?.(snapshot);
      } catch (error) {
        reportUnhandledError(error);
      }
    }
  }

  private complete(): void {
    const observers = this.observers;
    this.observers = undefined;
    this.listeners = undefined;
    if (observers)
      for (const observer of observers) {
        try {
          observer.complete?.();
        } catch (error) {
          reportUnhandledError(error);
        }
      }
  }

  private fail(error: unknown): void {
    this.stopProcedure();
    const observers = this.observers;
    this.observers = undefined;
    this.listeners = undefined;
    let unheard = false;
    if (observers)
      for (const observer of observers) {
        unheard ||= !observer.error;
        try {
          observer.error?.(error);
        } catch (thrown) {
          reportUnhandledError(thrown);
        }
      }
    if (unheard) reportUnhandledError(error);
    this.relay(this._parent, { type: `xstate.error.actor.${this.id}`, error, actorId: this.id } as EventObject);
  }

  /** An event from this actor to another of the system (the parent): inspected as xstate's relay when observed. */
  private relay(target: AnyActorRef, event: EventObject): void {
    if (this.inspected) this.system._relay(this as never, target, event);
    else (target as unknown as { _send(event: EventObject): void })._send(event);
  }

  private stopProcedure(): void {
    if (this._processingStatus !== RUNNING) return;
    // No delayed events to cancel: flat logic refuses `after`, and nothing here schedules on the system.
    this.queue = undefined;
    this._processingStatus = STOPPED;
  }

  /** The parent stops a child (xstate: `stopChild`); a child is never stopped directly. */
  _stop(): this {
    if (this._processingStatus === STOPPED) return this;
    this.queue = undefined;
    if (this._processingStatus === NOT_STARTED) {
      this._processingStatus = STOPPED;
      return this;
    }
    this._send({ type: 'xstate.stop' });
    return this;
  }

  stop(): never {
    throw new Error('A non-root actor cannot be stopped directly.');
  }

  getSnapshot(): FlatSnapshot<TOutput> {
    return this.snapshot;
  }

  getPersistedSnapshot(): FlatSnapshot<TOutput> {
    return this.logic.getPersistedSnapshot!(this.snapshot) as FlatSnapshot<TOutput>;
  }

  subscribe(
    nextOrObserver?: Observer<FlatSnapshot<TOutput>> | ((snapshot: FlatSnapshot<TOutput>) => void),
    error?: (error: unknown) => void,
    complete?: () => void,
  ): Subscription {
    const observer = toObserver(nextOrObserver, error, complete);
    if (this._processingStatus !== STOPPED) (this.observers ??= new Set()).add(observer);
    else if (this.snapshot.status === 'done') {
      try {
        observer.complete?.();
      } catch (thrown) {
        reportUnhandledError(thrown);
      }
    } else if (this.snapshot.status === 'error') {
      if (!observer.error) reportUnhandledError(this.snapshot.error);
      else
        try {
          observer.error(this.snapshot.error);
        } catch (thrown) {
          reportUnhandledError(thrown);
        }
    }
    return { unsubscribe: () => void this.observers?.delete(observer) };
  }

  on(type: string, handler: (event: EventObject) => void): Subscription {
    const listeners = (this.listeners ??= new Map());
    let set = listeners.get(type);
    if (!set) listeners.set(type, (set = new Set()));
    const wrapped = (event: EventObject) => handler(event);
    set.add(wrapped);
    return { unsubscribe: () => void set.delete(wrapped) };
  }

  select<T>(selector: (snapshot: FlatSnapshot<TOutput>) => T, equal: (a: T, b: T) => boolean = Object.is) {
    return {
      subscribe: (observerOrFn: Observer<T> | ((value: T) => void)) => {
        const observer = toObserver(observerOrFn);
        let previous = selector(this.getSnapshot());
        return this.subscribe((snapshot) => {
          const next = selector(snapshot);
          if (!equal(previous, next)) {
            previous = next;
            observer.next?.(next);
          }
        });
      },
      get: () => selector(this.getSnapshot()),
    };
  }

  toJSON(): { xstate$$type: number; id: string } {
    return { xstate$$type: 1, id: this.id };
  }

  /** Interop with observable libraries (xstate's key: Symbol.observable where defined, else '@@observable'). */
  [symbolObservable](): this {
    return this;
  }
}
