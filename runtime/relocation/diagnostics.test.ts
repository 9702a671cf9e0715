/**
 * The relocation part of `diagnostics()` (API.md) read from a fake view: what each part reports is counted once,
 * the blocker list is capped by the limit while its total counts them all, and absent facts stay absent.
 */
import { FrameworkRuntimeState } from '../../vocabulary';
import { relocationDiagnostics, type DiagnosticsView } from './diagnostics';
import type { UnitPlan } from './inventory';
import type { SourceUnit } from './source/unit';

const hosted = (key: string, relocation: 'preserve' | 'disable' = 'preserve') => ({ key, def: { relocation: { kind: relocation } } });
const plan = (key: string): UnitPlan => ({ id: `u-${key}`, kind: 'actor', batch: 1, root: hosted(key), members: [] }) as unknown as UnitPlan;
/** A driver as diagnostics sees it: its machine state and, while waiting, the §7 step it waits for. */
const source = (key: string, at: string, waitingFor = 'safePoint') => ({ at, waitingFor, plan: plan(key) }) as unknown as SourceUnit;

function view(overrides: Partial<DiagnosticsView> = {}, manual: string[] = []): DiagnosticsView {
  return {
    host: {
      state: FrameworkRuntimeState.Relocating,
      status: { safeToShutdown: false },
      objects: new Map([
        ['a:1', hosted('a:1')],
        ['a:pinned', hosted('a:pinned', 'disable')],
      ]),
      manualTopology: () => manual,
    } as unknown as DiagnosticsView['host'],
    sources: [],
    inbound: { inFlight: 0, inFlightUnits: () => [][Symbol.iterator]() } as unknown as DiagnosticsView['inbound'],
    window: { followRoutes: 3, retransmissionCopies: 2, retransmissionsSent: 1, copiesCleaned: 4 },
    ...overrides,
  };
}

describe('relocationDiagnostics', () => {
  it('counts source units by machine state, splits waiting by its step, and counts queued plans under their reason', () => {
    const d = relocationDiagnostics(
      view({
        sources: [source('a:1', 'waiting', 'preparing'), source('a:2', 'waiting', 'safePoint'), source('a:3', 'sealed'), source('a:4', 'following')],
        queued: { plans: [plan('a:5'), plan('a:6')], reason: 'budget' },
      }),
      100,
    );
    expect(d.units).toEqual({ sourceInFlight: 6, sourceByState: { preparing: 1, safePoint: 1, sealed: 1, following: 1, budget: 2 }, targetInFlight: 0 });
    // Waiting units hold the operation up (before their seal); sealed and following ones do not.
    expect(d.blockers.map((b) => b.object)).toEqual(['a:pinned', 'a:1', 'a:2', 'a:5', 'a:6']);
    expect(d.blockers[0]).toEqual({ object: 'a:pinned', reason: 'RelocationDisabled' });
    expect(d.blockers[1]!.reason).toMatch(/temporary queue/);
    expect(d.blockers[3]!.reason).toMatch(/payload budget/);
    expect(d.blockersTotal).toBe(5);
  });

  it('caps the blocker list at the limit and still counts every blocker', () => {
    const sources = Array.from({ length: 50 }, (_, i) => source(`a:${i}`, 'waiting', 'preparing'));
    const d = relocationDiagnostics(view({ sources }), 10);
    expect(d.blockers).toHaveLength(10);
    expect(d.blockersTotal).toBe(51); // 50 waiting units + the RelocationDisabled object
    expect(d.units.sourceInFlight).toBe(50);
  });

  it('names inbound units by their first key (or id), and a manual topology', () => {
    const d = relocationDiagnostics(
      view({ inbound: { inFlight: 2, inFlightUnits: () => [{ id: 'u-x', keys: ['a:x'] }, { id: 'u-y', keys: [] }] } as unknown as DiagnosticsView['inbound'] }, [
        'peer',
      ]),
      100,
    );
    expect(d.units.targetInFlight).toBe(2);
    expect(d.blockers.map((b) => b.object)).toEqual(['a:pinned', 'a:x', 'u-y', 'topology']);
    expect(d.blockers[3]).toEqual({ object: 'topology', reason: 'ManualTopologyUnsupported' });
  });

  it('reports the operation with its phase path, the follow window counters, and leaves out what is not known', () => {
    const target = { nodeId: 'b', lifecycleGeneration: 1 };
    const d = relocationDiagnostics(
      view({ operation: { mode: 1, targetApplicationVersion: 2, state: { running: { batch: 'two' } }, target } } as Partial<DiagnosticsView>),
      100,
    );
    expect(d.state).toBe('Relocating');
    expect(d.safeToShutdown).toBe(false);
    expect(d.operation).toEqual({ mode: 1, targetApplicationVersion: 2, phase: 'running.batch.two', target });
    expect(d).toMatchObject({ followRoutes: 3, retransmissionCopies: 2, retransmissionsSent: 1, retransmissionCopiesCleaned: 4 });
    expect('lastSelection' in d).toBe(false);
    expect('lastInventory' in d).toBe(false);

    const idle = relocationDiagnostics(view({ host: { ...view().host, state: FrameworkRuntimeState.Serving } }), 100);
    expect(idle.state).toBe('Serving');
    expect('operation' in idle).toBe(false);
  });
});
