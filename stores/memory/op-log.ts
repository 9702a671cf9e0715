/**
 * Per-operation results of the memory provider (§1.1 twin of the Redis op keys): a replay of an opId that
 * already applied returns the recorded result instead of applying twice. Entries expire after `ttlMs`.
 */
export class OpLog {
  /** Insertion order is expiry order (one TTL for all), so pruning stops at the first live entry. */
  private readonly entries = new Map<string, { readonly result: unknown; readonly expiresAt: number }>();

  constructor(
    private readonly now: () => number,
    private readonly ttlMs: number,
  ) {}

  recorded<T>(opId: string): T | undefined {
    this.prune();
    return this.entries.get(opId)?.result as T | undefined;
  }

  record<T>(opId: string, result: T): T {
    // crypto.randomUUID() returns a rope of ~14 concatenated pieces (~400 B more kept per entry for the whole TTL);
    // charCodeAt flattens it in place, so the log keeps one flat string (measured: tools/bench/heap.bench.ts).
    opId.charCodeAt(0);
    this.entries.set(opId, { result, expiresAt: this.now() + this.ttlMs });
    return result;
  }

  private prune(): void {
    const now = this.now();
    for (const [opId, entry] of this.entries) {
      if (entry.expiresAt > now) return;
      this.entries.delete(opId);
    }
  }
}
