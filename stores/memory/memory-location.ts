/**
 * Location Store of the memory provider: one Map of owner records, every change a CAS on the authority
 * generation. Removed records stay as tombstones so a re-created object gets a higher objectGeneration and a
 * higher authorityGeneration than any token handed out before (§12; fencing tokens never repeat).
 */
import { decodePage, digest, encodePages, type PageEntry } from '../aggregate-pages';
import type {
  AggregateCommitRequest,
  AggregateCommitResult,
  AggregateHeader,
  AggregateStageRequest,
  CasRequest,
  CasResult,
  ClaimRequest,
  ClaimResult,
  LocationStore,
  ObjectId,
  OwnerCommitRequest,
  OwnerRecord,
  RemoveRequest,
} from '../types';
import {
  parseCas,
  parseOwnerCommit,
  claimSchema,
  commitSchema,
  discardSchema,
  objectIdSchema,
  parse,
  removeSchema,
  stageSchema,
} from '../validation';
import type { OpLog } from './op-log';

interface Slot {
  readonly live: boolean;
  readonly record: OwnerRecord;
}

interface Staged {
  readonly header: AggregateHeader;
  readonly expectedSpotAuthorityGeneration: number;
  /** Page texts exactly as staged; `pages()` exposes them so tests can tamper with one. */
  readonly pages: string[];
}

const slotKey = (object: ObjectId): string => `${object.kind}\u0000${object.id}`;
const stagedKey = (relocationId: string, spotId: string): string => `${spotId}\u0000${relocationId}`;

export class MemoryLocationStore implements LocationStore {
  private readonly slots = new Map<string, Slot>();
  private readonly staged = new Map<string, Staged>();

  constructor(private readonly ops: OpLog) {}

  async get(object: ObjectId): Promise<OwnerRecord | undefined> {
    const slot = this.slots.get(slotKey(parse(objectIdSchema, object, 'get')));
    return slot?.live ? slot.record : undefined;
  }

  async getMany(objects: readonly ObjectId[]): Promise<(OwnerRecord | undefined)[]> {
    return Promise.all(objects.map((object) => this.get(object)));
  }

  async claim(request: ClaimRequest): Promise<ClaimResult> {
    const req = parse(claimSchema, request, 'claim');
    const prior = this.ops.recorded<ClaimResult>(req.opId);
    if (prior) return prior;
    const key = slotKey(req.object);
    const slot = this.slots.get(key);
    if (slot?.live) return this.ops.record(req.opId, { applied: false, record: slot.record });
    const record: OwnerRecord = {
      kind: req.object.kind,
      id: req.object.id,
      type: req.type,
      owner: req.owner,
      objectGeneration: slot ? slot.record.objectGeneration + 1 : 1,
      authorityGeneration: slot ? slot.record.authorityGeneration + 1 : 1,
      ...(req.spot !== undefined && { spot: req.spot }),
      ...(req.spotWide && { spotWide: true }),
    };
    this.slots.set(key, { live: true, record });
    return this.ops.record(req.opId, { applied: true, record });
  }

  async cas(request: CasRequest): Promise<CasResult> {
    const req = parseCas(request, 'cas');
    const prior = this.ops.recorded<CasResult>(req.opId);
    if (prior) return prior;
    const key = slotKey(req.object);
    const slot = this.slots.get(key);
    if (!slot?.live) return this.ops.record(req.opId, { status: 'missing' });
    if (slot.record.authorityGeneration !== req.expectedAuthorityGeneration)
      return this.ops.record(req.opId, { status: 'conflict', record: slot.record });
    const { spot: _spot, spotWide: _spotWide, ...rest } = slot.record;
    const spot = req.spot === undefined ? slot.record.spot : (req.spot ?? undefined);
    const spotWide = req.spot === undefined ? slot.record.spotWide : req.spotWide || undefined;
    const record: OwnerRecord = {
      ...rest,
      owner: req.owner ?? slot.record.owner,
      authorityGeneration: slot.record.authorityGeneration + 1,
      ...(spot !== undefined && { spot }),
      ...(spotWide && { spotWide: true }),
    };
    this.slots.set(key, { live: true, record });
    return this.ops.record(req.opId, { status: 'applied', record });
  }

  async casMany(requests: readonly CasRequest[]): Promise<CasResult[]> {
    // Validate all first: one bad request rejects the call before any CAS applies (as on Redis).
    requests.forEach((request, index) => parseCas(request, `casMany[${index}]`));
    return Promise.all(requests.map((request) => this.cas(request)));
  }

  async commitOwners(request: OwnerCommitRequest): Promise<CasResult[]> {
    const req = parseOwnerCommit(request, 'commitOwners');
    const prior = this.ops.recorded<CasResult[]>(req.opId);
    if (prior) return prior;
    const { owner } = req;
    const results = req.entries.map((entry): CasResult => {
      const key = slotKey(entry.object);
      const slot = this.slots.get(key);
      if (!slot?.live) return { status: 'missing' };
      const current = slot.record;
      if (current.authorityGeneration === entry.expectedAuthorityGeneration) {
        const record: OwnerRecord = { ...current, owner, authorityGeneration: current.authorityGeneration + 1 };
        this.slots.set(key, { live: true, record });
        return { status: 'applied', record };
      }
      // This commit's own change, made by an earlier attempt (see OwnerCommitRequest): applied, nothing written.
      const committed =
        current.authorityGeneration === entry.expectedAuthorityGeneration + 1 &&
        current.objectGeneration === entry.objectGeneration &&
        current.owner.nodeId === owner.nodeId &&
        current.owner.lifecycleGeneration === owner.lifecycleGeneration;
      return committed ? { status: 'applied', record: current } : { status: 'conflict', record: current };
    });
    return this.ops.record(req.opId, results);
  }

  async remove(request: RemoveRequest): Promise<CasResult> {
    const req = parse(removeSchema, request, 'remove');
    const prior = this.ops.recorded<CasResult>(req.opId);
    if (prior) return prior;
    const key = slotKey(req.object);
    const slot = this.slots.get(key);
    if (!slot?.live) return this.ops.record(req.opId, { status: 'missing' });
    if (slot.record.authorityGeneration !== req.expectedAuthorityGeneration)
      return this.ops.record(req.opId, { status: 'conflict', record: slot.record });
    const tombstone = { ...slot.record, authorityGeneration: slot.record.authorityGeneration + 1 };
    this.slots.set(key, { live: false, record: tombstone });
    return this.ops.record(req.opId, { status: 'applied' });
  }

  async stageAggregate(request: AggregateStageRequest): Promise<AggregateHeader> {
    const req = parse(stageSchema, request, 'stageAggregate');
    const prior = this.ops.recorded<AggregateHeader>(req.opId);
    if (prior) return prior;
    const encoded = encodePages(req.members);
    const header: AggregateHeader = { relocationId: req.relocationId, total: req.members.length, pageChecksums: encoded.sha256 };
    this.staged.set(stagedKey(req.relocationId, req.spot.id), {
      header,
      expectedSpotAuthorityGeneration: req.expectedSpotAuthorityGeneration,
      pages: encoded.pages,
    });
    return this.ops.record(req.opId, header);
  }

  async commitAggregate(request: AggregateCommitRequest): Promise<AggregateCommitResult> {
    const req = parse(commitSchema, request, 'commitAggregate');
    const prior = this.ops.recorded<AggregateCommitResult>(req.opId);
    if (prior) return prior;
    const staged = this.staged.get(stagedKey(req.relocationId, req.spot.id));
    const members = staged && verifiedMembers(staged, req.header);
    if (!members) return this.ops.record(req.opId, { status: 'data-lost' });

    const spotKey = slotKey(req.spot);
    const spot = this.slots.get(spotKey);
    if (!spot?.live || spot.record.authorityGeneration !== staged.expectedSpotAuthorityGeneration)
      return this.ops.record(req.opId, { status: 'conflict', ...(spot?.live && { spot: spot.record }) });
    const current = members.map((member) => this.slots.get(slotKey({ kind: 'actor', id: member.actorId })));
    const moved = current.some(
      (slot, index) =>
        !slot?.live ||
        slot.record.authorityGeneration !== members[index]!.expectedAuthorityGeneration ||
        slot.record.spot !== req.spot.id ||
        !slot.record.spotWide,
    );
    if (moved) return this.ops.record(req.opId, { status: 'conflict', spot: spot.record });

    // Checked everything first, so the flip below is all or nothing (§10.3).
    const flip = (record: OwnerRecord): OwnerRecord => ({ ...record, owner: req.owner, authorityGeneration: record.authorityGeneration + 1 });
    const flipped = flip(spot.record);
    this.slots.set(spotKey, { live: true, record: flipped });
    for (const slot of current) this.slots.set(slotKey(slot!.record), { live: true, record: flip(slot!.record) });
    return this.ops.record(req.opId, { status: 'applied', spot: flipped });
  }

  async discardAggregate(relocationId: string, spot: ObjectId): Promise<void> {
    const req = parse(discardSchema, { relocationId, spot }, 'discardAggregate');
    this.staged.delete(stagedKey(req.relocationId, req.spot.id));
  }

  /** The staged page texts, in order (diagnostics; the contract tests tamper with one to prove data-lost). */
  pages(relocationId: string, spotId: string): string[] | undefined {
    return this.staged.get(stagedKey(relocationId, spotId))?.pages;
  }
}

/** §13: the staged list must match the header the caller holds, page by page; anything else is data-lost. */
function verifiedMembers(staged: Staged, header: AggregateHeader): PageEntry[] | undefined {
  const expected = staged.header;
  if (header.total !== expected.total || header.pageChecksums.join() !== expected.pageChecksums.join()) return undefined;
  if (staged.pages.length !== expected.pageChecksums.length) return undefined;
  const members: PageEntry[] = [];
  for (const [index, page] of staged.pages.entries()) {
    if (digest('sha256', page) !== expected.pageChecksums[index]) return undefined;
    const entries = decodePage(page);
    if (!entries) return undefined;
    members.push(...entries);
  }
  return members.length === expected.total ? members : undefined;
}
