/**
 * Spec 05 §17 "Interruption budget and pacing", the retransmission item (§13). The fault is injected at the target's
 * transport boundary (a wrapper around the real transport's message handler): the first cutover of the SpotWide
 * unit is lost together with the connection, after the leading part of its relay batch (larger than one frame)
 * was received. The connection is re-established by the dialing side inside the retransmission window.
 * Runs on both stacks.
 */
import { createTransport } from '../../transport';
import type { RuntimeMessage, Transport, TransportFactory } from '../../transport/types';
import { RelocationMode, RelocationOutcome, RelocationReason, UNIT_CHANGED, type FrameworkRuntime, type UnitEvent } from '../../runtime';
import { eventually, FAST_TIMING, makeStack, STACKS, type Stack } from '../support/stack';
import { ALL_TYPES, checkSequence, type Ledger } from '../support/workload';

const PM = RelocationMode.PlannedMaintenance;
/** Held for the aggregate during its hold: ~2 MB of relay, so the batch travels as an r.relay part plus r.cutover. */
const BURST = 12_000;
const WINDOW_MS = 1500; // relocationCutoverWaitTimeoutMs: the cutover wait and the retransmission window (§13)

interface Seen {
  t: string;
  u: string;
  relay: number;
  retransmit: boolean;
  first: boolean;
}

describe.each(STACKS)('Cutover retransmission on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await stack.close();
  });

  test('If the connection is re-established within the retransmission window, the source resends the pre-boundary relay batch and cutover, the target replaces partially received staging with the complete retransmitted batch, and once the window ends, the copy is cleaned up exactly once and no further retransmission occurs.', async () => {
    const timing = { ...FAST_TIMING, relocationCutoverWaitTimeoutMs: WINDOW_MS, messageFollowDurationMs: WINDOW_MS };
    // 'a-source' < 'b-target': the source dials, so it is the side that reconnects.
    const source = await stack.host({ nodeId: 'a-source', applicationVersion: 1, types: ALL_TYPES, timing });

    const seen: Seen[] = [];
    let spotWideUnit: string | undefined;
    let dropped = false;
    let targetTransport: Transport | undefined;
    const lossy: TransportFactory = (options) => {
      const transport = createTransport({
        ...options,
        handlers: {
          ...options.handlers,
          onMessage: (from, message: RuntimeMessage) => {
            if (message.t === 'r.prepare')
              for (const unit of message.units as { u: string; kind: string }[]) if (unit.kind === 'spotWide') spotWideUnit = unit.u;
            if (message.t === 'r.relay' || message.t === 'r.cutover') {
              seen.push({ t: message.t, u: message.u as string, relay: (message.relay as unknown[]).length, retransmit: !!message.retransmit, first: !!message.first });
              if (message.t === 'r.cutover' && message.u === spotWideUnit && !dropped) {
                // The connection fails with the cutover in flight: it never reaches the target.
                dropped = true;
                transport.disconnect!(from);
                return;
              }
            }
            options.handlers.onMessage(from, message);
          },
        },
      });
      targetTransport = transport;
      return transport;
    };
    const target = await stack.host({ nodeId: 'b-target', applicationVersion: 1, types: ALL_TYPES, timing, transport: lossy });
    const sourceRef = { nodeId: source.nodeId, lifecycleGeneration: source.lifecycleGeneration };

    await source.createSpot('Room', 'room');
    for (let i = 0; i < 3; i++) await source.createActor('Player', `member-${i}`, { spot: 'room' });
    for (let i = 0; i < 2; i++) await source.createActor('Counter', `counter-${i}`);
    const sourceEvents: UnitEvent[] = [];
    const targetEvents: UnitEvent[] = [];
    source.on(UNIT_CHANGED, (e) => {
      if (e.side !== 'source') return;
      sourceEvents.push(e);
      // The seal is applied when 'sealed' fires: these are held and travel in the pre-boundary relay batch.
      if (e.state === 'sealed' && e.kind === 'spotWide') {
        for (let n = 0; n < BURST; n++) source.send({ spot: 'room' }, { op: 'seq', from: 'held', n });
        for (let i = 0; i < 3; i++) for (let n = 0; n < 5; n++) source.send({ actor: `member-${i}` }, { op: 'seq', from: 'held', n });
      }
    });
    target.on(UNIT_CHANGED, (e) => void (e.side === 'target' && targetEvents.push(e)));

    // Relocated at the first cutover submit terminal: the loss is invisible to the source's result (§13).
    expect(await source.relocate({ mode: PM, deadlineMs: 10_000 })).toEqual({ mode: PM, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });
    expect(source.diagnostics()).toMatchObject({ retransmissionCopies: 3, retransmissionCopiesCleaned: 0 });

    // The target commits from the retransmitted cutover, not from its cutover-wait fallback.
    await eventually(() => targetEvents.some((e) => e.unit === spotWideUnit && e.state === 'opened'), 5000, 'aggregate opened on the target');
    expect(dropped).toBe(true);
    expect(targetEvents.filter((e) => e.state === 'committed' && e.fellBack)).toEqual([]);
    expect(targetEvents.filter((e) => e.unit === spotWideUnit).map((e) => e.state)).toEqual(['relayReady', 'committed', 'opened']);
    const sent = source.diagnostics().retransmissionsSent;
    expect(sent).toBeGreaterThanOrEqual(1);
    expect(sent).toBeLessThanOrEqual(3); // at most once per copy for one re-established connection

    // For the aggregate: the first transmission's leading part arrived and its cutover was lost; the retransmission
    // sent the whole batch again (a part plus the cutover), starting the span afresh.
    const batch = seen.filter((s) => s.u === spotWideUnit);
    const firstTry = batch.filter((s) => !s.retransmit);
    const retry = batch.filter((s) => s.retransmit);
    expect(firstTry.map((s) => [s.t, s.first])).toEqual([...firstTry.slice(0, -1).map((s, i) => ['r.relay', i === 0]), ['r.cutover', false]]);
    expect(firstTry.length).toBeGreaterThanOrEqual(2);
    expect(retry.map((s) => s.t)).toEqual(firstTry.map((s) => s.t));
    expect(retry[0]!.first).toBe(true);
    const total = (list: Seen[]) => list.reduce((n, s) => n + s.relay, 0);
    expect(total(retry)).toBe(total(firstTry));
    expect(total(retry)).toBeGreaterThanOrEqual(BURST + 15);

    // Replacement, not a merge: every held message ran exactly once, in order, on the target.
    const ledger = (ref: { spot: string } | { actor: string }) => target.request(ref, { op: 'ledger' }, { timeoutMs: 5000 }) as Promise<Ledger>;
    const room = await ledger({ spot: 'room' });
    expect(checkSequence(room.seen.held, BURST)).toBeUndefined();
    expect(room.nodes).toEqual(['b-target']);
    for (let i = 0; i < 3; i++) expect(checkSequence((await ledger({ actor: `member-${i}` })).seen.held, 5)).toBeUndefined();

    // The window ends: each copy is cleaned exactly once, and nothing is retransmitted afterwards.
    await eventually(() => source.diagnostics().retransmissionCopies === 0, 5000, 'retransmission windows ended');
    expect(source.diagnostics()).toMatchObject({ retransmissionCopiesCleaned: 3, retransmissionsSent: sent });
    const cutoversSoFar = seen.length;
    targetTransport!.disconnect!(sourceRef);
    await eventually(async () => (await source.request({ actor: 'counter-0' }, { op: 'where' }, { timeoutMs: 500 }).catch(() => '')) === 'b-target', 5000, 'connection re-established');
    expect(source.diagnostics()).toMatchObject({ retransmissionCopies: 0, retransmissionCopiesCleaned: 3, retransmissionsSent: sent });
    expect(seen).toHaveLength(cutoversSoFar);
    expect(sourceEvents.filter((e) => e.state === 'cutOver')).toHaveLength(3);
    void (source as FrameworkRuntime);
  }, 30_000);
});
