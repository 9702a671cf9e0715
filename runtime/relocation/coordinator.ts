/**
 * Host-level relocation (§4–§8, §13, §14): the Relocate operation table of §6, the supervisor machine's
 * provided actors (preflight, target wait, entering Relocating, the unit pool), the target side of inbound
 * units, Message Follow and retransmission windows, SafeToShutdown and diagnostics.
 */
import { createActor, fromCallback, fromPromise, type Actor } from 'xstate';
import {
  relocationSupervisorMachine,
  type AdmissionClosed,
  type PoolCommand,
  type PreflightOutput,
  type SupervisorOutput,
  type UnitCounts,
} from '../../machines/relocation-supervisor.machine';
import { unitSourceMachine, type UnitSourceEvent, type UnitSourceOutput } from '../../machines/unit-source.machine';
import { flatMachineLogic } from '../flat-machine';
import type { NodeRef, TypeCapability } from '../../stores/types';
import type { PeerInfo, RuntimeMessage } from '../../transport/types';
import { sleep } from '../clock';
import type { ClosingReason, ObjectDefinition } from '../definitions';
import type { Envelope } from '../envelope';
import { sameNode, type ObjectKey } from '../keys';
import type { Hosted } from '../objects';
import type { ParsedRelocationOptions } from '../options';
import { telemetry } from '../telemetry';
import type { RelocationResult } from '../../vocabulary';
import { FrameworkRuntimeState, nameOf, RelocationMode, RelocationOutcome, RelocationReason } from '../../vocabulary';
import { describeType } from './compatibility';
import { ControlBatcher } from './control-batcher';
import { UnitEvents } from './events';
import { relocationDiagnostics, type RelocationDiagnostics } from './diagnostics';
import { FollowWindow } from './follow-window';
export type { RelocationDiagnostics } from './diagnostics';
import { fixInventory, type UnitPlan } from './inventory';
import { parseRelocationMessage, RELOCATION_MESSAGE } from './protocol';
import type { OutboundPorts, RelocationHost } from './ports';
import type { SourceUnit, UnitSourceLogic } from './source/unit';
import { selectTarget, type SelectionResult } from './target-selection';
import { Inbound } from './target/inbound';
import { OwnerCommitBatcher } from './owner-commit-batcher';
import { ParcelSender } from './source/parcel-sender';
import { PrepareAssembly } from './prepare-assembly';
import { UnitPool } from './source/pool';


interface Operation {
  readonly options: ParsedRelocationOptions;
  readonly promise: Promise<RelocationResult>;
  actor: Actor<typeof relocationSupervisorMachine>;
  pool?: UnitPool;
  target?: NodeRef;
  readonly startedAt: number;
}

/** The relay batch of a unit cut over in an `r.cutovers` (never written). */
const NO_RELAY: Envelope[] = [];

/** Default payload estimate per object before anything of its type was captured. */
const DEFAULT_OBJECT_BYTES = 1024;

export class RelocationCoordinator {
  private op: Operation | undefined;
  private relocatedResult: RelocationResult | undefined;
  private lastSelection: SelectionResult['survivors'] | undefined;
  /** Source units in flight by unit id, from their driver's making until they settle (source/pool.ts). */
  private readonly sources = new Map<string, SourceUnit>();
  private readonly bytesPerType = new Map<string, number>();
  /** Source units of Instance Spots by key, while they are in flight: closeSpot is ordered against them (§12). */
  private readonly instanceUnits = new Map<ObjectKey, SourceUnit>();
  /** The target side: inbound units, one machine per inbound parcel. */
  readonly inbound: Inbound;
  /** `r.prepareKeys` parts of units too large for one message, until whole (bounded, prepare-assembly.ts). */
  private readonly prepareParts: PrepareAssembly;
  private settleWaiters: (() => void)[] = [];
  /** Woken whenever no inbound (target) unit is in flight: §4 accepted work before the inventory. */
  private inboundWaiters: (() => void)[] = [];
  /** Reply waits, Message Follow and retransmission copies (follow-window.ts). */
  readonly window: FollowWindow;
  readonly unitEvents = new UnitEvents();
  /** Source-side unit payloads, one parcel per target per tick (DESIGN "Relocation at scale"). */
  readonly parcels = new ParcelSender(() => this.host.transport);
  /** Per-unit control messages (`r.prepare`, `r.prepared`, `r.ready`), one message per peer and kind per tick (same section). */
  readonly control = new ControlBatcher(() => this.host.transport);
  /** Target-side owner commits, coalesced per tick (DESIGN "Relocation at scale"). */
  readonly ownerCommits: OwnerCommitBatcher;
  private lastInventory: RelocationDiagnostics['lastInventory'];
  closed = false;
  /** §13 last paragraph: a descriptor rollback that could not be confirmed ends in ForceStopped/TeardownFailed. */
  rollbackUnconfirmed = false;

  /** Each source unit's actor logic: the unit-source machine with the driver's actions, over its transition table. */
  readonly sourceLogic: UnitSourceLogic;
  /** The operation's actor system has the host's inspection observer (`inspect` option); no other is ever added. */
  get inspected(): boolean {
    return !!this.host.options.inspect; // xstate adds an observer only for a truthy `inspect`
  }
  /** The source side's view of this host (source/unit.ts never reaches into the host). */
  readonly outbound: OutboundPorts;

  constructor(readonly host: RelocationHost) {
    this.ownerCommits = new OwnerCommitBatcher(host.stores.location, () => host.self);
    const timing = host.options.timing;
    this.window = new FollowWindow({
      clock: host.clock,
      logger: host.logger,
      timing,
      routes: host.router,
      unitEvents: this.unitEvents,
      send: (to, message) => host.transport?.send(to, message) ?? false,
      sourceUnit: (id) => this.sources.get(id),
      closeRelocatedOut: (unit) => this.closeRelocatedOut(unit.plan.root, (unit.plan.root.def as { onClosing?: ClosingCallback }).onClosing),
      closed: () => this.closed,
      windowEnded: () => this.checkSafeToShutdown(),
    });
    this.outbound = {
      clock: host.clock,
      logger: host.logger,
      send: (to, message) => host.transport?.send(to, message) ?? false,
      acquireBudget: (to, bytes) => host.transport?.acquireBudget(to, bytes),
      tryAcquireBudget: (to, bytes) => host.transport?.tryAcquireBudget?.(to, bytes),
      control: this.control,
      parcels: this.parcels,
      objects: host.objects,
      awaitDeferSignal: (key, ready) =>
        void host.objects.deferListeners.set(key, () => {
          host.objects.deferListeners.delete(key);
          ready();
        }),
      cancelDeferSignal: (key) => void host.objects.deferListeners.delete(key),
      routes: host.router,
      unitEvents: this.unitEvents,
      estimateBytes: (plan) => this.estimateBytes(plan),
      recordBytes: (plan, bytes) => this.recordBytes(plan, bytes),
    };
    this.inbound = new Inbound({
      // The lifecycle generation is known only once the host started.
      get self() {
        return host.self;
      },
      clock: host.clock,
      timing,
      capacity: host.options.capacity,
      types: host.types,
      objects: host.objects,
      routes: host.router,
      location: host.stores.location,
      owners: this.ownerCommits,
      replies: {
        prepared: (source, u) => this.control.prepared(source, u),
        ready: (source, u) => this.control.ready(source, u),
        fail: (source, u, reason, error) => this.sendFail(source, u, reason, error),
        flush: (source) => this.control.flush(source),
      },
      logger: host.logger,
      unitEvents: this.unitEvents,
      inspect: host.options.inspect,
      refusal: () =>
        host.state !== FrameworkRuntimeState.Serving || this.closed ? `target is ${nameOf(FrameworkRuntimeState, host.state)}, not Serving` : undefined,
      closed: () => this.closed,
      unitsEnded: () => this.inboundEnded(),
    });
    this.prepareParts = new PrepareAssembly(host.clock, timing.restoreValidityMs, () => host.options.capacity, {
      complete: (from, message) => this.inbound.onPrepare(from, message),
      fail: (from, u, reason, error) => this.sendFail(from, u, reason, error),
    });
    // A unit's actor is found by its id (the unit id) among the units in flight, so no map from actor to unit is
    // written and cleared per unit; after S1 no driver action runs (`following` and its final states have none).
    const source = (run: (unit: SourceUnit) => void) => ({ self }: { self: { readonly id: string } }) => {
      const unit = this.sources.get(self.id);
      if (unit && unit.actor === self) run(unit);
    };
    this.sourceLogic = flatMachineLogic<UnitSourceEvent, UnitSourceOutput>(
      unitSourceMachine.provide({
        actions: {
          prepare: source((u) => u.prepare()),
          sealAndTransfer: source((u) => u.sealAndTransfer()),
          relayAndCutover: source((u) => u.relayAndCutover()),
          restoreSource: source((u) => u.restoreSource()),
          abandon: source((u) => u.abandon()),
        },
      }),
    );
  }

  // ── §6 operation table ──────────────────────────────────────────────────────────────────

  relocate(options: ParsedRelocationOptions): Promise<RelocationResult> {
    const host = this.host;
    const state = host.state;
    const blocked = (reason: RelocationReason): Promise<RelocationResult> =>
      Promise.resolve({ mode: options.mode, targetApplicationVersion: options.targetApplicationVersion, outcome: RelocationOutcome.Blocked, reason });
    if (state === FrameworkRuntimeState.Relocated && this.relocatedResult) return Promise.resolve(this.relocatedResult);
    if (state === FrameworkRuntimeState.Draining) return blocked(RelocationReason.ShutdownRequested);
    if (this.op) {
      const same = this.op.options.mode === options.mode && this.op.options.targetApplicationVersion === options.targetApplicationVersion;
      // Same options share the first operation and its deadline; different ones end at once.
      return same ? this.op.promise : blocked(RelocationReason.OperationInProgress);
    }
    if (state !== FrameworkRuntimeState.Serving) return blocked(RelocationReason.RuntimeNotReady);
    return this.start(options);
  }

  private start(options: ParsedRelocationOptions): Promise<RelocationResult> {
    let resolve!: (r: RelocationResult) => void;
    const promise = new Promise<RelocationResult>((r) => (resolve = r));
    const op: Operation = { options, promise, actor: undefined as never, startedAt: this.host.clock.now() };
    this.op = op;
    this.host.logger.info(
      { mode: nameOf(RelocationMode, options.mode), targetApplicationVersion: options.targetApplicationVersion, deadlineMs: options.deadlineMs, objects: this.host.objects.size },
      'relocation started',
    );
    const machine = relocationSupervisorMachine.provide({
      actors: {
        preflight: fromPromise<PreflightOutput, void>(() => this.preflight()),
        closeAdmission: fromPromise<AdmissionClosed, void>(() => this.closeAdmission()),
        awaitTarget: fromPromise<NodeRef, void>(async ({ signal }) => {
          const target = await this.awaitTarget(options, signal);
          op.target = target;
          return target;
        }),
        enterRelocating: fromPromise<UnitCounts, { target: NodeRef | undefined }>(() => this.enterRelocating(op)),
        rollbackIntent: fromPromise<void, void>(() => this.rollbackIntent()),
        unitPool: fromCallback<PoolCommand>(({ sendBack, receive, self }) => {
          const pool = op.pool!;
          // Unit actors are this actor's children (inspection: supervisor → pool → units); their done events arrive
          // here too and are not commands.
          receive((command) => {
            if (command.type === 'START_BATCH') pool.startBatch(command.batch, command.target, self, (report) => sendBack(report));
          });
          return () => pool.stopStarting();
        }),
      },
    });
    const actor = createActor(machine, { input: { deadlineMs: options.deadlineMs }, clock: this.host.clock, inspect: this.host.options.inspect as never });
    op.actor = actor;
    actor.subscribe({
      complete: () => resolve(this.finish(op, actor.getSnapshot().output!)),
      error: (error) => {
        this.host.logger.error({ err: error }, 'relocation supervisor failed');
        resolve(this.finish(op, { outcome: 'blocked', reason: RelocationReason.RelocationFailed, enteredRelocating: this.host.state === FrameworkRuntimeState.Relocating }));
      },
    });
    actor.start();
    return promise;
  }

  private finish(op: Operation, output: SupervisorOutput): RelocationResult {
    const host = this.host;
    this.window.endOperation();
    const { mode, targetApplicationVersion } = op.options;
    this.op = undefined;
    let result: RelocationResult;
    if (output.outcome === 'relocated') {
      result = { mode, targetApplicationVersion, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None };
      this.relocatedResult = result;
      host.transition('ALL_UNITS_DETACHED', { lastRelocation: result });
      void host.publishDescriptor(FrameworkRuntimeState.Relocated).catch((e: unknown) => host.logger.warn({ err: e }, 'Relocated descriptor not published'));
    } else {
      result = { mode, targetApplicationVersion, outcome: RelocationOutcome.Blocked, reason: output.reason };
      if (this.rollbackUnconfirmed) {
        // §13: no new work is accepted; bounded cleanup ends ForceStopped/TeardownFailed.
        void host.shutdown({ deadlineMs: 5000 });
      } else if (output.enteredRelocating && host.transition('SOURCE_RESTORED', { lastRelocation: result })) {
        void host.publishDescriptor(FrameworkRuntimeState.Serving).catch((e: unknown) => host.logger.warn({ err: e }, 'Serving descriptor not republished'));
      }
    }
    telemetry.relocation(result);
    const inventory = op.pool ? this.lastInventory : undefined;
    host.logger.info(
      {
        mode: nameOf(RelocationMode, mode),
        targetApplicationVersion,
        outcome: nameOf(RelocationOutcome, result.outcome),
        reason: nameOf(RelocationReason, result.reason),
        relocationMs: host.clock.now() - op.startedAt,
        target: op.target?.nodeId,
        units: inventory ? inventory.perActorShells + inventory.actors + inventory.spotWideAggregates + inventory.instanceSpots : 0,
        objects: inventory?.objects ?? 0,
      },
      'relocation ended',
    );
    if (host.status.lastRelocation !== result) host.publish({ lastRelocation: result });
    this.checkSafeToShutdown();
    this.wakeSettled();
    return result;
  }

  // ── supervisor steps ────────────────────────────────────────────────────────────────────

  /** §4: the whole host at once, before any state or admission change. */
  private async preflight(): Promise<PreflightOutput> {
    const host = this.host;
    // §4 first row: accepted creations, joins, placements and inbound units finish first, so `hasUnits` counts them.
    await this.settleAccepted();
    // §13 "Store read, write, or owner lease check fails": a Store that does not answer rejects this step and the
    // supervisor machine ends the operation Blocked/StoreUnavailable (its preflight onError); a lease found gone is
    // an answer, the same reason.
    await host.stores.ping();
    if (!host.lease || !(await host.stores.descriptors.renew(host.lease, host.options.timing.leaseMs)))
      return { kind: 'blocked', reason: RelocationReason.StoreUnavailable };
    for (const o of host.objects.values()) if (o.def.relocation.kind === 'disable') return { kind: 'blocked', reason: RelocationReason.RelocationDisabled };
    if (host.manualTopology().length > 0) return { kind: 'blocked', reason: RelocationReason.ManualTopologyUnsupported };
    return { kind: 'ready', hasUnits: host.objects.size > 0 };
  }

  private requiredTypes(): TypeCapability[] {
    const defs = new Map<string, ObjectDefinition>();
    for (const o of this.host.objects.values()) defs.set(o.def.type, o.def);
    return [...defs.values()].map(describeType);
  }

  /** §5, §5.1: source state and admission are kept while waiting for a target. */
  private async awaitTarget(options: ParsedRelocationOptions, signal: AbortSignal): Promise<NodeRef> {
    const host = this.host;
    for (;;) {
      // §13: a descriptor read that fails while waiting rejects (the machine's awaitTarget onError, StoreUnavailable).
      const descriptors = await host.discover(true);
      const selection = selectTarget({
        source: { ...host.self, maintenanceWave: host.options.maintenanceWave },
        targetApplicationVersion: options.targetApplicationVersion,
        requiredTypes: this.requiredTypes(),
        objectCount: host.objects.size,
        descriptors,
        isReadyOnEveryMesh: (peer) => host.transport?.isReadyOnEveryMesh(peer) ?? false,
      });
      this.lastSelection = selection.survivors;
      if (selection.target) return { nodeId: selection.target.nodeId, lifecycleGeneration: selection.target.lifecycleGeneration };
      if (signal.aborted) throw signal.reason;
      await Promise.race([host.nextTopologyChange(signal), sleep(host.clock, host.options.timing.discoveryIntervalMs, signal).catch(() => undefined)]);
      if (signal.aborted) throw signal.reason;
    }
  }

  /**
   * §4 first row, §15: the host enters Relocating, which closes new creation, join and Instance placement and
   * refuses new inbound units; what was accepted before that settles (opened or discarded, finished or rejected)
   * so the inventory fixed next holds all of it. The deadline or a Shutdown ends this wait (supervisor machine).
   */
  private async closeAdmission(): Promise<AdmissionClosed> {
    const host = this.host;
    // A second pass (after a late target search) finds the host already Relocating: the transition is a no-op.
    // A host that left Serving meanwhile (its owner lease was lost while it waited for a target: Error) cannot close
    // admission for Relocating: this step fails and the machine rolls the intent back (closingAdmission onError).
    if (!host.transition('RELOCATE_INTENT_PUBLISHED') && host.state !== FrameworkRuntimeState.Relocating)
      throw new Error(`admission was not closed for Relocating: the host is ${nameOf(FrameworkRuntimeState, host.state)}`);
    await this.settleAccepted();
    return { hasUnits: host.objects.size > 0 };
  }

  /** Admissions (ObjectServer in-flight work) and inbound units (target units) accepted so far have settled. */
  private async settleAccepted(): Promise<void> {
    await this.host.settleComponents();
    for (;;) {
      await this.host.objects.settleInFlight();
      if (this.inbound.inFlight === 0) return;
      await new Promise<void>((resolve) => this.inboundWaiters.push(resolve));
    }
  }

  /** Relocating: the inventory is fixed once (§7), the Relocating descriptor is published. */
  private async enterRelocating(op: Operation): Promise<UnitCounts> {
    const host = this.host;
    const inventory = fixInventory(host.objects);
    op.pool = new UnitPool(this, inventory);
    const [s, a, g] = inventory.batches;
    this.lastInventory = {
      objects: inventory.objectCount,
      perActorShells: s.length,
      actors: a.length,
      spotWideAggregates: g.filter((u) => u.kind === 'spotWide').length,
      instanceSpots: g.filter((u) => u.kind === 'instance').length,
      spotWideMembers: g.reduce((n, u) => n + u.members.length, 0),
    };
    const published = await host.publishDescriptor(FrameworkRuntimeState.Relocating);
    if (!published) throw new Error('the Relocating descriptor was not written (owner lease not held)');
    const [b1, b2, b3] = inventory.batches;
    return { batch1: b1.length, batch2: b2.length, batch3: b3.length };
  }

  /**
   * §13: every attempted descriptor goes back to Serving (to Draining when a Shutdown came meanwhile). An unconfirmed rollback is remembered (it ends the host in
   * bounded teardown) and rejects this step (the machine's rollingBack onError; Blocked/StoreUnavailable either way).
   */
  private async rollbackIntent(): Promise<void> {
    let confirmed = false;
    // A Shutdown that came meanwhile published Draining (§14 step 2): the rollback never advertises Serving again.
    const state = this.host.state === FrameworkRuntimeState.Draining ? FrameworkRuntimeState.Draining : FrameworkRuntimeState.Serving;
    try {
      confirmed = await this.host.publishDescriptor(state);
    } catch (error) {
      this.host.logger.error({ err: error }, 'descriptor rollback to Serving could not be confirmed');
    }
    if (confirmed) return;
    this.rollbackUnconfirmed = true;
    throw new Error('the descriptor rollback to Serving could not be confirmed');
  }

  // ── source units ────────────────────────────────────────────────────────────────────────

  registerSource(unit: SourceUnit): void {
    this.sources.set(unit.plan.id, unit);
    if (unit.plan.kind === 'instance') this.instanceUnits.set(unit.plan.root.key, unit);
  }

  /** §12: the in-flight relocation unit of an Instance Spot (undefined when none started or it settled). */
  instanceUnit(key: ObjectKey): SourceUnit | undefined {
    return this.instanceUnits.get(key);
  }

  /** The unit settled (detached at S1, restored or not started): no longer in flight (§14 step 3). */
  unregisterSource(unit: SourceUnit): void {
    // Nothing of the driver is needed after S1: `following` and its final states run no driver action.
    this.sources.delete(unit.plan.id);
    if (this.instanceUnits.get(unit.plan.root.key) === unit) this.instanceUnits.delete(unit.plan.root.key);
    this.wakeSettled();
  }

  estimateBytes(plan: UnitPlan): number {
    const per = (o: Hosted) => this.bytesPerType.get(o.def.type) ?? DEFAULT_OBJECT_BYTES;
    let bytes = per(plan.root);
    for (const m of plan.members) bytes += per(m);
    return bytes;
  }

  recordBytes(plan: UnitPlan, bytes: number): void {
    const count = 1 + plan.members.length;
    const previous = this.bytesPerType.get(plan.root.def.type);
    const each = Math.ceil(bytes / count);
    this.bytesPerType.set(plan.root.def.type, previous === undefined ? each : Math.ceil((previous * 7 + each) / 8));
  }

  /** OnClosing(RelocationOut) on the detached source instance; a throw is logged, never un-moves anything. */
  closeRelocatedOut(spot: Hosted, onClosing: ClosingCallback | undefined): void {
    if (!onClosing) return;
    try {
      const result = onClosing(spot.state, 'RelocationOut', spot.ctx);
      if (result && typeof (result as Promise<unknown>).then === 'function')
        (result as Promise<unknown>).then(undefined, (e: unknown) => this.host.logger.warn({ object: spot.key, err: e }, 'onClosing(RelocationOut) threw'));
    } catch (error) {
      this.host.logger.warn({ object: spot.key, err: error }, 'onClosing(RelocationOut) threw');
    }
  }

  /** §13: a connection re-established within the window gets the relay batch and cutover again. */
  onPeer(peer: PeerInfo): void {
    this.window.onPeer(peer);
  }

  private checkSafeToShutdown(): void {
    // §14: published only when the windows ended; routes and copies cut by Shutdown never make it safe.
    if (this.closed) return;
    // Inbound units are accepted work too (§4 first row, §14 step 3): none may be in flight.
    const safe = !!this.relocatedResult && this.window.ended && this.sources.size === 0 && this.inbound.inFlight === 0;
    if (safe && !this.host.status.safeToShutdown) this.host.publish({ safeToShutdown: true });
  }

  // ── target units (target/inbound.ts) ───────────────────────────────────────────────────

  get inboundObjects(): number {
    return this.inbound.inboundObjects;
  }

  staging(key: ObjectKey): ((env: Envelope) => void) | undefined {
    return this.inbound.staging(key);
  }

  onControl(from: NodeRef, raw: RuntimeMessage): void {
    const message = parseRelocationMessage(raw);
    if (!message) return this.host.logger.warn({ message: String(raw.t), peer: from.nodeId }, 'invalid relocation message dropped');
    switch (message.t) {
      case RELOCATION_MESSAGE.prepare:
        return this.inbound.onPrepare(from, message);
      case RELOCATION_MESSAGE.prepareKeys:
        return this.prepareParts.add(from, message);
      case RELOCATION_MESSAGE.relayPart:
        return this.inbound.onRelayPart(message);
      case RELOCATION_MESSAGE.cutover:
        return this.inbound.onCutover(message);
      case RELOCATION_MESSAGE.abort:
        return this.inbound.onAbort(message.u);
      case RELOCATION_MESSAGE.prepared:
        for (const u of message.us) this.sourceFrom(from, u)?.onPrepared();
        return;
      case RELOCATION_MESSAGE.ready:
        for (const u of message.us) this.sourceFrom(from, u)?.onRelayReady();
        // S1 is the cutover submit (§8): the units this reply cut over go now, as one `r.cutovers`.
        return this.control.flush(from);
      case RELOCATION_MESSAGE.cutovers:
        for (const u of message.us) this.inbound.onCutover({ t: RELOCATION_MESSAGE.cutover, u, relay: NO_RELAY, first: true });
        return;
      case RELOCATION_MESSAGE.fail:
        return this.sourceFrom(from, message.u)?.onFail(message.reason as RelocationReason);
    }
  }

  /** Message Follow (§13): the cutovers batched for `target` go before a message that follows there. */
  beforeFollow(target: NodeRef): void {
    this.control.flush(target);
  }

  /** A reply only counts from the unit's own target. */
  private sourceFrom(from: NodeRef, u: string): SourceUnit | undefined {
    const unit = this.sources.get(u);
    return unit && sameNode(unit.target, from) ? unit : undefined;
  }

  /** Per-unit failure reply; batched replies of this turn to that source go first. */
  private sendFail(to: NodeRef, u: string, reason: RelocationReason, error: string): void {
    this.control.flush(to);
    this.host.transport?.send(to, { t: RELOCATION_MESSAGE.fail, u, reason, error });
  }

  /** Inbound units ended: what waited for none in flight (§4 inventory, SafeToShutdown, §14 step 3) goes on. */
  private inboundEnded(): void {
    if (this.inbound.inFlight === 0) {
      const waiters = this.inboundWaiters;
      this.inboundWaiters = [];
      for (const w of waiters) w();
    }
    this.checkSafeToShutdown();
    this.wakeSettled();
  }

  onPayload(from: NodeRef, payloadId: string, result: { ok: true; bytes: Buffer } | { ok: false; error: Error }): void {
    this.inbound.onPayload(from, payloadId, result);
  }

  // ── shutdown and diagnostics ──────────────────────────────────────────────────────────────

  /** §14 race table: a pending Relocate ends Blocked/ShutdownRequested; the current units finish. */
  onShutdownSealed(): void {
    this.op?.actor.send({ type: 'SHUTDOWN_REQUESTED' });
  }

  /** Resolves once no source or target unit is in flight (§14 step 3). */
  settled(): Promise<void> {
    if (this.isSettled()) return Promise.resolve();
    return new Promise((resolve) => this.settleWaiters.push(resolve));
  }

  private isSettled(): boolean {
    return !this.op && this.sources.size === 0 && this.inbound.inFlight === 0;
  }

  private wakeSettled(): void {
    if (!this.isSettled()) return;
    const waiters = this.settleWaiters;
    this.settleWaiters = [];
    for (const w of waiters) w();
  }

  /** §14: Message Follow routes and retransmission copies go with the transport (each cleaned once). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    // Units still queued without a driver end too (source/pool.ts), as the ones in flight do.
    this.op?.pool?.stopStarting();
    for (const unit of this.sources.values()) unit.requestStop();
    this.window.close();
    this.inbound.close();
    this.prepareParts.clear();
  }

  diagnostics(limit: number): RelocationDiagnostics {
    const op = this.op;
    return relocationDiagnostics(
      {
        host: this.host,
        ...(op ? { operation: { mode: op.options.mode, targetApplicationVersion: op.options.targetApplicationVersion, state: op.actor.getSnapshot().value, target: op.target } } : {}),
        lastSelection: this.lastSelection,
        lastInventory: this.lastInventory,
        sources: this.sources.values(),
        ...(op?.pool ? { queued: { plans: op.pool.queued(), reason: op.pool.waitingReason() } } : {}),
        inbound: this.inbound,
        window: this.window,
      },
      limit,
    );
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type ClosingCallback = (state: unknown, reason: ClosingReason, ctx: any) => unknown;
