/**
 * Putting a host in a §15 state and keeping it there while a test looks, without sleeps:
 *  - Relocating: a turn that waits on a gate (application I/O) holds a Relocate's batch 2, so batch 3 (the User and
 *    Instance Spots) has not sealed (`holdRelocating`); or an ApplicationSignaled Spot waits for its safe point
 *    until the test lets it defer (`holdAtSafePoint`, `holdSignaled`).
 *  - Draining: an accepted turn that waits on a gate holds Shutdown's drain (§14 step 3, `holdDraining`); or a
 *    Closer Spot's closing callback holds it after the drain (§14 step 4, `holdClosing`).
 * And the stack of a test file whose hosts run the probe types (`probeStack`), with what those tests check often.
 */
import {
  AdmissionError,
  FrameworkRuntimeState,
  RelocationMode,
  type FrameworkRuntime,
  type ObjectRef,
  type RelocationResult,
  type TerminationResult,
} from '../../runtime';
import { quietLog } from '../no-loss/support';
import { gate, PROBE_TYPES, ran, resetProbes } from './close-types';
import { closer, settle } from './hosts';
import { eventually, useStack, type StackName, type StackPerTest } from './stack';

export const PM = RelocationMode.PlannedMaintenance;

/**
 * A fresh stack per test (useStack) whose hosts run PROBE_TYPES with a quiet log; the probes' gates and log are reset
 * before each test and at its end (every gate opened before the hosts stop).
 */
export function probeStack(name: StackName): StackPerTest {
  return useStack(name, { types: PROBE_TYPES, log: quietLog().log }, resetProbes);
}

/** The error a promise rejects with (undefined when it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

/** The error a call throws (undefined when it returns). */
export function thrown(call: () => unknown): unknown {
  try {
    call();
  } catch (error) {
    return error;
  }
  return undefined;
}

/** Each call is refused with an AdmissionError that names `state`, in its field and in its message. */
export async function expectAdmissionRejected(state: string, calls: readonly [string, () => Promise<unknown>][]): Promise<void> {
  for (const [what, call] of calls) {
    const error = await rejection(call());
    expect([what, error]).toEqual([what, expect.any(AdmissionError)]);
    expect([what, (error as AdmissionError).state]).toEqual([what, state]);
    expect((error as Error).message).toContain(state);
  }
}

/** Waits until `from` gets an answer from `ref` run on `nodeId` (their connection is Ready; `from` caches the route). */
export async function reaches(from: FrameworkRuntime, ref: ObjectRef, nodeId: string): Promise<void> {
  await eventually(async () => (await from.request(ref, { op: 'where' }, { timeoutMs: 500 }).catch(() => '')) === nodeId, 5000, `${from.nodeId} reaches ${JSON.stringify(ref)} on ${nodeId}`);
}

/** Whether a relocation unit of `host` waits for its safe point. */
export const atSafePoint = (host: FrameworkRuntime): boolean => (host.diagnostics().units.sourceByState['safePoint'] ?? 0) >= 1;

export interface HeldState<T> {
  /** Lets the held step go on and waits for the operation's result. */
  release(): Promise<T>;
}

/** The operation's result once it settled (its error thrown). */
async function resultOf<T>(operation: ReturnType<typeof settle<T>>): Promise<T> {
  await operation.promise;
  if (operation.error) throw operation.error;
  return operation.value!;
}

/**
 * Relocate `host` (PlannedMaintenance) and keep it Relocating: a batch-2 Actor (`blocker`, created here) runs a turn
 * that waits on the gate `name`. Resolves once the host is Relocating and that unit waits for its safe point.
 */
export async function holdRelocating(host: FrameworkRuntime, name: string, deadlineMs = 20_000): Promise<HeldState<RelocationResult>> {
  const blocker = `blocker-${name}`;
  await host.createActor('Probe', blocker);
  const turn = settle(host.request({ actor: blocker }, { op: 'hold', gate: name }, { timeoutMs: 60_000 }));
  await eventually(() => ran.includes(`hold:${blocker}@${host.nodeId}`), 5000, `${blocker}'s turn`);
  const relocation = settle(host.relocate({ mode: PM, deadlineMs }));
  await eventually(() => host.status.state === FrameworkRuntimeState.Relocating && atSafePoint(host), 10_000, `${host.nodeId} Relocating with ${blocker} at its safe point`);
  return {
    async release() {
      gate(name).open();
      await turn.promise;
      return resultOf(relocation);
    },
  };
}

/**
 * Relocate `host` (PlannedMaintenance) and keep it Relocating: `spot`, an ApplicationSignaled Spot on it (a Signaled,
 * a GateMember, …), waits for its safe point. Resolves once the host is Relocating and that unit waits; release()
 * sends the Spot { op: 'defer' } (§7: a defer counts only once its unit waits for the safe point).
 */
export async function holdAtSafePoint(host: FrameworkRuntime, spot: string, deadlineMs = 20_000): Promise<HeldState<RelocationResult>> {
  const relocation = settle(host.relocate({ mode: PM, deadlineMs }));
  await eventually(() => host.status.state === FrameworkRuntimeState.Relocating && atSafePoint(host), 10_000, `${host.nodeId} Relocating with ${spot} at its safe point`);
  return {
    async release() {
      await host.request({ spot }, { op: 'defer' });
      return resultOf(relocation);
    },
  };
}

/** holdAtSafePoint with a Signaled Spot (support/hosts.ts) created here. */
export async function holdSignaled(host: FrameworkRuntime, spot = 'signaled', deadlineMs = 20_000): Promise<HeldState<RelocationResult>> {
  await host.createSpot('Signaled', spot);
  return holdAtSafePoint(host, spot, deadlineMs);
}

/**
 * Shut `host` down and keep it Draining: an Actor (`drainer`, created here) runs an accepted turn that waits on the
 * gate `name`, and Shutdown's drain of accepted work waits for it (§14 step 3).
 */
export async function holdDraining(host: FrameworkRuntime, name: string, deadlineMs = 20_000): Promise<HeldState<TerminationResult> & { turn: Promise<unknown> }> {
  const drainer = `drainer-${name}`;
  await host.createActor('Probe', drainer);
  const turn = host.request({ actor: drainer }, { op: 'hold', gate: name }, { timeoutMs: 60_000 });
  turn.catch(() => undefined);
  await eventually(() => ran.includes(`hold:${drainer}@${host.nodeId}`), 5000, `${drainer}'s turn`);
  const stopping = settle(host.shutdown({ deadlineMs }));
  await eventually(() => host.status.state === FrameworkRuntimeState.Draining, 5000, `${host.nodeId} Draining`);
  return {
    turn,
    async release() {
      gate(name).open();
      return resultOf(stopping);
    },
  };
}

/**
 * Shut `host` down and keep it Draining after its drain of accepted work: a Closer Spot (support/hosts.ts, created
 * here) holds its HostShutdown closing callback (§14 step 4). Resolves once that callback runs; release() opens it.
 */
export async function holdClosing(host: FrameworkRuntime, deadlineMs = 20_000): Promise<HeldState<TerminationResult>> {
  await host.createSpot('Closer', `closer-${host.nodeId}`);
  const before = closer.calls;
  const stopping = settle(host.shutdown({ deadlineMs }));
  await eventually(() => closer.calls === before + 1, 10_000, `${host.nodeId}'s closing callback running`);
  return {
    async release() {
      closer.open();
      return resultOf(stopping);
    },
  };
}
