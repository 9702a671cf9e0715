/**
 * Relocation Store on Redis (§9): Instance Spot creation records and late request terminals, first write wins.
 * first-write.lua stores the writer's token with the value, so re-running a write whose reply was lost gives the
 * definite answer (1 = this writer's value is stored) without a fence.
 */
import { randomUUID } from 'node:crypto';
import type { InstanceCreation, RelocationStore, RequestTerminal } from '../types';
import { generationSchema, instanceCreationSchema, opIdSchema, parse, spotIdSchema, terminalSchema, ttlMsSchema } from '../validation';
import type { RedisContext } from './context';

export class RedisRelocationStore implements RelocationStore {
  constructor(private readonly ctx: RedisContext) {}

  async recordInstanceCreation(record: InstanceCreation, opId: string): Promise<boolean> {
    const value = parse(instanceCreationSchema, record, 'recordInstanceCreation');
    parse(opIdSchema, opId, 'recordInstanceCreation opId');
    const { client } = this.ctx;
    const key = this.ctx.keys.instance(value.spotId);
    // instance-record.lua: first write wins per ObjectGeneration; a replay of the winner answers 1 again (no fence).
    return (
      (await client.retrying('recordInstanceCreation', () => client.script('instanceRecord', [key], [opId, JSON.stringify(value), value.objectGeneration]))) === 1
    );
  }

  async getInstanceCreation(spotId: string): Promise<InstanceCreation | undefined> {
    return this.read<InstanceCreation>('getInstanceCreation', this.ctx.keys.instance(parse(spotIdSchema, spotId, 'getInstanceCreation')));
  }

  async removeInstanceCreation(spotId: string, objectGeneration: number): Promise<boolean> {
    const key = this.ctx.keys.instance(parse(spotIdSchema, spotId, 'removeInstanceCreation'));
    parse(generationSchema, objectGeneration, 'removeInstanceCreation objectGeneration');
    const { client } = this.ctx;
    // Removing the record of one generation is safe to repeat (a replay finds nothing of it and removes nothing).
    return (await client.retrying('removeInstanceCreation', () => client.script('instanceRemove', [key], [objectGeneration]))) === 1;
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
