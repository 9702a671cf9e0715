/**
 * Descriptor Store on Redis: lifecycle generations (INCR per RID) and descriptors under an owner lease (§14).
 * All keys share the `{d}` hash tag so list() is one script and therefore one snapshot.
 */
import { randomBytes } from 'node:crypto';
import { LeaseHeldError } from '../lease-held-error';
import type { DescriptorStore, NodeDescriptor, OwnerLease } from '../types';
import { descriptorSchema, leaseMsSchema, leaseSchema, nodeIdSchema, parse } from '../validation';
import type { RedisContext } from './context';
import { guarded } from './guarded';

/** Stored lease value: the run's lifecycle generation and the lease token. */
const leaseValue = (lease: OwnerLease): string => `${lease.lifecycleGeneration}:${lease.token}`;

/**
 * Publish sequence: microseconds of the monotonic clock, so it only grows within this process (the one that
 * holds the lease), across store instances too.
 */
const publishSequence = (): number => Number(process.hrtime.bigint() / 1000n);

export class RedisDescriptorStore implements DescriptorStore {
  constructor(private readonly ctx: RedisContext) {}

  /** A lost INCR reply is retried: that skips a number, which is harmless (generations need only be new). */
  async nextLifecycleGeneration(nodeId: string): Promise<number> {
    const key = this.ctx.keys.lifecycle(parse(nodeIdSchema, nodeId, 'nextLifecycleGeneration'));
    return this.ctx.client.retrying('nextLifecycleGeneration', () => this.ctx.client.redis.incr(key));
  }

  async acquire(descriptor: NodeDescriptor, leaseMs: number): Promise<OwnerLease> {
    const value = parse(descriptorSchema, descriptor, 'acquire');
    parse(leaseMsSchema, leaseMs, 'acquire leaseMs');
    const { client, keys, opTtlMs } = this.ctx;
    const lease: OwnerLease = { nodeId: value.nodeId, lifecycleGeneration: value.lifecycleGeneration, token: randomBytes(16).toString('hex') };
    const opKey = keys.op(keys.nodes, lease.token);
    const [text] = await guarded(client, 'acquire', opTtlMs, [opKey], (_, token) =>
      client.script(
        'leaseAcquire',
        [keys.lease(lease.nodeId), keys.descriptor(lease.nodeId), keys.nodes, opKey],
        [opTtlMs, token, lease.lifecycleGeneration, lease.token, leaseMs, JSON.stringify(value), encodeURIComponent(lease.nodeId)],
      ),
    );
    const reply = JSON.parse(text!) as { ok?: true; held?: number; pttl?: number };
    if (reply.held !== undefined) throw new LeaseHeldError(lease.nodeId, reply.held, lease.lifecycleGeneration, Math.max(0, reply.pttl ?? 0));
    return lease;
  }

  async renew(lease: OwnerLease, leaseMs: number): Promise<boolean> {
    parse(leaseSchema, lease, 'renew');
    parse(leaseMsSchema, leaseMs, 'renew leaseMs');
    return (await this.leaseScript('renew', 'leaseRenew', lease, [leaseMs])) === 1;
  }

  async publish(lease: OwnerLease, descriptor: NodeDescriptor): Promise<boolean> {
    parse(leaseSchema, lease, 'publish');
    const value = parse(descriptorSchema, descriptor, 'publish');
    return (await this.leaseScript('publish', 'leasePublish', lease, [publishSequence(), JSON.stringify(value)])) === 1;
  }

  async release(lease: OwnerLease): Promise<void> {
    parse(leaseSchema, lease, 'release');
    const { client, keys } = this.ctx;
    await client.retrying('release', () =>
      client.script('leaseRelease', [keys.lease(lease.nodeId), keys.descriptor(lease.nodeId), keys.nodes], [leaseValue(lease), encodeURIComponent(lease.nodeId)]),
    );
  }

  async list(): Promise<NodeDescriptor[]> {
    const { client, keys } = this.ctx;
    const reply = (await client.retrying('list', () => client.script('descriptorsList', [keys.nodes], [keys.leaseBase, keys.descriptorBase]))) as string[];
    return reply.map((text) => JSON.parse(text) as NodeDescriptor);
  }

  /** Token-compare scripts are safe to repeat (renew extends, publish is ordered by its sequence), so: retried. */
  private leaseScript(what: string, name: 'leaseRenew' | 'leasePublish', lease: OwnerLease, args: readonly (string | number)[]): Promise<unknown> {
    const { client, keys } = this.ctx;
    return client.retrying(what, () => client.script(name, [keys.lease(lease.nodeId), keys.descriptor(lease.nodeId)], [leaseValue(lease), ...args]));
  }
}
