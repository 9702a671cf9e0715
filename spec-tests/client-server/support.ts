/**
 * Shared pieces of the ClientServer contract tests (both stacks, public API only): a Spot that holds its host in
 * Relocating until the test lets it go, a Spot whose HostShutdown callback holds the host in Draining, and handlers
 * that wait until the test releases them.
 */
import {
  defineSpot,
  FrameworkRuntimeState,
  preserveState,
  RelocationMode,
  type FrameworkRuntime,
  type RelocationResult,
  type ServeInfo,
} from '../../runtime';
import { eventually } from '../support/stack';

const json = <S>() => preserveState<S>({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString('utf8')) as S });

/** SpotWide, ApplicationSignaled: its unit waits for the safe point (the host stays Relocating) until { op: 'defer' }. */
export const Gate = defineSpot<{ n: number }>({
  type: 'CsGate',
  kind: 'user',
  executionMode: 'SpotWide',
  readiness: 'ApplicationSignaled',
  relocation: json(),
  create: () => ({ n: 0 }),
  receive: (state, message: { op: 'defer' | 'ping' }, ctx) => {
    if (message.op === 'defer') ctx.relocationReady().defer();
    return ++state.n;
  },
});

/** A Spot whose HostShutdown closing callback waits until `openClosing()` (holds its host in Draining after drain). */
const closing = { open: (): void => undefined, calls: 0 };
export const Closer = defineSpot<object>({
  type: 'CsCloser',
  kind: 'user',
  relocation: json(),
  create: () => ({}),
  receive: () => 'ok',
  onClosing: () => {
    closing.calls++;
    return new Promise<void>((resolve) => (closing.open = resolve));
  },
});
export const closingCalls = () => closing.calls;

/** A plain preserved Spot: something for a Relocate to move. */
export const Plain = defineSpot<{ n: number }>({
  type: 'CsPlain',
  kind: 'user',
  relocation: json(),
  create: () => ({ n: 0 }),
  receive: (state) => ++state.n,
});
export const openClosing = () => closing.open();

export const TYPES = [Gate, Closer, Plain];
export const S = FrameworkRuntimeState;
export const PM = RelocationMode.PlannedMaintenance;

/**
 * Starts a Relocate of `host` that stays in Relocating (its Gate unit waits for the application's safe point).
 * `finish()` signals the safe point and resolves with the Relocate result (Relocated).
 */
export async function holdRelocating(host: FrameworkRuntime, spot = 'gate'): Promise<{ finish(): Promise<RelocationResult> }> {
  await host.createSpot('CsGate', spot);
  const result = host.relocate({ mode: PM, deadlineMs: 20_000 });
  await eventually(() => host.status.state === S.Relocating, 10_000, `${host.nodeId} Relocating`);
  return {
    async finish() {
      // §7: defer() counts only once the unit waits for its safe point (after the target prepared it).
      await eventually(() => (host.diagnostics().units.sourceByState['safePoint'] ?? 0) > 0, 10_000, 'unit waiting for its safe point');
      await host.request({ spot }, { op: 'defer' });
      return result;
    },
  };
}

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

/** Records how a promise ended, and how often (a promise settles once; this also shows it did at all). */
export function outcome<T>(p: Promise<T>) {
  const r: { settled: number; value?: T; error?: unknown } = { settled: 0 };
  p.then(
    (value) => {
      r.settled++;
      r.value = value;
    },
    (error: unknown) => {
      r.settled++;
      r.error = error;
    },
  );
  return r;
}
