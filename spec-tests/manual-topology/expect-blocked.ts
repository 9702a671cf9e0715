/**
 * Spec 05 §4, manual topology: "If even one manual RouteMesh peer, ClientServer client endpoint, fanout subscriber
 * endpoint, or manual fanout publisher not publishing a descriptor is registered, it's Blocked/ManualTopologyUnsupported.
 * Registration is checked, not current connection status." and §4's first paragraph: the check runs "before changing
 * host state and application admission". One assertion for every kind of manual registration.
 */
import { FrameworkRuntimeState, RelocationMode, RelocationOutcome, RelocationReason, type FrameworkRuntime, type ObjectRef } from '../../runtime';

let probes = 0;

/**
 * Relocate `host` (PlannedMaintenance): it ends Blocked/ManualTopologyUnsupported, and nothing changed — the host is
 * Serving and ready, admission is open (a new Actor or Spot of the type `admitted` names can be created; its ref is
 * returned), the objects in `owned` are still its own, and diagnostics name the topology as the blocker.
 */
export async function expectBlockedByManualTopology(host: FrameworkRuntime, owned: readonly ObjectRef[], admitted: { actor: string } | { spot: string }): Promise<ObjectRef> {
  const result = await host.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 5000 });
  expect(result).toEqual({
    mode: RelocationMode.PlannedMaintenance,
    targetApplicationVersion: host.applicationVersion,
    outcome: RelocationOutcome.Blocked,
    reason: RelocationReason.ManualTopologyUnsupported,
  });
  expect(host.status).toMatchObject({ state: FrameworkRuntimeState.Serving, isReady: true });
  expect(host.diagnostics().blockers).toContainEqual({ object: 'topology', reason: 'ManualTopologyUnsupported' });
  for (const ref of owned) expect([ref, (await host.locate(ref))?.nodeId]).toEqual([ref, host.nodeId]);
  // Admission is open: creation is admitted (§15 rejects it in every state but Serving).
  const id = `admitted-after-blocked-${host.nodeId}-${++probes}`;
  const created: ObjectRef = 'actor' in admitted ? { actor: id } : { spot: id };
  await ('actor' in admitted ? host.createActor(admitted.actor, id) : host.createSpot(admitted.spot, id));
  expect((await host.locate(created))?.nodeId).toBe(host.nodeId);
  return created;
}
