import { createActor, fromCallback, type AnyActorLogic, type AnyActorRef, type InspectionEvent } from 'xstate';
import { unitSourceMachine } from '../machines/unit-source.machine';
import { FlatActor } from './flat-actor';
import { flatMachineLogic, type FlatMachineLogic } from './flat-machine';

// Every simple path of both unit machines runs in FlatActor and in xstate's Actor alike: runtime/flat-machine.test.ts.
// Here: what those paths do not reach — events sent from inside a step, a failing action, late subscribers, a stop.

type Actions = Parameters<typeof unitSourceMachine.provide>[0]['actions'];
interface Made {
  actor: Pick<AnyActorRef, 'start' | 'send' | 'getSnapshot' | 'subscribe'> & { _stop(): unknown };
  seen: string[];
  toParent: string[];
}

/** The unit-source machine with `actions`, as the runtime runs it (FlatActor) or in xstate's Actor, under a parent. */
function make(kind: 'flat' | 'xstate', actions: Actions, inspected?: boolean): Made {
  const seen: string[] = [];
  const toParent: string[] = [];
  const parent = createActor(fromCallback(({ receive }) => receive((e) => void toParent.push(e.type))), {
    inspect: (e: InspectionEvent) => {
      if ((e.actorRef as { id?: string }).id !== 'u1') return;
      seen.push(e.type === '@xstate.snapshot' ? `snapshot ${(e.snapshot as { value?: string }).value} ${e.snapshot.status}` : e.type === '@xstate.event' ? `event ${e.event.type}` : e.type);
    },
  }).start();
  const machine = unitSourceMachine.provide({ actions });
  const actor =
    kind === 'flat'
      ? new FlatActor(flatMachineLogic(machine) as FlatMachineLogic<{ type: string }, unknown>, { parent, id: 'u1', inspected })
      : (createActor(machine as AnyActorLogic, { parent, id: 'u1' }) as unknown as Made['actor']);
  return { actor, seen, toParent };
}

function observe(actor: Made['actor']): string[] {
  const trace: string[] = [];
  actor.subscribe({
    next: (s) => trace.push(`${(s as { value: string }).value}/${s.status}`),
    error: (e) => trace.push(`error ${(e as Error).message}`),
    complete: () => trace.push('complete'),
  });
  return trace;
}

describe('FlatActor behaves as xstate Actor where the machine paths do not reach', () => {
  test('events sent from inside a step are taken after it, in order, before the outer send returns', () => {
    const runBoth = (kind: 'flat' | 'xstate') => {
      const { actor, seen } = make(kind, {
        prepare: ({ self }) => self.send({ type: 'SAFE_POINT' }), // entry action of the initial state: runs at start
        sealAndTransfer: ({ self }) => {
          self.send({ type: 'RELAY_READY' });
          self.send({ type: 'STOP' }); // not taken in `following`: ignored after the step before it
        },
      });
      const trace = observe(actor);
      actor.start();
      const afterStart = (actor.getSnapshot() as { value: string }).value;
      actor.send({ type: 'FOLLOW_EXPIRED' });
      return { afterStart, trace, seen, end: (actor.getSnapshot() as { value: string; status: string }).status };
    };
    const x = runBoth('xstate');
    expect(x.afterStart).toBe('following');
    expect(runBoth('flat')).toEqual(x);
  });

  test('an action that throws: the actor errs, its observers and its parent hear it, nothing more is taken', () => {
    const runBoth = (kind: 'flat' | 'xstate') => {
      const { actor, toParent } = make(kind, {
        sealAndTransfer: () => {
          throw new Error('capture broke');
        },
      });
      const trace = observe(actor);
      actor.start();
      actor.send({ type: 'SAFE_POINT' });
      actor.send({ type: 'RELAY_READY' });
      const { status, error } = actor.getSnapshot() as { status: string; error: Error };
      return { trace, toParent, status, error: error.message };
    };
    const x = runBoth('xstate');
    expect(x.status).toBe('error');
    expect(runBoth('flat')).toEqual(x);
  });

  test('a subscriber after the end is completed at once; the parent stopping a child ends it as xstate does', () => {
    const runBoth = (kind: 'flat' | 'xstate') => {
      const done = make(kind, {});
      done.actor.start();
      for (const type of ['SAFE_POINT', 'RELAY_READY', 'FOLLOW_EXPIRED']) done.actor.send({ type });
      const late = observe(done.actor);
      const stopped = make(kind, {});
      const trace = observe(stopped.actor);
      stopped.actor.start();
      stopped.actor._stop(); // what the parent's stopChild does
      stopped.actor.send({ type: 'SAFE_POINT' }); // ignored once stopped
      return { late, trace, seen: stopped.seen, status: stopped.actor.getSnapshot().status };
    };
    const x = runBoth('xstate');
    expect(x.late).toEqual(['complete']);
    expect(runBoth('flat')).toEqual(x);
  });

  test('it needs the parent system of xstate 5: a parent without its internals is refused by name', () => {
    const parent = { id: 'p', system: {} } as unknown as AnyActorRef;
    expect(() => new FlatActor(flatMachineLogic(unitSourceMachine) as FlatMachineLogic<{ type: string }, unknown>, { parent, id: 'u1' })).toThrow(/_relay, _sendInspectionEvent, _bookId/);
  });

  test('a flat actor runs to its end without writing the system\'s session registry (write-only in xstate 5)', () => {
    const { actor } = make('flat', {});
    const system = (actor as unknown as AnyActorRef).system as unknown as { _register: (...a: unknown[]) => unknown; _unregister: (...a: unknown[]) => unknown };
    const register = jest.spyOn(system, '_register');
    const unregister = jest.spyOn(system, '_unregister');
    actor.start();
    for (const type of ['SAFE_POINT', 'RELAY_READY', 'FOLLOW_EXPIRED']) actor.send({ type });
    expect(actor.getSnapshot().status).toBe('done');
    expect(register).not.toHaveBeenCalled();
    expect(unregister).not.toHaveBeenCalled();
  });

  test('each actor gets its own sessionId from the system, as xstate actors do', () => {
    const a = make('flat', {}).actor as unknown as AnyActorRef;
    const b = make('xstate', {}).actor as unknown as AnyActorRef;
    expect(a.sessionId).toMatch(/^x:\d+$/);
    expect(b.sessionId).toMatch(/^x:\d+$/);
    expect(a.sessionId).not.toBe(b.sessionId);
  });

  test('without an observer (inspected: false) it builds no inspection event, and runs, reports and ends the same', () => {
    const run = (inspected: boolean | undefined) => {
      const actions: string[] = [];
      const { actor, seen, toParent } = make(
        'flat',
        {
          prepare: () => void actions.push('prepare'),
          sealAndTransfer: () => void actions.push('sealAndTransfer'),
          relayAndCutover: () => void actions.push('relayAndCutover'),
        },
        inspected,
      );
      const system = (actor as unknown as AnyActorRef).system as unknown as { _relay: () => void; _sendInspectionEvent: () => void };
      const relay = jest.spyOn(system, '_relay');
      const inspection = jest.spyOn(system, '_sendInspectionEvent');
      const trace = observe(actor);
      actor.start();
      for (const type of ['SAFE_POINT', 'RELAY_READY', 'FOLLOW_EXPIRED']) actor.send({ type });
      // The flat actor's own (the parent's, which takes the done event, are the parent's business).
      const own = inspection.mock.calls.filter((call) => (call as unknown as [{ actorRef: unknown }])[0].actorRef === actor).length;
      return { actions, trace, toParent, output: actor.getSnapshot().output, seen, relayed: relay.mock.calls.length, inspectionEvents: own };
    };
    const observed = run(undefined); // the default: as xstate
    const quiet = run(false);
    expect(observed.seen.length).toBeGreaterThan(0);
    expect(observed.toParent).toEqual(['xstate.done.actor.u1']);
    expect(quiet).toEqual({ ...observed, seen: [], relayed: 0, inspectionEvents: 0 });
  });
});
