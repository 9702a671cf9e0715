/**
 * The follow window on fake ports and SimulatedClock (issue [6/10] item 4): one shared timer per window kind; S4 after
 * MessageFollowDuration on the source clock; each retransmission copy cleaned exactly once; Shutdown cuts routes
 * without S4; a reconnected target gets the relay batch and cutover again (§8, §13, §14).
 */
import type { NodeRef } from '../../stores/types';
import type { RuntimeMessage } from '../../transport/types';
import { SimulatedClock } from '../clock';
import { silentLog } from '../logger';
import type { UnitEvent } from './events';
import { FollowWindow } from './follow-window';
import type { SourceUnit } from './source/unit';

const TARGET: NodeRef = { nodeId: 'target', lifecycleGeneration: 1 };
const FOLLOW_MS = 10_000;
const CUTOVER_WAIT_MS = 1_000;

function setup() {
  const clock = new SimulatedClock();
  const removed: string[] = [];
  const sent: RuntimeMessage[] = [];
  const events: UnitEvent[] = [];
  const replyWaitsEnded: string[] = [];
  let ended = 0;
  let closed = false;
  const units = new Map<string, SourceUnit>();
  const window = new FollowWindow({
    clock,
    logger: silentLog,
    timing: { messageFollowDurationMs: FOLLOW_MS, relocationCutoverWaitTimeoutMs: CUTOVER_WAIT_MS },
    routes: { removeFollow: (key) => void removed.push(key) },
    unitEvents: { active: true, emit: (e) => void events.push(e) },
    send: (_to, message) => sent.push(message) > 0,
    sourceUnit: (id) => units.get(id),
    closeRelocatedOut: () => undefined,
    closed: () => closed,
    windowEnded: () => void ended++,
  });
  const unit = (id: string, s0: number, s1: number) => {
    const machineEvents: string[] = [];
    const u = {
      plan: { id, kind: 'actor', root: { key: `a:${id}` } },
      keys: [`a:${id}`],
      target: TARGET,
      s0,
      s1,
      actor: { send: (e: { type: string }) => void machineEvents.push(e.type) },
      replyWaitEnded: () => void replyWaitsEnded.push(id),
    } as unknown as SourceUnit;
    units.set(id, u);
    return { u, machineEvents };
  };
  return { clock, window, removed, sent, events, replyWaitsEnded, unit, units, ended: () => ended, close: () => ((closed = true), window.close()) };
}

test('S1 opens a follow route and a retransmission copy; the copy is cleaned once after the cutover wait, the route ends at S4', () => {
  const t = setup();
  const { u, machineEvents } = t.unit('u1', 0, 5);
  t.clock.set(5);
  t.window.onCutOver(u, []);
  expect([t.window.followRoutes, t.window.retransmissionCopies, t.window.ended]).toEqual([1, 1, false]);
  t.clock.increment(CUTOVER_WAIT_MS);
  expect([t.window.retransmissionCopies, t.window.copiesCleaned, t.ended()]).toEqual([0, 1, 1]);
  t.clock.increment(FOLLOW_MS - CUTOVER_WAIT_MS);
  expect(machineEvents).toEqual(['FOLLOW_EXPIRED']);
  expect(t.removed).toEqual(['a:u1']);
  expect(t.events).toEqual([expect.objectContaining({ unit: 'u1', state: 'followEnded', point: 'S4', at: 5 + FOLLOW_MS })]);
  expect([t.window.followRoutes, t.window.ended, t.ended()]).toEqual([0, true, 2]);
});

test('a reconnected target gets the relay batch and cutover again, within the window only', () => {
  const t = setup();
  const { u } = t.unit('u1', 0, 0);
  const relay = [{ id: 'm1', to: 'a:u1', gen: 1, body: new Uint8Array([1]), from: TARGET }];
  t.window.onCutOver(u, relay);
  t.window.onPeer({ ...TARGET, state: 'Ready' } as never);
  expect(t.sent.map((m) => [m.t, m.retransmit])).toEqual([['r.cutover', true]]);
  expect(t.window.retransmissionsSent).toBe(1);
  t.clock.increment(CUTOVER_WAIT_MS);
  t.window.onPeer({ ...TARGET, state: 'Ready' } as never);
  expect(t.sent).toHaveLength(1);
});

test('Shutdown cuts the routes: ROUTE_CUT, no S4; a reply wait that ends after close sends nothing', () => {
  const t = setup();
  const { u, machineEvents } = t.unit('u1', 0, 0);
  const waiting = t.unit('u2', 0, 0);
  t.window.onCutOver(u, []);
  t.window.awaitReply(waiting.u);
  t.close();
  expect(machineEvents).toEqual(['ROUTE_CUT']);
  expect(t.events).toEqual([]);
  expect(t.replyWaitsEnded).toEqual([]);
});

test('one shared reply wait: a unit still sealed when it ends is told; one that left (unregistered) is not kept', () => {
  const t = setup();
  const a = t.unit('a', 0, 0);
  const b = t.unit('b', 0, 0);
  t.window.awaitReply(a.u);
  t.window.awaitReply(b.u);
  t.units.delete('b'); // cut over meanwhile
  t.clock.increment(Math.max(1000, CUTOVER_WAIT_MS));
  expect(t.replyWaitsEnded).toEqual(['a']);
});
