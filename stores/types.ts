/**
 * Store interfaces (DESIGN.md "Decisions the missing chapters would have made").
 * Two providers implement them: stores/memory (embedded default, fast test twin) and stores/redis (ioredis).
 * Both are held to one contract suite (stores/contract.ts).
 *
 * Unknown outcomes (§1.1): a provider never guesses. Every write carries an operation id; when a reply is lost
 * the provider fences that id and reads back whether the write applied. A method either resolves with a
 * definite outcome or rejects with StoreUnavailableError.
 */
import type { NodeRef, ObjectId, ObjectKind, NodeDescriptor } from '../vocabulary';

export type { NodeRef, ObjectId, ObjectKind, NodeDescriptor, TypeCapability } from '../vocabulary';

export interface OwnerRecord {
  readonly kind: ObjectKind;
  readonly id: string;
  /** Stable type name of the object (§5 order 3). */
  readonly type: string;
  readonly owner: NodeRef;
  /** Distinguishes deletion and re-creation under the same id (§12). */
  readonly objectGeneration: number;
  /** Fencing token: bumped by every owner or membership change; every change is a CAS on it. */
  readonly authorityGeneration: number;
  /** Actors only: the User Spot the Actor belongs to; undefined = the owner's Entry Spot. */
  readonly spot?: string;
  /**
   * Actors only: true when `spot` is a SpotWide User Spot. Such a member's record lives beside the Spot's record
   * (same hash tag) so the aggregate flip (§10.3) is one script.
   */
  readonly spotWide?: boolean;
}

export interface ClaimRequest {
  readonly object: ObjectId;
  readonly type: string;
  readonly owner: NodeRef;
  readonly opId: string;
  readonly spot?: string;
  readonly spotWide?: boolean;
}

export interface ClaimResult {
  /** true when this call created the record; false when a record already existed (returned as it is). */
  readonly applied: boolean;
  readonly record: OwnerRecord;
}

export interface CasRequest {
  readonly object: ObjectId;
  readonly opId: string;
  readonly expectedAuthorityGeneration: number;
  /** New owner; omitted = keep the owner (membership change only). */
  readonly owner?: NodeRef;
  /** Membership change: a spot id, or null to return the Actor to its owner's Entry Spot. Omitted = keep. */
  readonly spot?: string | null;
  readonly spotWide?: boolean;
}

/** One object of a relocation commit (OwnerCommitRequest). */
export interface OwnerCommitEntry {
  readonly object: ObjectId;
  /** The authority generation the committing node restored the object at; the record goes to this + 1. */
  readonly expectedAuthorityGeneration: number;
  /** The ObjectGeneration the committing node restored: with the generation and owner, it names this change alone. */
  readonly objectGeneration: number;
}

/**
 * A relocation target's owner commit (§13): every entry's record goes from its expected authority generation to
 * `owner` (generation + 1), in one guarded write per call (per hash slot on a cluster) whose results are recorded under
 * `opId` — not one op record per object. An entry whose record already names `owner` at expected + 1 with the same
 * ObjectGeneration was committed before (a retry of a commit whose reply was lost): it answers `applied` again and
 * writes nothing. A replay of the same opId with the same entries answers the recorded results.
 */
export interface OwnerCommitRequest {
  readonly opId: string;
  readonly owner: NodeRef;
  readonly entries: readonly OwnerCommitEntry[];
}

export type CasStatus = 'applied' | 'conflict' | 'missing';
export interface CasResult {
  readonly status: CasStatus;
  /** The record after the call (applied: the new record; conflict: the current one; missing: undefined). */
  readonly record?: OwnerRecord;
}

export interface RemoveRequest {
  readonly object: ObjectId;
  readonly opId: string;
  readonly expectedAuthorityGeneration: number;
}

/** One member of a SpotWide aggregate as read when new work was blocked (§10.3). */
export interface AggregateMember {
  readonly object: ObjectId;
  readonly expectedAuthorityGeneration: number;
}

export interface AggregateStageRequest {
  /** Non-zero 128-bit relocation id, as 32 hex digits (§10.3). */
  readonly relocationId: string;
  readonly spot: ObjectId;
  readonly expectedSpotAuthorityGeneration: number;
  readonly members: readonly AggregateMember[];
  readonly opId: string;
}

export interface AggregateHeader {
  readonly relocationId: string;
  readonly total: number;
  /** sha256 (hex) of each page's encoded content, in page order. */
  readonly pageChecksums: readonly string[];
}

export interface AggregateCommitRequest {
  readonly relocationId: string;
  readonly spot: ObjectId;
  readonly owner: NodeRef;
  readonly opId: string;
  /** The header the stager returned; the script checks the stored header and every page against it. */
  readonly header: AggregateHeader;
}

/**
 * applied: the spot and every member now name `owner`.
 * conflict: some authority generation moved; nothing changed.
 * data-lost: the staged list does not match its header (§13: unrecoverable, never retried or guessed).
 */
export type AggregateCommitStatus = 'applied' | 'conflict' | 'data-lost';
export interface AggregateCommitResult {
  readonly status: AggregateCommitStatus;
  readonly spot?: OwnerRecord;
}

export interface LocationStore {
  get(object: ObjectId): Promise<OwnerRecord | undefined>;
  getMany(objects: readonly ObjectId[]): Promise<(OwnerRecord | undefined)[]>;
  /** Creates the record when absent (object creation, Instance Spot placement). */
  claim(request: ClaimRequest): Promise<ClaimResult>;
  cas(request: CasRequest): Promise<CasResult>;
  /** Many independent CASes in one round trip (one script call per hash slot); one result per request, in order. */
  casMany(requests: readonly CasRequest[]): Promise<CasResult[]>;
  /** A relocation target's owner commit (see OwnerCommitRequest); one result per entry, in order. */
  commitOwners(request: OwnerCommitRequest): Promise<CasResult[]>;
  /** Removes the record only when the caller still holds its authority (§14 cleanup step 2). */
  remove(request: RemoveRequest): Promise<CasResult>;
  /** Writes the relocation target list as pages (<= 1,024 entries, <= 1 MiB each) plus a header. */
  stageAggregate(request: AggregateStageRequest): Promise<AggregateHeader>;
  /** One atomic check-and-flip of the spot and every member (§10.3). */
  commitAggregate(request: AggregateCommitRequest): Promise<AggregateCommitResult>;
  /** Removes staged pages and header (after commit, or when the move is abandoned). Idempotent. */
  discardAggregate(relocationId: string, spot: ObjectId): Promise<void>;
}

export interface OwnerLease {
  readonly nodeId: string;
  readonly lifecycleGeneration: number;
  /** Random token (node:crypto); renew/publish/release compare it. */
  readonly token: string;
}

export interface DescriptorStore {
  /** Atomic counter per RID: a new value for every process run. */
  nextLifecycleGeneration(nodeId: string): Promise<number>;
  /**
   * Takes the owner lease for this run and publishes the descriptor under it. Exclusive: while any run's lease for
   * the nodeId is live (whatever its generation) it rejects with LeaseHeldError (its `leaseExpiresInMs`) and
   * writes nothing; once that lease expired (its holder crashed or stopped renewing) it succeeds.
   */
  acquire(descriptor: NodeDescriptor, leaseMs: number): Promise<OwnerLease>;
  /** Compare token and pexpire. false = the lease is gone (expired or taken by a newer run). */
  renew(lease: OwnerLease, leaseMs: number): Promise<boolean>;
  /** Replaces the descriptor under a held lease (state changes, load). false = lease not held. */
  publish(lease: OwnerLease, descriptor: NodeDescriptor): Promise<boolean>;
  /** Removes descriptor and lease when the token still matches. Idempotent. */
  release(lease: OwnerLease): Promise<void>;
  /** Every descriptor whose lease is live, as one snapshot. */
  list(): Promise<NodeDescriptor[]>;
}

export interface RequestTerminal {
  readonly ok: boolean;
  readonly value?: unknown;
  readonly error?: string;
}

export interface InstanceCreation {
  readonly spotId: string;
  readonly type: string;
  readonly owner: NodeRef;
  readonly objectGeneration: number;
  readonly createdAt: number;
}

/** §1.1: holds no handoff payload; only Instance Spot creation records and late request terminals. */
export interface RelocationStore {
  /**
   * Records an Instance Spot's creation by its first message. First write wins per ObjectGeneration: false when a
   * record of that generation or a newer one already exists (a replay of the winning write still answers true); a
   * record of an older generation (left by an instance that ended without its record being removed) is replaced.
   * The record lives as long as the Spot — no TTL: it is removed when the Spot closes (closeSpot) or its owner
   * record is removed (§14 cleanup), see removeInstanceCreation.
   */
  recordInstanceCreation(record: InstanceCreation, opId: string): Promise<boolean>;
  getInstanceCreation(spotId: string): Promise<InstanceCreation | undefined>;
  /**
   * Removes the creation record of the Spot's `objectGeneration` (the Spot closed, or its owner record was removed).
   * A record of another generation is kept. Idempotent; true when this call removed a record.
   */
  removeInstanceCreation(spotId: string, objectGeneration: number): Promise<boolean>;
  /** First write wins; false when a terminal was already recorded for opId. */
  recordRequestTerminal(opId: string, terminal: RequestTerminal, ttlMs: number): Promise<boolean>;
  getRequestTerminal(opId: string): Promise<RequestTerminal | undefined>;
}

/** A Spot that joined a Channel (Logical Multicast). `type` names an Instance Spot's type, so a multicast reaches it. */
export interface ChannelMember {
  readonly spot: string;
  readonly type?: string;
}

/**
 * Channel membership of Logical Multicast (§15): which Spots joined which Channel, cluster-wide. Keyed by the Spot,
 * not by the node that hosts it, so a membership survives the Spot's relocation. Writes carry an opId like every
 * other write (§1.1): a replay returns the recorded result, and a lost reply is resolved, never guessed.
 */
export interface ChannelStore {
  /** Adds (or re-types) a member. true when the Spot was not a member before. */
  join(channel: string, member: ChannelMember, opId: string): Promise<boolean>;
  /** Removes a member. true when the Spot was a member. */
  leave(channel: string, spot: string, opId: string): Promise<boolean>;
  /** Every member of the Channel as one snapshot (ordered by Spot id). */
  members(channel: string): Promise<ChannelMember[]>;
}

export interface Stores {
  readonly provider: 'memory' | 'redis';
  readonly location: LocationStore;
  readonly descriptors: DescriptorStore;
  readonly relocation: RelocationStore;
  /** Logical Multicast channel membership. */
  readonly channels: ChannelStore;
  /** Resolves when the provider answers; rejects with StoreUnavailableError. */
  ping(): Promise<void>;
  /**
   * Releases connections (redis: quits its one ioredis connection; memory: holds none). Shared stores are closed by
   * their creator, not by a host, after every host using them is shut down; then nothing of the stores keeps the
   * process alive.
   */
  close(): Promise<void>;
}

/** A store call that has no definite answer (§13 → Blocked/StoreUnavailable before relay-ready). */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  constructor(
    message: string,
    /** true when a write may or may not have applied and could not be resolved in time. */
    readonly outcomeUnknown = false,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** §13: a staged SpotWide list that does not match its header. Never retried. */
export class DataLostError extends Error {
  override readonly name = 'DataLostError';
}
