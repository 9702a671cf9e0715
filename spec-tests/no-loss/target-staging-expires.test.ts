/**
 * §11 (Restore validity bounds what the target prepared), §14 step 3: a target unit waiting in staging — prepared,
 * no payload yet — whose source gave up and whose `r.abort` was lost expires after `restoreValidityMs`. It is
 * discarded without running anything, frees what it held, and the target's Shutdown is not held up by it.
 *
 * The fault is at the transport boundary: the source's `r.abort` messages are dropped (the send reports success,
 * as a message lost on the wire would). The source's unit never reaches its seal: the Spot's ApplicationSignaled
 * safe point never comes, so the Relocate deadline ends it before the seal and it sends `r.abort`.
 */
import { createTransport } from '../../transport';
import type { TransportFactory } from '../../transport/types';
import {
  FrameworkRuntimeState,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  TerminationOutcome,
  TerminationReason,
  UNIT_CHANGED,
  type UnitEvent,
} from '../../runtime';
import { BASE_TYPES } from '../support/hosts';
import { eventually, FAST_TIMING, makeStack, STACKS, type Stack } from '../support/stack';

/** The real transport, except that every `r.abort` is lost on the wire. */
function losingAborts(lost: { count: number }): TransportFactory {
  return (options) => {
    const inner = createTransport(options);
    const send: typeof inner.send = (peer, message) => {
      if (message.t === 'r.abort') {
        lost.count++;
        return true;
      }
      return inner.send(peer, message);
    };
    return Object.assign(Object.create(inner) as typeof inner, { send });
  };
}

const RESTORE_VALIDITY_MS = 400;

describe.each(STACKS)('target staging expiry on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await stack.close();
  });

  test('a staged unit whose abort was lost expires within restoreValidityMs, runs nothing, and does not hold up Shutdown', async () => {
    const lost = { count: 0 };
    const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: BASE_TYPES, transport: losingAborts(lost) });
    const target = await stack.host({
      nodeId: 'target',
      applicationVersion: 1,
      types: BASE_TYPES,
      timing: { ...FAST_TIMING, restoreValidityMs: RESTORE_VALIDITY_MS },
    });
    const targetEvents: UnitEvent[] = [];
    target.on(UNIT_CHANGED, (e) => void targetEvents.push(e));
    await source.createSpot('Signaled', 'sig');
    await source.request({ spot: 'sig' }, { op: 'x' });

    // The unit is prepared on the target, then never sealed: the deadline stops it and its abort is lost.
    const relocation = source.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 1000 });
    await eventually(() => target.diagnostics().units.targetInFlight === 1, 1000, 'unit staged on the target');
    const result = await relocation;
    expect(result).toMatchObject({ outcome: RelocationOutcome.Blocked, reason: RelocationReason.DeadlineExceeded });
    expect(lost.count).toBe(1);
    expect(source.status.state).toBe(FrameworkRuntimeState.Serving);

    // Expired and discarded, bounded by restore validity (plus scheduling slack).
    await eventually(() => target.diagnostics().units.targetInFlight === 0, RESTORE_VALIDITY_MS + 2000, 'staged unit expired');
    expect(targetEvents.map((e) => e.state)).toEqual(['discarded']);
    expect(await target.locate({ spot: 'sig' })).toMatchObject({ nodeId: 'source' });
    // The source kept the Spot and goes on serving it; nothing of it ran on the target.
    expect(await source.request({ spot: 'sig' }, { op: 'x' }, { timeoutMs: 2000 })).toEqual({ n: 2, node: 'source' });

    // The target's Shutdown is not held by the expired unit.
    expect(await target.shutdown({ deadlineMs: 1500 })).toEqual({ outcome: TerminationOutcome.Stopped, reason: TerminationReason.None });
  }, 30_000);
});
