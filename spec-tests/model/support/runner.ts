/**
 * Runs generated paths against the real runtime and counts what they covered.
 *
 * The runtime's machines are observed with the `inspect` option of createRuntime (an xstate inspection observer, the
 * same one a live inspector uses): a Recorder picks the actor under test by its machine id and keeps the
 * transitions its `@xstate.microstep` events report, and a surface captured at each of its `@xstate.snapshot`
 * events. For every step of a path the driver applies the stimulus the step's event maps to, the recorder waits
 * until the runtime's actor took exactly the step's transitions next (same keys, same order, nothing in between),
 * and the driver checks the public surface. A path counts for coverage only when every step passed.
 */
import type { AnyStateMachine, InspectionEvent } from 'xstate';
import { Coverage, describeTransition, isMicrostep, transitionKey, type ModelPath } from './model';
import { sleep } from './world';

export interface SnapshotSeen<S> {
  readonly value: unknown;
  readonly status: string;
  /** The public surface at the moment the actor's snapshot changed (undefined when the driver captures none). */
  readonly surface: S | undefined;
}

/** The actor under test, seen through the inspection stream of one host. */
export class Recorder<S = unknown> {
  /** sessionId of the actor under test: the first actor of the machine that the filter accepts. */
  subject: string | undefined;
  readonly keys: string[] = [];
  readonly snapshots: SnapshotSeen<S>[] = [];
  private cursor = 0;
  /** Called for every inspection event after it was recorded (a driver may act on one, e.g. inject a defect). */
  onEvent: ((event: InspectionEvent, isSubject: boolean) => void) | undefined;

  constructor(
    readonly machine: AnyStateMachine,
    private readonly capture: () => S | undefined = () => undefined,
    private readonly accept: (event: InspectionEvent) => boolean = () => true,
  ) {}

  readonly inspect = (event: InspectionEvent): void => {
    const logic = (event.actorRef as unknown as { logic?: { id?: string } }).logic;
    const mine = logic?.id === this.machine.id;
    if (mine && event.type === '@xstate.actor' && this.subject === undefined && this.accept(event)) this.subject = event.actorRef.sessionId;
    const isSubject = mine && event.actorRef.sessionId === this.subject;
    if (isSubject) {
      if (isMicrostep(event)) for (const t of event._transitions) this.keys.push(transitionKey(t));
      else if (event.type === '@xstate.snapshot') {
        const snapshot = event.snapshot as unknown as { value: unknown; status: string };
        this.snapshots.push({ value: snapshot.value, status: snapshot.status, surface: this.capture() });
      }
    }
    this.onEvent?.(event, isSubject);
  };

  /** The last snapshot seen whose value is `value` (a transient state, entered and left in one step, has none). */
  seen(value: unknown): SnapshotSeen<S> | undefined {
    const v = JSON.stringify(value);
    for (let i = this.snapshots.length - 1; i >= 0; i--) if (JSON.stringify(this.snapshots[i]!.value) === v) return this.snapshots[i];
    return undefined;
  }

  /**
   * Waits until the actor under test took exactly `expected` next. `onPoll` may move simulated time while waiting
   * (only where the step's stimulus is time passing on that host).
   */
  async reach(expected: readonly string[], opts: { what: string; timeoutMs?: number; onPoll?: () => void }): Promise<void> {
    const end = Date.now() + (opts.timeoutMs ?? 10_000);
    const name = (k: string) => describeTransition(k, this.machine);
    for (;;) {
      const got = this.keys.slice(this.cursor, this.cursor + expected.length);
      for (let i = 0; i < got.length; i++)
        if (got[i] !== expected[i])
          throw new Error(`${opts.what}: the runtime took\n  ${got.map(name).join('\n  ')}\nbut the path says\n  ${expected.map(name).join('\n  ')}`);
      if (got.length === expected.length) {
        this.cursor += expected.length;
        return;
      }
      if (Date.now() > end)
        throw new Error(
          `${opts.what}: timed out; the runtime took only\n  ${got.map(name).join('\n  ') || '(nothing)'}\nof\n  ${expected.map(name).join('\n  ')}` +
            (this.subject === undefined ? `\n(no ${this.machine.id} actor was seen)` : ''),
        );
      await sleep(2);
      opts.onPoll?.();
    }
  }

  /** Transitions the actor took after the last step the test waited for (none expected at the end of a path). */
  get unexpected(): string[] {
    return this.keys.slice(this.cursor).map((k) => describeTransition(k, this.machine));
  }
}

/** How one machine's path events map to stimuli on the real runtime, and what the public surface must show. */
export interface Driver<W extends { recorder: Recorder<unknown>; close(): Promise<void> }> {
  /** Hosts, wrappers and faults the whole path needs (some stimuli must be in place before the runtime gets there). */
  setup(path: ModelPath): Promise<W>;
  /**
   * Applies the stimulus of step `index` (the actor under test is in the state before it). May return an `onPoll`
   * that moves simulated time while the runtime is expected to take the step.
   */
  fire(world: W, path: ModelPath, index: number): Promise<void | { onPoll?: () => void }>;
  /** Public-surface assertions once the step was taken. */
  check(world: W, path: ModelPath, index: number): Promise<void>;
  /** Assertions after the last step (results of calls the path made, final records). */
  finish?(world: W, path: ModelPath): Promise<void>;
}

/**
 * Declares one jest test per path, then a coverage test that prints `model <name>: states N/N, transitions M/M
 * (P%)` and fails unless every state and transition of the machine was taken by a path that passed.
 */
export function modelSuite<W extends { recorder: Recorder<unknown>; close(): Promise<void> }>(
  name: string,
  machine: AnyStateMachine,
  generated: { paths: readonly ModelPath[]; missing: readonly string[] },
  driver: Driver<W>,
): void {
  const coverage = new Coverage(name, machine);
  describe(`model ${name} (${generated.paths.length} generated paths)`, () => {
    test('the generated paths take every transition of the machine', () => {
      expect(generated.missing.map((k) => describeTransition(k, machine))).toEqual([]);
    });

    test.each(generated.paths.map((p, i) => [`${i + 1}: ${p.name}`, p] as const))('%s', async (_title, path) => {
      const world = await driver.setup(path);
      try {
        for (let i = 0; i < path.steps.length; i++) {
          const what = `step ${i + 1} (${path.name.split(' → ')[i]})`;
          const fired = await driver.fire(world, path, i);
          await world.recorder.reach(path.steps[i]!.transitions, { what, ...(fired && fired.onPoll ? { onPoll: fired.onPoll } : {}) });
          await driver.check(world, path, i);
        }
        await driver.finish?.(world, path);
        expect(world.recorder.unexpected).toEqual([]);
      } finally {
        await world.close();
      }
      coverage.add(path);
    });

    test('coverage', () => {
      // eslint-disable-next-line no-console
      console.log(coverage.line());
      expect({ states: coverage.missingStates, transitions: coverage.missingTransitions.map((k) => describeTransition(k, machine)) }).toEqual({
        states: [],
        transitions: [],
      });
    });
  });
}
