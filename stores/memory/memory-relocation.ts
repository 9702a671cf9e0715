/** Relocation Store of the memory provider (§9): first write wins for creation records and request terminals. */
import type { InstanceCreation, RelocationStore, RequestTerminal } from '../types';
import { generationSchema, instanceCreationSchema, opIdSchema, parse, spotIdSchema, terminalSchema, ttlMsSchema } from '../validation';

export class MemoryRelocationStore implements RelocationStore {
  private readonly creations = new Map<string, { readonly record: InstanceCreation; readonly opId: string }>();
  private readonly terminals = new Map<string, { readonly terminal: RequestTerminal; readonly expiresAt: number }>();

  constructor(private readonly now: () => number) {}

  async recordInstanceCreation(record: InstanceCreation, opId: string): Promise<boolean> {
    const value = parse(instanceCreationSchema, record, 'recordInstanceCreation') as InstanceCreation;
    parse(opIdSchema, opId, 'recordInstanceCreation opId');
    const current = this.creations.get(value.spotId);
    if (current) {
      if (current.opId === opId) return true; // a replay of the winning write still reports that it won
      if (current.record.objectGeneration >= value.objectGeneration) return false;
    }
    this.creations.set(value.spotId, { record: value, opId });
    return true;
  }

  async getInstanceCreation(spotId: string): Promise<InstanceCreation | undefined> {
    return this.creations.get(parse(spotIdSchema, spotId, 'getInstanceCreation'))?.record;
  }

  async removeInstanceCreation(spotId: string, objectGeneration: number): Promise<boolean> {
    parse(spotIdSchema, spotId, 'removeInstanceCreation');
    parse(generationSchema, objectGeneration, 'removeInstanceCreation objectGeneration');
    const current = this.creations.get(spotId);
    if (!current || current.record.objectGeneration !== objectGeneration) return false;
    this.creations.delete(spotId);
    return true;
  }

  async recordRequestTerminal(opId: string, terminal: RequestTerminal, ttlMs: number): Promise<boolean> {
    parse(opIdSchema, opId, 'recordRequestTerminal opId');
    const value = parse(terminalSchema, terminal, 'recordRequestTerminal') as RequestTerminal;
    parse(ttlMsSchema, ttlMs, 'recordRequestTerminal ttlMs');
    if (this.liveTerminal(opId)) return false;
    this.terminals.set(opId, { terminal: value, expiresAt: this.now() + ttlMs });
    return true;
  }

  async getRequestTerminal(opId: string): Promise<RequestTerminal | undefined> {
    return this.liveTerminal(parse(opIdSchema, opId, 'getRequestTerminal'))?.terminal;
  }

  private liveTerminal(opId: string): { readonly terminal: RequestTerminal } | undefined {
    const current = this.terminals.get(opId);
    if (current && current.expiresAt > this.now()) return current;
    this.terminals.delete(opId);
    return undefined;
  }
}
