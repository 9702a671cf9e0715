/** Channel membership of the memory provider (Logical Multicast): a map per Channel, replays answered from the op log. */
import type { ChannelMember, ChannelStore } from '../types';
import { channelMemberSchema, channelSchema, opIdSchema, parse, spotIdSchema } from '../validation';
import type { OpLog } from './op-log';

export class MemoryChannelStore implements ChannelStore {
  /** channel → spot id → type ('' when the member named none). */
  private readonly channels = new Map<string, Map<string, string>>();

  constructor(private readonly ops: OpLog) {}

  async join(channel: string, member: ChannelMember, opId: string): Promise<boolean> {
    const name = parse(channelSchema, channel, 'channels.join channel');
    const value = parse(channelMemberSchema, member, 'channels.join member');
    parse(opIdSchema, opId, 'channels.join opId');
    const prior = this.ops.recorded<boolean>(`cj:${opId}`);
    if (prior !== undefined) return prior;
    let members = this.channels.get(name);
    if (!members) this.channels.set(name, (members = new Map()));
    const added = !members.has(value.spot);
    members.set(value.spot, value.type ?? '');
    return this.ops.record(`cj:${opId}`, added);
  }

  async leave(channel: string, spot: string, opId: string): Promise<boolean> {
    const name = parse(channelSchema, channel, 'channels.leave channel');
    const id = parse(spotIdSchema, spot, 'channels.leave spot');
    parse(opIdSchema, opId, 'channels.leave opId');
    const prior = this.ops.recorded<boolean>(`cl:${opId}`);
    if (prior !== undefined) return prior;
    const members = this.channels.get(name);
    const removed = members?.delete(id) ?? false;
    if (members?.size === 0) this.channels.delete(name);
    return this.ops.record(`cl:${opId}`, removed);
  }

  async members(channel: string): Promise<ChannelMember[]> {
    const members = this.channels.get(parse(channelSchema, channel, 'channels.members channel'));
    if (!members) return [];
    return [...members]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([spot, type]) => (type ? { spot, type } : { spot }));
  }
}
