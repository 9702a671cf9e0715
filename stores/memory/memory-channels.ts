/** Channel membership of the memory provider (Logical Multicast): a map per Channel, replays answered from the op log. */
import type { ChannelMember, ChannelStore } from '../types';
import { channelMemberSchema, channelSchema, opIdSchema, parse, spotIdSchema } from '../validation';
import type { OpLog } from './op-log';

/** The op log key prefix of each call. */
const OP_KEY = { join: 'cj', leave: 'cl' } as const;

export class MemoryChannelStore implements ChannelStore {
  /** channel → spot id → type ('' when the member named none). */
  private readonly channels = new Map<string, Map<string, string>>();

  constructor(private readonly ops: OpLog) {}

  async join(channel: string, member: ChannelMember, opId: string): Promise<boolean> {
    const name = parse(channelSchema, channel, 'channels.join channel');
    const value = parse(channelMemberSchema, member, 'channels.join member');
    return this.once('join', opId, () => {
      let members = this.channels.get(name);
      if (!members) this.channels.set(name, (members = new Map()));
      const added = !members.has(value.spot);
      members.set(value.spot, value.type ?? '');
      return added;
    });
  }

  async leave(channel: string, spot: string, opId: string): Promise<boolean> {
    const name = parse(channelSchema, channel, 'channels.leave channel');
    const id = parse(spotIdSchema, spot, 'channels.leave spot');
    return this.once('leave', opId, () => {
      const members = this.channels.get(name);
      const removed = members?.delete(id) ?? false;
      if (members?.size === 0) this.channels.delete(name);
      return removed;
    });
  }

  async members(channel: string): Promise<ChannelMember[]> {
    const members = this.channels.get(parse(channelSchema, channel, 'channels.members channel'));
    if (!members) return [];
    return [...members]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([spot, type]) => (type ? { spot, type } : { spot }));
  }

  /** Checks `opId` and applies `apply` once for it: a replay of the same call answers the recorded result. */
  private once(call: keyof typeof OP_KEY, opId: string, apply: () => boolean): boolean {
    parse(opIdSchema, opId, `channels.${call} opId`);
    const key = `${OP_KEY[call]}:${opId}`;
    const prior = this.ops.recorded<boolean>(key);
    return prior !== undefined ? prior : this.ops.record(key, apply());
  }
}
