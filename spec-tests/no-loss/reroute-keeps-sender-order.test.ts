/**
 * §12 per-sender order across a re-route. Client c holds cached routes naming host a for a set of actors; the
 * actors relocate a → b and a shuts down, so a is unreachable when c sends again. The messages sent to the
 * unreachable cached owner are re-routed (router.reroute) — and a message c sends later to the same object must
 * not overtake them: b processes every sequence number exactly once and in c's send order.
 */
import { RelocationMode, RelocationOutcome, TerminationOutcome, type ObjectRef } from '../../runtime';
import type { Transport } from '../../transport/types';
import { eventually, FAST_TIMING, makeStack, STACKS, type Stack } from '../support/stack';
import { ALL_TYPES, checkSequence, type Ledger } from '../support/workload';
import { handleTransport, quietLog, readyTo, tick } from './support';

const { log } = quietLog();

const timing = { ...FAST_TIMING, messageFollowDurationMs: 200 };
const ACTORS = 20;
const BURST = 5; // sent at once to the unreachable cached owner
const LATER = 40; // then one per actor per event-loop turn

describe.each(STACKS)('re-route keeps sender order on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await stack.close();
  });

  test('messages re-routed away from an unreachable cached owner are not overtaken by later sends to the same object', async () => {
    const a = await stack.host({ nodeId: 'a', applicationVersion: 1, types: ALL_TYPES, log, timing });
    await stack.host({ nodeId: 'b', applicationVersion: 2, types: ALL_TYPES, log, timing });
    const box: { transport?: Transport } = {};
    const c = await stack.host({ nodeId: 'c', applicationVersion: 1, types: ALL_TYPES, log, timing, transport: handleTransport(box) });
    const refs: ObjectRef[] = [];
    for (let i = 0; i < ACTORS; i++) {
      await a.createActor('Counter', `o-${i}`);
      refs.push({ actor: `o-${i}` });
    }
    // c caches a route naming a for every actor.
    await eventually(async () => (await c.request(refs[0]!, { op: 'where' }, { timeoutMs: 500 }).catch(() => '')) === 'a', 5000, 'c reaches a');
    for (const ref of refs) expect(await c.request(ref, { op: 'where' })).toBe('a');

    // The actors move to b; a shuts down. c has not sent anything since, so its cached routes still name a.
    const result = await a.relocate({ mode: RelocationMode.RollingUpdate, targetApplicationVersion: 2, deadlineMs: 10_000 });
    expect(result.outcome).toBe(RelocationOutcome.Relocated);
    await eventually(() => a.status.safeToShutdown, 5000, 'safeToShutdown');
    expect((await a.shutdown({ deadlineMs: 5000 })).outcome).toBe(TerminationOutcome.Stopped);
    await eventually(() => !readyTo(box.transport, 'a'), 5000, 'c lost its connection to a');

    // A burst to the unreachable cached owner (re-routed), then later sends to the same objects.
    for (let n = 0; n < BURST; n++) for (const ref of refs) c.send(ref, { op: 'seq', from: 'c', n });
    for (let n = BURST; n < BURST + LATER; n++) {
      for (const ref of refs) c.send(ref, { op: 'seq', from: 'c', n });
      await tick();
    }

    const total = BURST + LATER;
    const ledger = (ref: ObjectRef) => c.request(ref, { op: 'ledger' }, { timeoutMs: 5000 }) as Promise<Ledger>;
    await eventually(async () => {
      for (const ref of refs) if (((await ledger(ref)).seen.c ?? []).length < total) return false;
      return true;
    }, 5000, 'every message processed');
    const orders: Record<string, string> = {};
    for (const ref of refs) {
      const state = await ledger(ref);
      const wrong = checkSequence(state.seen.c, total);
      if (wrong !== undefined) orders[(ref as { actor: string }).actor] = `${wrong}; processed ${state.seen.c!.slice(0, 16).join(',')}…`;
    }
    // Expected: every object saw 0..total-1 exactly once, in order (no object listed here).
    expect(orders).toEqual({});
  }, 30_000);
});
