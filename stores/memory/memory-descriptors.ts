/**
 * Descriptor Store of the memory provider. Time comes from the injected clock so lease expiry is testable
 * without sleeping (STYLE.md "Simulated time in tests").
 */
import { randomBytes } from 'node:crypto';
import { LeaseHeldError } from '../lease-held-error';
import type { DescriptorStore, NodeDescriptor, OwnerLease } from '../types';
import { descriptorSchema, leaseMsSchema, leaseSchema, nodeIdSchema, parse } from '../validation';

interface Held {
  readonly lease: OwnerLease;
  readonly expiresAt: number;
  readonly descriptor: NodeDescriptor;
}

export class MemoryDescriptorStore implements DescriptorStore {
  private readonly generations = new Map<string, number>();
  private readonly held = new Map<string, Held>();

  constructor(private readonly now: () => number) {}

  async nextLifecycleGeneration(nodeId: string): Promise<number> {
    const next = (this.generations.get(parse(nodeIdSchema, nodeId, 'nextLifecycleGeneration')) ?? 0) + 1;
    this.generations.set(nodeId, next);
    return next;
  }

  async acquire(descriptor: NodeDescriptor, leaseMs: number): Promise<OwnerLease> {
    const value = parse(descriptorSchema, descriptor, 'acquire') as NodeDescriptor;
    parse(leaseMsSchema, leaseMs, 'acquire leaseMs');
    // Exclusive: any live lease refuses, whatever its generation (a duplicate nodeId must not take a live host's lease).
    const current = this.live(value.nodeId);
    if (current) throw new LeaseHeldError(value.nodeId, current.lease.lifecycleGeneration, value.lifecycleGeneration, current.expiresAt - this.now());
    const lease: OwnerLease = { nodeId: value.nodeId, lifecycleGeneration: value.lifecycleGeneration, token: randomBytes(16).toString('hex') };
    this.held.set(value.nodeId, { lease, expiresAt: this.now() + leaseMs, descriptor: value });
    return lease;
  }

  async renew(lease: OwnerLease, leaseMs: number): Promise<boolean> {
    parse(leaseMsSchema, leaseMs, 'renew leaseMs');
    const current = this.holding(lease, 'renew');
    if (current) this.held.set(lease.nodeId, { ...current, expiresAt: this.now() + leaseMs });
    return current !== undefined;
  }

  async publish(lease: OwnerLease, descriptor: NodeDescriptor): Promise<boolean> {
    const value = parse(descriptorSchema, descriptor, 'publish') as NodeDescriptor;
    const current = this.holding(lease, 'publish');
    if (current) this.held.set(lease.nodeId, { ...current, descriptor: value });
    return current !== undefined;
  }

  async release(lease: OwnerLease): Promise<void> {
    if (this.holding(lease, 'release')) this.held.delete(lease.nodeId);
  }

  async list(): Promise<NodeDescriptor[]> {
    return [...this.held.keys()].flatMap((nodeId) => this.live(nodeId)?.descriptor ?? []);
  }

  private live(nodeId: string): Held | undefined {
    const current = this.held.get(nodeId);
    if (current && current.expiresAt > this.now()) return current;
    this.held.delete(nodeId);
    return undefined;
  }

  private holding(lease: OwnerLease, what: string): Held | undefined {
    parse(leaseSchema, lease, what);
    const current = this.live(lease.nodeId);
    return current?.lease.token === lease.token ? current : undefined;
  }
}
