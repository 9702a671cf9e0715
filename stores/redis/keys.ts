/**
 * Key names of the Redis provider (layout documented in redis-stores.ts). Ids are encodeURIComponent-encoded,
 * which removes '{', '}', ':', tab and newline from them: a key's hash tag is then exactly the first {...}
 * (the prefix may not contain braces), and page lines stay parseable.
 */
import type { ObjectId } from '../types';

const enc = encodeURIComponent;

export class RedisKeys {
  /** Descriptors share one tag `{d}` so list() reads them all in one script, as one snapshot. */
  readonly nodes: string;
  readonly leaseBase: string;
  readonly descriptorBase: string;

  constructor(readonly prefix: string) {
    if (/[{}]/.test(prefix)) throw new TypeError(`redisStores: field 'keyPrefix' must not contain '{' or '}' (hash tags are ours)`);
    this.nodes = `${prefix}{d}:nodes`;
    this.leaseBase = `${prefix}{d}:lease:`;
    this.descriptorBase = `${prefix}{d}:desc:`;
  }

  /** Where an object's record lives unless it is a SpotWide member; also its op keys' tag. */
  home(object: ObjectId): string {
    return `${this.prefix}{o:${object.kind}:${enc(object.id)}}`;
  }

  /** Base of a SpotWide Spot's member keys: a member's record lives in its Spot's hash tag (§10.3). */
  memberBase(spotId: string): string {
    return `${this.home({ kind: 'spot', id: spotId })}:m:`;
  }

  member(spotId: string, actorId: string): string {
    return this.memberBase(spotId) + enc(actorId);
  }

  /** The key an Actor's record lives at for a membership (SpotWide members beside their Spot). */
  placement(actorId: string, spot: string | undefined, spotWide: boolean | undefined): string {
    return spot !== undefined && spotWide ? this.member(spot, actorId) : this.home({ kind: 'actor', id: actorId });
  }

  /** Per-operation result key in the same hash tag as `key` (§1.1). */
  op(key: string, opId: string): string {
    return `${this.prefix}${hashTag(key)}:op:${enc(opId)}`;
  }

  /** Staged aggregate of one relocation: header at `${base}:h`, pages at `${base}:p:<n>` (n from 1). */
  staged(spotId: string, relocationId: string): { readonly header: string; readonly pageBase: string } {
    const base = `${this.home({ kind: 'spot', id: spotId })}:agg:${relocationId}`;
    return { header: `${base}:h`, pageBase: `${base}:p:` };
  }

  lease(nodeId: string): string {
    return this.leaseBase + enc(nodeId);
  }

  descriptor(nodeId: string): string {
    return this.descriptorBase + enc(nodeId);
  }

  lifecycle(nodeId: string): string {
    return `${this.prefix}{d}:lg:${enc(nodeId)}`;
  }

  instance(spotId: string): string {
    return `${this.prefix}{i:${enc(spotId)}}`;
  }

  terminal(opId: string): string {
    return `${this.prefix}{r:${enc(opId)}}`;
  }

  /** Member hash of a Logical Multicast Channel (Spot id → type); its op keys share the tag. */
  channel(name: string): string {
    return `${this.prefix}{c:${enc(name)}}:m`;
  }
}

export function hashTag(key: string): string {
  const open = key.indexOf('{');
  return key.slice(open, key.indexOf('}', open) + 1);
}
