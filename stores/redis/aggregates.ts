/**
 * SpotWide aggregate CAS on Redis (§10.3): stage the relocation target list as pages plus a header, then one
 * script (aggregate-commit.lua) verifies header, pages and every authority generation and flips the Spot and
 * all members -- or changes nothing. All keys live in the Spot's hash tag.
 */
import { encodePages } from '../aggregate-pages';
import type { AggregateCommitRequest, AggregateCommitResult, AggregateHeader, AggregateStageRequest, ObjectId } from '../types';
import { commitSchema, discardSchema, parse, stageSchema } from '../validation';
import type { RedisContext } from './context';
import { guarded } from './guarded';
import { toRecord, type OwnerReply } from './records';

export class RedisAggregates {
  constructor(private readonly ctx: RedisContext) {}

  async stage(request: AggregateStageRequest): Promise<AggregateHeader> {
    const req = parse(stageSchema, request, 'stageAggregate');
    const { client, keys, opTtlMs } = this.ctx;
    const encoded = encodePages(req.members);
    const header: AggregateHeader = { relocationId: req.relocationId, total: req.members.length, pageChecksums: encoded.sha256 };
    // The stored header adds what the commit script needs: sha1 per page (Lua has no sha256) and the Spot's
    // authority generation as read when new work was blocked.
    const stored = JSON.stringify({ total: header.total, sha256: encoded.sha256, sha1: encoded.sha1, esag: req.expectedSpotAuthorityGeneration });
    const staged = keys.staged(req.spot.id, req.relocationId);
    const opKey = keys.op(staged.header, req.opId);
    // Staged lists expire with the op results: a move abandoned by a dead process must not leak pages forever.
    const [text] = await guarded(client, 'stageAggregate', opTtlMs, [opKey], (_, token) =>
      client.script('aggregateStage', [staged.header, opKey], [opTtlMs, token, stored, JSON.stringify(header), staged.pageBase, ...encoded.pages]),
    );
    return JSON.parse(text!) as AggregateHeader;
  }

  async commit(request: AggregateCommitRequest): Promise<AggregateCommitResult> {
    const req = parse(commitSchema, request, 'commitAggregate');
    const { client, keys, opTtlMs } = this.ctx;
    const spotKey = keys.home(req.spot);
    const opKey = keys.op(spotKey, req.opId);
    const staged = keys.staged(req.spot.id, req.relocationId);
    const [text] = await guarded(client, 'commitAggregate', opTtlMs, [opKey], (_, token) =>
      client.script(
        'aggregateCommit',
        [spotKey, opKey, staged.header],
        [
          opTtlMs,
          token,
          staged.pageBase,
          keys.memberBase(req.spot.id),
          req.spot.id,
          req.owner.nodeId,
          req.owner.lifecycleGeneration,
          req.header.total,
          req.header.pageChecksums.join(','),
        ],
      ),
    );
    const reply = JSON.parse(text!) as OwnerReply & { status: AggregateCommitResult['status'] };
    return { status: reply.status, ...(reply.v?.s === 'L' && { spot: toRecord(reply.v) }) };
  }

  async discard(relocationId: string, spot: ObjectId): Promise<void> {
    const req = parse(discardSchema, { relocationId, spot }, 'discardAggregate');
    const { client, keys } = this.ctx;
    const staged = keys.staged(req.spot.id, req.relocationId);
    await client.retrying('discardAggregate', () => client.script('aggregateDiscard', [staged.header], [staged.pageBase]));
  }
}
