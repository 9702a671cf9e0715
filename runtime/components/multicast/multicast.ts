/**
 * Logical Multicast (§15): a message to every Spot that joined a Channel, from the member snapshot taken at send
 * time.
 *
 * Membership lives in the channel store (stores/types.ts ChannelStore), keyed by the Spot — not by the node that
 * hosts it — so it is visible cluster-wide and survives the Spot's relocation. A multicast reads the snapshot
 * once, copies the message once (runtime/codec.ts) and hands one copy per member to the router as `host.send` to
 * `{ spot }` would: each delivery follows the owner route, relocation hold/relay and Message Follow, so a Spot that
 * is moving gets it exactly once, in order, through its new owner.
 *
 * §15 Logical Multicast, as decided here (docs/concepts.md "Logical Multicast"):
 * - Relocating / Relocated: the host is excluded from new target snapshots — a snapshot names Spots, never hosts,
 *   so no delivery is pinned to this host's local objects, and this host admits no new membership (a join here is
 *   refused, §15 "Spot/Actor create and join"). Multicasts sent from it are admitted; accepted ones are kept.
 * - Draining: new multicasts (and joins) are refused; accepted submissions are sent before the host closes.
 * Submissions from one host are sent in submission order, so per-sender order holds for every member.
 */
import { randomUUID } from 'node:crypto';
import { encodeValue } from '../../codec';
import type { ObjectRef } from '../../context';
import { AdmissionError, ArgumentError, RequestError } from '../../errors';
import { checkId, keyOfRef } from '../../keys';
import type { ChannelMember, ChannelStore } from '../../../stores/types';
import { FrameworkRuntimeState, nameOf } from '../../../vocabulary';
import type { ComponentPorts, HostComponent } from '../component';

export const MULTICAST = 'multicast';

/** A Spot as a Channel member: `{ spot }`, with the type of an Instance Spot so a multicast can place it. */
export type ChannelMemberRef = { readonly spot: string; readonly type?: string };

export interface MulticastResult {
  /** Members in the snapshot, each sent one copy. */
  readonly targets: number;
}

export class MulticastComponent implements HostComponent {
  readonly name = MULTICAST;
  /** Accepted submissions and membership writes not finished yet (§4 settle, §14 drain). */
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly joins = new Set<Promise<unknown>>();
  /** The last accepted submission: the next one sends after it (per-sender order). */
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(private readonly ports: ComponentPorts) {}

  // ── membership ────────────────────────────────────────────────────────────────────────

  /** `host.joinChannel` and a Spot's `ctx.channels.join`: new membership is admitted only in Serving (§15). */
  async join(ref: ChannelMemberRef, channel: string, field = 'spot'): Promise<void> {
    const member = memberOf(ref, field);
    checkId(channel, 'channel');
    this.admit('joinChannel', [FrameworkRuntimeState.Serving]);
    await this.track(this.joins, this.channels.join(channel, member, randomUUID()));
  }

  /** Leaving only shrinks future snapshots: admitted until the host stopped. */
  async leave(ref: ChannelMemberRef, channel: string, field = 'spot'): Promise<void> {
    const member = memberOf(ref, field);
    checkId(channel, 'channel');
    this.admit('leaveChannel', [FrameworkRuntimeState.Serving, FrameworkRuntimeState.Relocating, FrameworkRuntimeState.Relocated, FrameworkRuntimeState.Draining]);
    await this.track(this.joins, this.channels.leave(channel, member.spot, randomUUID()));
  }

  // ── multicast ─────────────────────────────────────────────────────────────────────────

  multicast(channel: string, message: unknown): Promise<MulticastResult> {
    let body: Uint8Array;
    let snapshot: Promise<ChannelMember[]>;
    try {
      checkId(channel, 'channel');
      body = encodeValue(message, 'message');
      this.admit('multicast', [FrameworkRuntimeState.Serving, FrameworkRuntimeState.Relocating, FrameworkRuntimeState.Relocated]);
      // The snapshot is taken now; the sends wait for the submissions accepted before this one.
      snapshot = this.channels.members(channel);
    } catch (error) {
      return Promise.reject(error);
    }
    const previous = this.tail;
    const submission = (async (): Promise<MulticastResult> => {
      const members = await snapshot;
      await previous;
      if (this.closed) throw new RequestError('shutdown', `the host shut down before multicast to '${channel}' was sent (docs/concepts.md "Logical Multicast")`);
      for (const member of members) {
        const to: ObjectRef = member.type ? { spot: member.spot, type: member.type } : { spot: member.spot };
        try {
          this.ports.sendToObject(to, body);
        } catch (error) {
          // One member the router cannot take does not keep the others from theirs.
          this.ports.logger.error({ channel, spot: member.spot, err: error }, 'multicast could not be sent to a member');
        }
      }
      return { targets: members.length };
    })();
    this.tail = submission.catch(() => undefined);
    return this.track(this.inFlight, submission);
  }

  private get channels(): ChannelStore {
    const store = this.ports.stores.channels as ChannelStore | undefined;
    if (!store) throw new TypeError('Logical Multicast needs a channel store: use memoryStores() or redisStores() (their `channels`)');
    return store;
  }

  private admit(call: string, states: readonly FrameworkRuntimeState[]): void {
    const state = this.ports.state();
    if (states.includes(state)) return;
    const name = nameOf(FrameworkRuntimeState, state);
    throw new AdmissionError(name, `${call} is not admitted while the host is ${name} (see docs/concepts.md "Logical Multicast")`);
  }

  private track<T>(set: Set<Promise<unknown>>, work: Promise<T>): Promise<T> {
    set.add(work);
    const done = () => set.delete(work);
    work.then(done, done);
    return work;
  }

  // ── host coordination ─────────────────────────────────────────────────────────────────

  /** §4 first row: a join in flight finishes before the host fixes its inventory. */
  async settleAccepted(): Promise<void> {
    while (this.joins.size) await Promise.allSettled([...this.joins]);
  }

  /** §14 step 3: accepted submissions are sent (and membership writes end) before the host closes. */
  async drain(signal: AbortSignal): Promise<void> {
    const all = async () => {
      while (this.inFlight.size || this.joins.size) await Promise.allSettled([...this.inFlight, ...this.joins]);
    };
    await new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      signal.addEventListener('abort', () => resolve(), { once: true });
      void all().then(resolve);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  forceClose(): void {
    this.closed = true;
  }
}

function memberOf(ref: ChannelMemberRef, field: string): ChannelMember {
  if (typeof ref !== 'object' || ref === null || (ref as { actor?: unknown }).actor !== undefined)
    throw new ArgumentError(field, 'must be { spot: id } (only a Spot joins a Channel)');
  keyOfRef(ref, field);
  for (const key of Object.keys(ref)) if (key !== 'spot' && key !== 'type') throw new ArgumentError(`${field}.${key}`, 'is not part of a Spot reference (known: spot, type)');
  return ref.type !== undefined ? { spot: ref.spot, type: ref.type } : { spot: ref.spot };
}

export function createMulticast(ports: ComponentPorts): MulticastComponent {
  return new MulticastComponent(ports);
}
