/** The host tags every inspection event with its nodeId, for a function and for an `{ next }` observer alike. */
import type { InspectionEvent } from 'xstate';
import { hostSet } from '../spec-tests/support/hosts';
import type { NodeInspectionEvent } from '.';
import { tagInspection } from './inspection';

test('tagInspection: functions and observers get the event with nodeId; anything else is passed through', () => {
  const seen: { type: string; nodeId: string }[] = [];
  const event = () => ({ type: '@xstate.actor', rootId: 'x:0', actorRef: {} }) as unknown as InspectionEvent;
  (tagInspection((e: NodeInspectionEvent) => seen.push({ type: e.type, nodeId: e.nodeId }), 'a') as (e: InspectionEvent) => void)(event());
  const observer = { next: (e: NodeInspectionEvent) => seen.push({ type: e.type, nodeId: e.nodeId }), other: 1 };
  (tagInspection(observer, 'b') as (e: InspectionEvent) => void)(event());
  expect(seen).toEqual([
    { type: '@xstate.actor', nodeId: 'a' },
    { type: '@xstate.actor', nodeId: 'b' },
  ]);
  expect(tagInspection(undefined, 'a')).toBeUndefined();
  expect(tagInspection(42, 'a')).toBe(42);
});

test('two hosts sharing one observer: every machine event names the host it came from', async () => {
  const set = hostSet();
  try {
    const byNode = new Map<string, Set<string>>();
    const inspect = (e: NodeInspectionEvent) => {
      if (e.type !== '@xstate.snapshot') return;
      const id = (e.actorRef as unknown as { logic: { id?: string } }).logic.id;
      if (id === undefined) return; // promise actors (the shutdown steps) have no machine id
      if (!byNode.has(e.nodeId)) byNode.set(e.nodeId, new Set());
      byNode.get(e.nodeId)!.add(id);
    };
    const a = await set.host({ nodeId: 'node-a', applicationVersion: 1, inspect });
    await set.host({ nodeId: 'node-b', applicationVersion: 1, inspect });
    await a.shutdown();
    expect([...byNode.keys()].sort()).toEqual(['node-a', 'node-b']);
    expect(byNode.get('node-a')).toEqual(new Set(['hostLifecycle', 'shutdown']));
    expect(byNode.get('node-b')).toEqual(new Set(['hostLifecycle']));
  } finally {
    await set.close();
  }
});
