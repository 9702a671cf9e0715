/**
 * Objects and helpers for the Classic fanout and Logical Multicast contract tests (both stacks, public API only).
 */
import { defineSpot, type FrameworkRuntime, type ObjectRef, type Stores } from '../../runtime';
import { Closer, json } from './hosts';
import { eventually } from './stack';

/** What a member Spot records of each multicast it handled: the message and the node that ran the turn. */
export interface Received {
  readonly n: number;
  readonly at: string;
}

export type MemberMessage =
  | { op: 'join' | 'leave'; channel: string }
  | { op: 'log' }
  | { op: 'defer' }
  | { n: number };

function receive(state: { got: Received[] }, message: MemberMessage, ctx: { nodeId: string; channels: { join(c: string): Promise<void>; leave(c: string): Promise<void> }; relocationReady(): { defer(): void } }) {
  if ('n' in message) {
    state.got.push({ n: message.n, at: ctx.nodeId });
    return undefined;
  }
  switch (message.op) {
    case 'join':
      return ctx.channels.join(message.channel).then(() => 'joined');
    case 'leave':
      return ctx.channels.leave(message.channel).then(() => 'left');
    case 'log':
      return state.got;
    case 'defer':
      ctx.relocationReady().defer();
      return 'deferred';
  }
}

/** What every member type shares: a User Spot with a preserved log of the multicasts it handled. */
const member = { kind: 'user' as const, relocation: json<{ got: Received[] }>(), create: () => ({ got: [] as Received[] }), receive };

/** A SpotWide User Spot that joins Channels from its own handler and logs every multicast it handles. */
export const Member = defineSpot<{ got: Received[] }>({ type: 'Member', ...member });

/**
 * A PerActor User Spot: relocation moves its Spot lane in batch 1 (§7) without its application fields (§10.2), so
 * its log starts again on the target.
 */
export const PerActorMember = defineSpot<{ got: Received[] }>({ type: 'PerActorMember', executionMode: 'PerActor', ...member });

/** Like Member, but ApplicationSignaled: its unit waits in Relocating until a { op: 'defer' } turn (§7). */
export const GateMember = defineSpot<{ got: Received[] }>({ type: 'GateMember', executionMode: 'SpotWide', readiness: 'ApplicationSignaled', ...member });

/** The member Spots, and Closer (support/hosts.ts), which holds its host at §14 step 4 until `closer.open()`. */
export const CHANNEL_TYPES = [Member, PerActorMember, GateMember, Closer];

export async function log(from: FrameworkRuntime, spot: string): Promise<Received[]> {
  return (await from.request({ spot }, { op: 'log' }, { timeoutMs: 5000 })) as Received[];
}

export async function waitForLog(from: FrameworkRuntime, spot: string, length: number): Promise<Received[]> {
  let last: Received[] = [];
  await eventually(async () => (last = await log(from, spot).catch(() => last)).length >= length, 10_000, `${spot} to log ${length} multicasts`);
  return last;
}

export async function ownerOf(host: FrameworkRuntime, ref: ObjectRef): Promise<string | undefined> {
  return (await host.locate(ref))?.nodeId;
}

/** The mesh endpoint a host published in its descriptor (public: the stores). */
export async function endpointOf(stores: Stores, nodeId: string, mesh = 'main'): Promise<string> {
  const d = (await stores.descriptors.list()).find((x) => x.nodeId === nodeId);
  if (!d?.endpoints[mesh]) throw new Error(`no ${mesh} endpoint for ${nodeId}`);
  return d.endpoints[mesh]!;
}

/** The host's state as the descriptor store shows it (what other hosts discover). */
export async function publishedState(stores: Stores, nodeId: string): Promise<number | undefined> {
  return (await stores.descriptors.list()).find((x) => x.nodeId === nodeId)?.state;
}

/** A promise and its resolver. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}
