import { setup } from 'xstate';

/**
 * §3 host lifecycle: the seven states and exactly the transitions of its diagram, nothing more.
 * The host's state changes only through this machine (STYLE.md "one place changes status"); the runtime
 * subscribes once and publishes status, events and metrics from its snapshots.
 */
export type HostLifecycleEvent =
  | { type: 'COMPONENTS_READY' } // Preparing → Serving: required component ready
  | { type: 'STARTUP_FAILED' } // Preparing → Error
  | { type: 'RELOCATE_INTENT_PUBLISHED' } // Serving → Relocating
  | { type: 'SHUTDOWN_SEALED' } // Serving | Relocating | Relocated → Draining; Error → Draining (bounded cleanup)
  | { type: 'RUNTIME_ERROR' } // Serving → Error
  | { type: 'SOURCE_RESTORED' } // Relocating → Serving: source processing restored after Blocked
  | { type: 'ALL_UNITS_DETACHED' } // Relocating → Relocated
  | { type: 'CLEANUP_COMPLETE' }; // Draining → Stopped

export const hostLifecycleMachine = setup({
  types: { events: {} as HostLifecycleEvent },
}).createMachine({
  id: 'hostLifecycle',
  initial: 'Preparing',
  states: {
    Preparing: {
      on: { COMPONENTS_READY: 'Serving', STARTUP_FAILED: 'Error' },
    },
    Serving: {
      on: { RELOCATE_INTENT_PUBLISHED: 'Relocating', SHUTDOWN_SEALED: 'Draining', RUNTIME_ERROR: 'Error' },
    },
    Relocating: {
      on: { SOURCE_RESTORED: 'Serving', ALL_UNITS_DETACHED: 'Relocated', SHUTDOWN_SEALED: 'Draining' },
    },
    Relocated: {
      on: { SHUTDOWN_SEALED: 'Draining' },
    },
    Error: {
      on: { SHUTDOWN_SEALED: 'Draining' },
    },
    Draining: {
      on: { CLEANUP_COMPLETE: 'Stopped' },
    },
    Stopped: { type: 'final' },
  },
});

export type HostLifecycleStateName = 'Preparing' | 'Serving' | 'Relocating' | 'Relocated' | 'Draining' | 'Stopped' | 'Error';
