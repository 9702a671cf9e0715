/**
 * Shared pieces of the ClientServer contract tests (both stacks, public API only): the types their hosts run —
 * Signaled (holds its host in Relocating until it defers, support/s15-states.ts holdSignaled), Closer (holds its
 * host in Draining after the drain, holdClosing) and a plain Spot to move — and handlers that wait until the test
 * releases them.
 */
import { defineSpot, FrameworkRuntimeState, type FrameworkRuntime, type ServeInfo } from '../../runtime';
import { Closer, json, Signaled } from '../support/hosts';

/** A plain preserved Spot: something for a Relocate to move. */
export const Plain = defineSpot<{ n: number }>({
  type: 'CsPlain',
  kind: 'user',
  relocation: json(),
  create: () => ({ n: 0 }),
  receive: (state) => ++state.n,
});

export const TYPES = [Signaled, Closer, Plain];
export const S = FrameworkRuntimeState;

/** A handler that answers its host's nodeId, except for requests { hold: tag }, which wait until `release(tag)`. */
export function serverHandler(nodeId: string) {
  const waiting = new Map<string, (value: unknown) => void>();
  const held = new Map<string, ServeInfo>();
  let runs = 0;
  const handler = (request: unknown, info: ServeInfo) => {
    runs++;
    const hold = (request as { hold?: string } | null)?.hold;
    if (hold === undefined) return nodeId;
    held.set(hold, info);
    return new Promise((resolve) => waiting.set(hold, resolve));
  };
  return {
    handler,
    runs: () => runs,
    /** The handler for `tag` is running (the call was accepted). */
    accepted: (tag: string) => held.has(tag),
    signalOf: (tag: string) => held.get(tag)?.signal,
    release: (tag: string, value: unknown = `${nodeId}:${tag}`) => waiting.get(tag)?.(value),
  };
}

/** Which hosts answered `n` select-one calls on `channel` from `from`, with counts. */
export async function spread(from: FrameworkRuntime, channel: string, n: number): Promise<Record<string, number>> {
  const answers = await Promise.all(Array.from({ length: n }, () => from.call<string>(channel, null, { timeoutMs: 10_000 })));
  const counts: Record<string, number> = {};
  for (const a of answers) counts[a] = (counts[a] ?? 0) + 1;
  return counts;
}

/**
 * Hosts `a` and `b` serving `work` (each answers its nodeId), then `c` — started after both are published, so its
 * first descriptor read lists both — which selects both while they are Serving.
 */
export async function servingPair(host: (nodeId: string) => Promise<FrameworkRuntime>) {
  const a = await host('a');
  const b = await host('b');
  const onA = serverHandler('a');
  const onB = serverHandler('b');
  await a.serve('work', onA.handler);
  await b.serve('work', onB.handler);
  const c = await host('c');
  expect(Object.keys(await spread(c, 'work', 60)).sort()).toEqual(['a', 'b']);
  return { a, b, c, onA, onB };
}
