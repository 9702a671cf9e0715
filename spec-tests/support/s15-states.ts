/**
 * Putting a host in a §15 state and keeping it there while a test looks, without sleeps: a turn that waits on a gate
 * (application I/O) holds the step that waits for it — a Relocate's batch 2 (so the host stays Relocating and batch
 * 3, the User and Instance Spots, has not sealed), or a Shutdown's drain of accepted work (so the host stays Draining).
 */
import {
  FrameworkRuntimeState,
  RelocationMode,
  type FrameworkRuntime,
  type ObjectRef,
  type RelocationResult,
  type TerminationResult,
} from '../../runtime';
import { gate, ran } from './close-types';
import { settle } from './hosts';
import { eventually } from './stack';

export const PM = RelocationMode.PlannedMaintenance;

/** The error a promise rejects with (undefined when it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

/** Waits until `from` gets an answer from `ref` run on `nodeId` (their connection is Ready; `from` caches the route). */
export async function reaches(from: FrameworkRuntime, ref: ObjectRef, nodeId: string): Promise<void> {
  await eventually(async () => (await from.request(ref, { op: 'where' }, { timeoutMs: 500 }).catch(() => '')) === nodeId, 5000, `${from.nodeId} reaches ${JSON.stringify(ref)} on ${nodeId}`);
}

export interface HeldState<T> {
  /** Opens the gate and waits for the operation's result. */
  release(): Promise<T>;
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
  await eventually(
    () => host.status.state === FrameworkRuntimeState.Relocating && (host.diagnostics().units.sourceByState['safePoint'] ?? 0) >= 1,
    10_000,
    `${host.nodeId} Relocating with ${blocker} at its safe point`,
  );
  return {
    async release() {
      gate(name).open();
      await Promise.all([relocation.promise, turn.promise]);
      if (relocation.error) throw relocation.error;
      return relocation.value!;
    },
  };
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
      await stopping.promise;
      if (stopping.error) throw stopping.error;
      return stopping.value!;
    },
  };
}
