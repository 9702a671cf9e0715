/**
 * Owner records on Redis: get, claim, CAS (single and many) and remove. A SpotWide member's record lives at a
 * member key in its Spot's hash tag; its home key then holds a forward (records.ts). A membership change that
 * moves a record between tags is two steps -- the CAS leaves a forward carrying the new record, then
 * owner-install.lua writes it at the target -- and every reader or writer that meets a forward whose second
 * step was lost rolls it forward first, so no step ever has to be guessed.
 */
import type { Redis } from 'ioredis';
import {
  StoreUnavailableError,
  type CasRequest,
  type CasResult,
  type ClaimRequest,
  type ClaimResult,
  type NodeRef,
  type ObjectId,
  type OwnerCommitEntry,
  type OwnerCommitRequest,
  type OwnerRecord,
  type RemoveRequest,
} from '../types';
import { claimSchema, objectIdSchema, parse, parseCas, parseOwnerCommit, removeSchema } from '../validation';
import type { RedisContext } from './context';
import { guarded } from './guarded';
import { liveRecord, toRecord, type LiveValue, type OwnerReply, type SlotValue } from './records';
import { hashSlot } from './slot';

/** A record moves at most once per change, so a few hops cover a concurrent change; more means retry later. */
const MAX_HOPS = 4;
/** Home keys per read command of getMany. */
const READ_CHUNK = 1024;

/** An entry of a many-record write still to be written, at the key its record is at. */
interface Pending {
  readonly index: number;
  readonly key: string;
}

interface Located {
  readonly key: string;
  readonly value: LiveValue;
}

export class RedisOwnerRecords {
  constructor(private readonly ctx: RedisContext) {}

  async get(object: ObjectId): Promise<OwnerRecord | undefined> {
    return liveRecord((await this.locate(parse(objectIdSchema, object, 'get')))?.value);
  }

  /**
   * Home keys are read READ_CHUNK at a time, each chunk retried on its own: one command per chunk on a single server
   * (MGET), a GET per key on a cluster (keys of many hash slots). With every key's GET sent at once, one reply later
   * than the command timeout (a long list, a slowed process) repeated the whole list.
   */
  async getMany(objects: readonly ObjectId[]): Promise<(OwnerRecord | undefined)[]> {
    objects.forEach((object, index) => parse(objectIdSchema, object, `getMany[${index}]`));
    const { client, keys } = this.ctx;
    const raw: (string | null)[] = [];
    for (let start = 0; start < objects.length; start += READ_CHUNK) {
      const homes = objects.slice(start, start + READ_CHUNK).map((object) => keys.home(object));
      raw.push(
        ...(await client.retrying('getMany', () =>
          client.clustered ? Promise.all(homes.map((key) => client.redis.get(key))) : (client.redis as Redis).mget(homes),
        )),
      );
    }
    return Promise.all(
      raw.map((text, index) => {
        const value = decode(text);
        return value?.s === 'F' ? this.get(objects[index]!) : liveRecord(value);
      }),
    );
  }

  async claim(request: ClaimRequest): Promise<ClaimResult> {
    const req = parse(claimSchema, request, 'claim');
    const { client, keys, opTtlMs } = this.ctx;
    const home = keys.home(req.object);
    const opKey = keys.op(home, req.opId);
    const to = req.object.kind === 'actor' ? keys.placement(req.object.id, req.spot, req.spotWide) : home;
    const value = JSON.stringify({
      s: 'L',
      k: req.object.kind,
      id: req.object.id,
      t: req.type,
      n: req.owner.nodeId,
      g: req.owner.lifecycleGeneration,
      ...(req.spot !== undefined && { sp: req.spot }),
      ...(req.spotWide && { sw: true }),
    });
    for (let hop = 0; hop < MAX_HOPS; hop++) {
      const [text] = await guarded(client, 'claim', opTtlMs, [opKey], (_, token) =>
        client.script('ownerClaim', [home, opKey], [opTtlMs, token, value, to]),
      );
      const reply = JSON.parse(text!) as OwnerReply;
      if (reply.status === 'moved') {
        // The object exists as a SpotWide member (or its removal has not reached home yet): read where it is.
        const found = await this.locate(req.object);
        if (found) return { applied: false, record: toRecord(found.value) };
        continue;
      }
      if (reply.to) await this.install(reply.to, reply.v!, req.opId, text!);
      return { applied: reply.status === 'created', record: toRecord(reply.v as LiveValue) };
    }
    throw moving(req.object);
  }

  async cas(request: CasRequest): Promise<CasResult> {
    return (await this.casAll([parseCas(request, 'cas')]))[0]!;
  }

  async casMany(requests: readonly CasRequest[]): Promise<CasResult[]> {
    return this.casAll(requests.map((request, index) => parseCas(request, `casMany[${index}]`)));
  }

  /**
   * One guarded `owner-commit.lua` call for all entries on a single server, or per hash slot group on a cluster, all
   * issued together; its op key (in the group's slot, named by the opId) records the group's replies together. Entries
   * that meet a forward follow it in the next hop, under `<opId>:<hop>`.
   */
  async commitOwners(request: OwnerCommitRequest): Promise<CasResult[]> {
    const req = parseOwnerCommit(request, 'commitOwners');
    const { client, keys, opTtlMs } = this.ctx;
    const { entries, owner } = req;
    return this.byHops(
      entries.map((entry) => entry.object),
      async (group, hop) => {
        // The group's op key: in its first record's slot, so the script's keys share one slot on a cluster. A retry
        // of this call (guarded.ts: a fenced attempt) sends the same group, so the same op key.
        const opKey = keys.op(group[0]!.key, hop === 0 ? req.opId : `${req.opId}:${hop}`);
        const scriptKeys: string[] = new Array(group.length + 1);
        const args: (string | number)[] = new Array(4 + 2 * group.length);
        args[2] = owner.nodeId;
        args[3] = owner.lifecycleGeneration;
        for (let n = 0; n < group.length; n++) {
          const entry = entries[group[n]!.index]!;
          scriptKeys[n] = group[n]!.key;
          args[4 + 2 * n] = entry.expectedAuthorityGeneration;
          args[5 + 2 * n] = entry.objectGeneration;
        }
        scriptKeys[group.length] = opKey;
        const [text] = await guarded(client, 'commitOwners', opTtlMs, [opKey], (_, token) => {
          args[0] = opTtlMs;
          args[1] = token;
          return client.script('ownerCommit', scriptKeys, args);
        });
        const replies = JSON.parse(text!) as (OwnerReply | AppliedCommit)[];
        if (!Array.isArray(replies) || replies.length !== group.length) throw new TypeError(`commitOwners: unexpected script reply: ${text!.slice(0, 200)}`);
        for (let n = 0; n < group.length; n++) {
          const reply = replies[n]!;
          if (Array.isArray(reply)) replies[n] = appliedCommit(reply, entries[group[n]!.index]!, owner);
        }
        return replies as OwnerReply[];
      },
      () => req.opId,
    );
  }

  async remove(request: RemoveRequest): Promise<CasResult> {
    const req = parse(removeSchema, request, 'remove');
    const { client, keys, opTtlMs } = this.ctx;
    const home = keys.home(req.object);
    let key = home;
    for (let hop = 0; hop < MAX_HOPS; hop++) {
      const opKey = keys.op(key, req.opId);
      const [text] = await guarded(client, 'remove', opTtlMs, [opKey], (_, token) =>
        client.script('ownerRemove', [key, opKey], [opTtlMs, token, req.expectedAuthorityGeneration, home]),
      );
      const reply = JSON.parse(text!) as OwnerReply;
      if (reply.status === 'moved') {
        await this.rollForward(reply);
        key = reply.to!;
        continue;
      }
      if (reply.to) await this.install(reply.to, reply.v!, req.opId, text!);
      return casResult(reply);
    }
    throw moving(req.object);
  }

  /** One guarded `owner-cas.lua` call per group (byHops), each entry with its own op key. */
  private async casAll(requests: readonly CasRequest[]): Promise<CasResult[]> {
    const { client, keys, opTtlMs } = this.ctx;
    return this.byHops(
      requests.map((request) => request.object),
      async (group) => {
        const opKeys: string[] = new Array(group.length);
        for (let i = 0; i < group.length; i++) opKeys[i] = keys.op(group[i]!.key, requests[group[i]!.index]!.opId);
        const texts = await guarded(client, 'cas', opTtlMs, opKeys, (indices, token) => {
          // KEYS: record key and op key per entry; ARGV: ttl, the attempt's token, the call's owner, then one change
          // per entry (owner-cas.lua): an owner change to the call's owner is only its expected generation.
          const scriptKeys: string[] = new Array(indices.length * 2);
          const args: (string | number)[] = new Array(indices.length + 4);
          const owner = callOwner(requests, group, indices);
          args[0] = opTtlMs;
          args[1] = token;
          args[2] = owner ? owner.nodeId : '';
          args[3] = owner ? owner.lifecycleGeneration : '';
          for (let n = 0; n < indices.length; n++) {
            const entry = group[indices[n]!]!;
            scriptKeys[2 * n] = entry.key;
            scriptKeys[2 * n + 1] = opKeys[indices[n]!]!;
            args[n + 4] = this.change(requests[entry.index]!, entry.key, owner);
          }
          return client.script('ownerCas', scriptKeys, args);
        });
        return texts.map((text) => JSON.parse(text) as OwnerReply);
      },
      (index) => requests[index]!.opId,
    );
  }

  /**
   * The hops of a many-record write, starting at the objects' home keys: `run` writes one group — all entries on a
   * single server, one group per hash slot on a cluster, the groups issued together (auto-pipelined into one write) —
   * and answers one reply per entry. An entry that meets a forward rolls it forward and goes again in the next hop at
   * the forward's target; a reply that moved the record (`to`) is installed there under the entry's `opIdOf`.
   */
  private async byHops(
    objects: readonly ObjectId[],
    run: (group: readonly Pending[], hop: number) => Promise<readonly OwnerReply[]>,
    opIdOf: (index: number) => string,
  ): Promise<CasResult[]> {
    const { client, keys } = this.ctx;
    const results: CasResult[] = new Array(objects.length);
    let pending: Pending[] = new Array(objects.length);
    for (let index = 0; index < objects.length; index++) pending[index] = { index, key: keys.home(objects[index]!) };
    for (let hop = 0; hop < MAX_HOPS && pending.length > 0; hop++) {
      const next: Pending[] = [];
      const groups = client.clustered ? [...groupBy(pending, (entry) => hashSlot(entry.key)).values()] : [pending];
      await Promise.all(
        groups.map(async (group) => {
          const replies = await run(group, hop);
          for (let n = 0; n < group.length; n++) {
            const reply = replies[n]!;
            const entry = group[n]!;
            if (reply.status === 'moved') {
              await this.rollForward(reply);
              next.push({ index: entry.index, key: reply.to! });
              continue;
            }
            if (reply.to) await this.install(reply.to, reply.v!, opIdOf(entry.index), JSON.stringify(reply));
            results[entry.index] = casResult(reply);
          }
        }),
      );
      pending = next;
    }
    if (pending.length > 0) throw moving(objects[pending[0]!.index]!);
    return results;
  }

  /**
   * The change owner-cas.lua applies to one entry; `to` is where the record lives afterwards. An owner change alone to
   * the call's owner (every relocation commit) is just its expected generation: no JSON built here or decoded there
   * per entry, no token or owner repeated per entry (issue [6/10]). Anything else is a JSON object.
   */
  private change(request: CasRequest, key: string, callOwner: NodeRef | undefined): string {
    if (request.spot === undefined && request.owner && request.owner === callOwner) return String(request.expectedAuthorityGeneration);
    const membership = request.spot !== undefined;
    const to = membership ? this.ctx.keys.placement(request.object.id, request.spot ?? undefined, request.spotWide) : key;
    return JSON.stringify({
      e: request.expectedAuthorityGeneration,
      ...(request.owner && { n: request.owner.nodeId, g: request.owner.lifecycleGeneration }),
      ...(membership && { m: true, ...(request.spot !== null && { sp: request.spot }), ...(request.spotWide && { sw: true }) }),
      to,
    });
  }

  /** Follows forwards from the home key to the live record, rolling a lost install step forward on the way. */
  private async locate(object: ObjectId): Promise<Located | undefined> {
    let key = this.ctx.keys.home(object);
    let value = await this.read(key);
    for (let hop = 0; hop < MAX_HOPS; hop++) {
      if (value?.s !== 'F') return value?.s === 'L' ? { key, value } : undefined;
      const target = await this.read(value.to);
      if (target?.s === 'F' && target.ag > value.ag) {
        key = value.to; // it moved on again (left the Spot, or to another one): follow
        value = target;
      } else if (target && target.s !== 'F' && target.ag >= value.ag) {
        return target.s === 'L' ? { key: value.to, value: target } : undefined;
      } else {
        await this.rollForward(value);
      }
    }
    throw moving(object);
  }

  private async read(key: string): Promise<SlotValue | undefined> {
    const { client } = this.ctx;
    return decode(await client.retrying('get', () => client.redis.get(key)));
  }

  private rollForward(forward: { readonly to?: string; readonly v?: SlotValue }): Promise<void> {
    return this.install(forward.to!, forward.v!, 'roll-forward', '');
  }

  /**
   * Second step of a move. Idempotent (it only replaces older generations), so it is retried, not guarded. If it
   * still fails, the move has applied anyway: the forward carries the record and the next reader installs it.
   */
  private async install(to: string, value: SlotValue, opId: string, result: string): Promise<void> {
    const { client, keys, opTtlMs } = this.ctx;
    await client
      .retrying('install', () => client.script('ownerInstall', [to, keys.op(to, opId)], [JSON.stringify(value), result, opTtlMs]))
      .catch((error: unknown) => {
        if (!(error instanceof StoreUnavailableError)) throw error;
      });
  }
}

/** An applied entry of owner-commit.lua's reply: what the call does not know of the new record (its ObjectGeneration, type, Spot). */
type AppliedCommit = [og: number, t: string, sp?: string | null, sw?: boolean];

/** The new record of an applied commit entry: the script's part, and the rest from the call itself. */
function appliedCommit([og, t, sp, sw]: AppliedCommit, entry: OwnerCommitEntry, owner: NodeRef): OwnerReply {
  const v: LiveValue = {
    s: 'L',
    k: entry.object.kind,
    id: entry.object.id,
    t,
    n: owner.nodeId,
    g: owner.lifecycleGeneration,
    og,
    ag: entry.expectedAuthorityGeneration + 1,
    ...(typeof sp === 'string' && { sp }),
    ...(sw === true && { sw }),
  };
  return { status: 'applied', v };
}

function decode(text: string | null): SlotValue | undefined {
  return text === null ? undefined : (JSON.parse(text) as SlotValue);
}

function casResult(reply: OwnerReply): CasResult {
  if (reply.status === 'applied') return reply.v?.s === 'L' ? { status: 'applied', record: toRecord(reply.v) } : { status: 'applied' };
  if (reply.status === 'conflict') return { status: 'conflict', record: toRecord(reply.v as LiveValue) };
  return { status: 'missing' };
}

function moving(object: ObjectId): StoreUnavailableError {
  return new StoreUnavailableError(`record of ${object.kind} '${object.id}' kept moving between hash tags; retry`);
}

/**
 * The owner most entries of one call change to: that of the first owner-only change (the requests of one relocation
 * commit share one owner object). Entries with another owner, or a membership change, carry it in their JSON.
 */
function callOwner(requests: readonly CasRequest[], group: readonly { index: number }[], indices: readonly number[]): NodeRef | undefined {
  for (const n of indices) {
    const request = requests[group[n]!.index]!;
    if (request.spot === undefined && request.owner) return request.owner;
  }
  return undefined;
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => number): Map<number, T[]> {
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
