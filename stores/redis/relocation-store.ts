/**
 * Relocation Store on Redis (§9): Instance Spot creation records and late request terminals, first write wins.
 * first-write.lua stores the writer's token with the value, so re-running a write whose reply was lost gives the
 * definite answer (1 = this writer's value is stored) without a fence.
 */
import { randomUUID } from 'node:crypto';
import type { InstanceCreation, RelocationStore, RequestTerminal } from '../types';
import { instanceCreationSchema, opIdSchema, parse, spotIdSchema, terminalSchema, ttlMsSchema } from '../validation';
import type { RedisContext } from './context';

export class RedisRelocationStore implements RelocationStore {
  constructor(private readonly ctx: RedisContext) {}

  async recordInstanceCreation(record: InstanceCreation, opId: string): Promise<boolean> {
    const value = parse(instanceCreationSchema, record, 'recordInstanceCreation');
    parse(opIdSchema, opId, 'recordInstanceCreation opId');
    return this.firstWrite('recordInstanceCreation', this.ctx.keys.instance(value.spotId), opId, value, 0);
  }

  async getInstanceCreation(spotId: string): Promise<InstanceCreation | undefined> {
    return this.read<InstanceCreation>('getInstanceCreation', this.ctx.keys.instance(parse(spotIdSchema, spotId, 'getInstanceCreation')));
  }

  async recordRequestTerminal(opId: string, terminal: RequestTerminal, ttlMs: number): Promise<boolean> {
    parse(opIdSchema, opId, 'recordRequestTerminal opId');
    const value = parse(terminalSchema, terminal, 'recordRequestTerminal');
    parse(ttlMsSchema, ttlMs, 'recordRequestTerminal ttlMs');
    // The opId names the request; the writer token names this call, so two runtimes never both "win" (§17).
    return this.firstWrite('recordRequestTerminal', this.ctx.keys.terminal(opId), randomUUID(), value, ttlMs);
  }

  async getRequestTerminal(opId: string): Promise<RequestTerminal | undefined> {
    return this.read<RequestTerminal>('getRequestTerminal', this.ctx.keys.terminal(parse(opIdSchema, opId, 'getRequestTerminal')));
  }

  private async firstWrite(what: string, key: string, writer: string, value: unknown, ttlMs: number): Promise<boolean> {
    const { client } = this.ctx;
    return (await client.retrying(what, () => client.script('firstWrite', [key], [writer, JSON.stringify(value), ttlMs]))) === 1;
  }

  private async read<T>(what: string, key: string): Promise<T | undefined> {
    const { client } = this.ctx;
    const text = await client.retrying(what, () => client.redis.hget(key, 'v'));
    return text === null ? undefined : (JSON.parse(text) as T);
  }
}
