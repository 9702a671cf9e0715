/**
 * Channel membership on Redis (Logical Multicast). One hash per Channel, `P{c:<channel>}:m` (Spot id → type), and
 * the op keys of its writes in the same hash tag, so each write is one single-slot script (Redis Cluster safe).
 * Writes are guarded (§1.1): a join whose reply was lost is resolved through its op key, and a late replay of a
 * fenced attempt never re-adds a Spot that left in the meantime.
 */
import type { ChannelMember, ChannelStore } from '../types';
import { channelMemberSchema, channelSchema, opIdSchema, parse, spotIdSchema } from '../validation';
import type { RedisContext } from './context';
import { guarded } from './guarded';

export class RedisChannelStore implements ChannelStore {
  constructor(private readonly ctx: RedisContext) {}

  async join(channel: string, member: ChannelMember, opId: string): Promise<boolean> {
    const name = parse(channelSchema, channel, 'channels.join channel');
    const value = parse(channelMemberSchema, member, 'channels.join member');
    parse(opIdSchema, opId, 'channels.join opId');
    return this.write('channels.join', 'channelJoin', name, opId, [value.spot, value.type ?? '']);
  }

  async leave(channel: string, spot: string, opId: string): Promise<boolean> {
    const name = parse(channelSchema, channel, 'channels.leave channel');
    const id = parse(spotIdSchema, spot, 'channels.leave spot');
    parse(opIdSchema, opId, 'channels.leave opId');
    return this.write('channels.leave', 'channelLeave', name, opId, [id]);
  }

  async members(channel: string): Promise<ChannelMember[]> {
    const key = this.ctx.keys.channel(parse(channelSchema, channel, 'channels.members channel'));
    const { client } = this.ctx;
    const all = await client.retrying('channels.members', () => client.redis.hgetall(key));
    return Object.keys(all)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .map((spot) => (all[spot] ? { spot, type: all[spot] } : { spot }));
  }

  private async write(what: string, script: 'channelJoin' | 'channelLeave', channel: string, opId: string, args: string[]): Promise<boolean> {
    const { client, keys, opTtlMs } = this.ctx;
    const key = keys.channel(channel);
    const opKey = keys.op(key, opId);
    const [reply] = await guarded(client, what, opTtlMs, [opKey], (_, token) => client.script(script, [key, opKey], [opTtlMs, token, ...args]));
    return reply === '1';
  }
}
