/** The Redis LocationStore: owner records (owner-records.ts) plus the SpotWide aggregate CAS (aggregates.ts). */
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
import { RedisAggregates } from './aggregates';
import type { RedisContext } from './context';
import { RedisOwnerRecords } from './owner-records';

export class RedisLocationStore implements LocationStore {
  private readonly records: RedisOwnerRecords;
  private readonly aggregates: RedisAggregates;

  constructor(ctx: RedisContext) {
    this.records = new RedisOwnerRecords(ctx);
    this.aggregates = new RedisAggregates(ctx);
  }

  get(object: ObjectId): Promise<OwnerRecord | undefined> {
    return this.records.get(object);
  }
  getMany(objects: readonly ObjectId[]): Promise<(OwnerRecord | undefined)[]> {
    return this.records.getMany(objects);
  }
  claim(request: ClaimRequest): Promise<ClaimResult> {
    return this.records.claim(request);
  }
  cas(request: CasRequest): Promise<CasResult> {
    return this.records.cas(request);
  }
  casMany(requests: readonly CasRequest[]): Promise<CasResult[]> {
    return this.records.casMany(requests);
  }
  commitOwners(request: OwnerCommitRequest): Promise<CasResult[]> {
    return this.records.commitOwners(request);
  }
  remove(request: RemoveRequest): Promise<CasResult> {
    return this.records.remove(request);
  }
  stageAggregate(request: AggregateStageRequest): Promise<AggregateHeader> {
    return this.aggregates.stage(request);
  }
  commitAggregate(request: AggregateCommitRequest): Promise<AggregateCommitResult> {
    return this.aggregates.commit(request);
  }
  discardAggregate(relocationId: string, spot: ObjectId): Promise<void> {
    return this.aggregates.discard(relocationId, spot);
  }
}
