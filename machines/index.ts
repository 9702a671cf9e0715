/**
 * `zlink/machines`: the five XState v5 machines of host relocation, exactly as the runtime runs them (API.md), for
 * applications, tools (inspectors, diagrams) and model-based tests (`xstate/graph`).
 *
 * The machines are declarations (STYLE.md "pure core, effects at the edge"): their actions and actors are
 * placeholders that do nothing or throw "not provided", and the runtime supplies the real ones with
 * `machine.provide({ actions, actors })`. What each one is expected to do when provided is noted below; the event,
 * context, input and output types are exported with each machine (unit-source keeps no context).
 *
 * A provided actor that fails should reject: the machine decides what a failure means (its `onError`
 * transitions), so a step that swallows its own failures makes those transitions unreachable.
 */
import { hostLifecycleMachine as lifecycle } from './host-lifecycle.machine';
import { relocationSupervisorMachine as supervisor } from './relocation-supervisor.machine';
import { shutdownMachine as shutdown } from './shutdown.machine';
import { unitSourceMachine as unitSource } from './unit-source.machine';
import { unitTargetMachine as unitTarget } from './unit-target.machine';

/**
 * §3 host lifecycle (id `hostLifecycle`): Preparing, Serving, Relocating, Relocated, Draining, Stopped, Error and
 * exactly the edges of the §3 diagram. No actions, no actors, no context: the host sends one event per edge
 * (`COMPONENTS_READY`, `STARTUP_FAILED`, `RELOCATE_INTENT_PUBLISHED`, `SOURCE_RESTORED`, `ALL_UNITS_DETACHED`,
 * `RUNTIME_ERROR`, `SHUTDOWN_SEALED`, `CLEANUP_COMPLETE`), asks `snapshot.can(event)` first, and publishes its status
 * from the machine's snapshots only (one subscriber).
 */
export const hostLifecycleMachine = lifecycle;
export type { HostLifecycleEvent, HostLifecycleStateName } from './host-lifecycle.machine';

/**
 * One host Relocate (id `relocationSupervisor`, §4–§8, §13, §14). Input `{ deadlineMs }`; output
 * `{ outcome: 'relocated' } | { outcome: 'blocked', reason, enteredRelocating }`. Deadline and Shutdown arrive as
 * events (`SHUTDOWN_REQUESTED`; the deadline is the machine's own `after`).
 *
 * Actors to provide:
 * - `preflight` (promise → PreflightOutput): settle accepted admissions and inbound units, check the Store and the
 *   owner lease, DisableRelocation objects and manual topology; resolve `{ kind: 'blocked', reason }` or
 *   `{ kind: 'ready', hasUnits }`; reject when the Store does not answer (→ Blocked/StoreUnavailable).
 * - `awaitTarget` (promise → NodeRef): the §5 target search, repeated until a target is eligible; source state and
 *   admission are kept; reject when a descriptor read fails (→ StoreUnavailable). Its AbortSignal fires when the
 *   deadline or a Shutdown ends the wait.
 * - `closeAdmission` (promise → AdmissionClosed): move the lifecycle to Relocating (admission closes), then resolve
 *   `{ hasUnits }` once accepted admissions and inbound units settled; reject if the host cannot enter Relocating.
 * - `enterRelocating` (promise, input `{ target }` → UnitCounts): fix the inventory once (§7) and publish the
 *   Relocating descriptor; reject when the publish is not confirmed (→ rollingBack).
 * - `rollbackIntent` (promise): publish every attempted descriptor back to Serving; reject when that cannot be
 *   confirmed (the host then ends in bounded teardown, §13).
 * - `unitPool` (callback, invoked as `pool`): owns the source unit actors; on `START_BATCH { batch, target }` starts
 *   that batch's units and sends back one `BATCH_DONE { batch, failure?, anyCrossed? }` when each settled (a unit
 *   counts at its S1); its cleanup stops starting units (started ones reach a safe terminal).
 */
export const relocationSupervisorMachine = supervisor;
export type {
  SupervisorEvent,
  SupervisorInput,
  SupervisorOutput,
  PreflightOutput,
  AdmissionClosed,
  UnitCounts,
  PoolCommand,
  PoolReport,
  SupervisorContext,
} from './relocation-supervisor.machine';

/**
 * §14 Shutdown (id `shutdown`), steps 1–6 under one deadline. Input `{ deadlineMs }`; output the TerminationResult
 * (Stopped/None, ForceStopped/DeadlineExceeded, ForceStopped/TeardownFailed — the first classification wins).
 *
 * Actors to provide (each a promise; a rejection is a step failure, the remaining steps still run):
 * - `sealAdmission`: host to Draining, admission seal, no new relocation units, mesh seal; end a pending Relocate.
 * - `publishDraining`: publish the Draining descriptor (its failure does not change the outcome, §14 step 2).
 * - `drainAcceptedWork`: accepted handlers, request completions, relocation units, session barriers.
 * - `closeSpots`: OnClosing(HostShutdown) for every Spot, with the AbortSignal of the step; reject if one threw.
 * - `cleanupResources`: local scope, owner records, descriptor and lease, listener, transport — in that order.
 * - `forceTeardown`: after the deadline (the running step's AbortSignal has fired), a bounded, non-blocking release
 *   of whatever is left; reject if something could not be released (the outcome stays DeadlineExceeded).
 */
export const shutdownMachine = shutdown;
export type { ShutdownInput, ShutdownContext } from './shutdown.machine';

/**
 * Source side of one relocation unit (id `unitSource`, §7, §8, §11, §13, §14): waiting → sealed (S0) →
 * following (S1) → followEnded (S4) | routeCut, or restored / notStarted / closed. No context, no timers: events come
 * from the driver (`SAFE_POINT`, `RELAY_READY`, `REPLY_INDETERMINATE`, `FAILED { reason }`, `STOP`, `CLOSED` — closeSpot
 * reached an Instance Spot before its seal, §12, then `CLOSE_DONE`) and from the shared
 * Message Follow expiry (`FOLLOW_EXPIRED`) or Shutdown (`ROUTE_CUT`). Output: the final state's kind (and reason).
 *
 * Actions to provide (all synchronous entry actions; I/O they start reports back as events):
 * - `prepare` (entry of waiting): payload budget, the target's temporary queue, a seal permit, the safe point —
 *   then send `SAFE_POINT` (or `FAILED` / `STOP`).
 * - `sealAndTransfer` (S0): admission seal; capture state, unexecuted queue and timers; send the payload.
 * - `relayAndCutover` (S1): ordered relay of held messages, then the one-way cutover submit; Message Follow starts.
 * - `restoreSource` (explicit failure before relay-ready): put queue and held messages back in order, re-arm
 *   timers, reopen dispatch (§11).
 * - `abandon` (nothing sealed, or closed first): give back budget, seal permit and the target's temporary queue.
 */
export const unitSourceMachine = unitSource;
export { DETACHED_STATES } from './unit-source.machine';
export type { UnitSourceEvent, UnitSourceOutput } from './unit-source.machine';

/**
 * Target side of the units of one inbound parcel (id `unitTarget`, §9, §10.3, §11, §13): relayReady →
 * committing (S2) → open (S3) | discarded, or — after the §13 cutover-wait fallback — committingAfterFallback →
 * openAfterFallback | discardedAfterFallback (`FALLBACK_STATES`; no context). Events: `CUTOVER` (every unit has its
 * cutover), `CUTOVER_WAIT_ENDED` (the fallback, from a shared expiry queue), `COMMITTED`, `COMMIT_FAILED`. Output
 * `{ opened, fellBack }`, from the final state.
 *
 * Actions to provide:
 * - `commitOwner` (entry of both committing states): the owner CAS source → target for every unit, retried on Store
 *   errors until restore validity ends; then send `COMMITTED` or `COMMIT_FAILED` (units whose outcome differs from
 *   the parcel's are split into a machine of their own by the driver).
 * - `openDispatch` (S3): merge saved work, pre-boundary relay and temporary work in order, run
 *   OnRelocationReadyCompleted, open dispatch.
 * - `discard`: drop the prepared objects and the temporary queue without running anything (§11).
 */
export const unitTargetMachine = unitTarget;
export { FALLBACK_STATES } from './unit-target.machine';
export type { UnitTargetEvent, UnitTargetOutput } from './unit-target.machine';

/** The five machines by id. */
export const MACHINES = {
  hostLifecycle: lifecycle,
  relocationSupervisor: supervisor,
  shutdown,
  unitSource,
  unitTarget,
} as const;
