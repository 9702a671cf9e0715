/**
 * The target side of `r.prepareKeys` (protocol.ts): the prepare of one unit too large for one message (a SpotWide
 * Spot with very many members) arrives in parts, in order on one connection. Assembled here, the unit is handed on
 * as a one-unit `r.prepare` and handled exactly like any other (coordinator `onPrepare`).
 *
 * Bounded, so a lost part cannot leak memory:
 * - an assembly lives at most the staging validity (restoreValidityMs, §11) — the time the whole unit would have to
 *   receive its payload once prepared — and is then dropped;
 * - the keys announced by all open assemblies together never exceed `maxKeys` (the host's capacity: a larger unit
 *   could never be staged anyway), so a head cannot make this hold more than that.
 * A part out of order, keys that do not add up to the announced count, or an expiry end the assembly with an
 * explicit failure to the source before relay-ready, so the source restores the unit (§11) rather than waiting for
 * its deadline. A part of no open assembly (its unit already failed here, and the source was told) is dropped.
 */
import type { NodeRef } from '../../stores/types';
import { RelocationReason } from '../../vocabulary';
import type { Clock } from '../clock';
import { nodeKey } from '../keys';
import { ExpiryQueue } from '../expiry-queue';
import { RELOCATION_MESSAGE, type PrepareHead, type PrepareKeysMessage, type PrepareMessage } from './protocol';

/** Where an assembly ends: the whole unit, or a failure for its source. */
export interface PrepareAssemblyPort {
  complete(from: NodeRef, message: PrepareMessage): void;
  fail(from: NodeRef, u: string, reason: RelocationReason, error: string): void;
}

interface Assembly {
  readonly id: string;
  readonly from: NodeRef;
  readonly u: string;
  readonly head: PrepareHead;
  readonly keys: string[];
  /** Tells this assembly from a later one of the same unit (a resent prepare) at expiry. */
  readonly seq: number;
  /** The part expected next. */
  next: number;
}

export class PrepareAssembly {
  private readonly open = new Map<string, Assembly>();
  /** Keys announced by the open assemblies (their heads' `n`), held against `maxKeys`. */
  private announced = 0;
  private seq = 0;
  /** Ids and seqs only: an assembly that ended is not kept alive until its expiry passes. */
  private readonly expiry: ExpiryQueue<{ readonly id: string; readonly seq: number }>;

  constructor(
    clock: Clock,
    validityMs: number,
    private readonly maxKeys: () => number,
    private readonly port: PrepareAssemblyPort,
  ) {
    this.expiry = new ExpiryQueue(clock, validityMs, ({ id, seq }) => {
      const a = this.open.get(id);
      // Completed, failed or restarted since: nothing to do.
      if (!a || a.seq !== seq) return;
      this.fail(a, RelocationReason.RelocationFailed, `prepare of unit ${a.u} incomplete within restore validity (${a.keys.length} of ${a.head.n} keys, ${a.next} of ${a.head.parts} parts)`);
    });
  }

  /** Open assemblies and the keys they announced (diagnostics and tests). */
  get size(): number {
    return this.open.size;
  }
  get announcedKeys(): number {
    return this.announced;
  }

  add(from: NodeRef, m: PrepareKeysMessage): void {
    const id = `${nodeKey(from)}\u0000${m.u}`;
    let a = this.open.get(id);
    if (m.part === 0) {
      // A resent prepare starts afresh.
      if (a) this.drop(a);
      const head = m.head!;
      const room = this.maxKeys() - this.announced;
      if (head.n > room)
        return void this.port.fail(from, m.u, RelocationReason.StateIncompatible, `unit ${m.u} has ${head.n} objects; this target can take at most ${Math.max(room, 0)} more`);
      a = { id, from, u: m.u, head, keys: [], seq: ++this.seq, next: 0 };
      this.open.set(id, a);
      this.announced += head.n;
      this.expiry.push({ id, seq: a.seq });
    } else if (!a) return;
    if (m.part !== a.next) return this.fail(a, RelocationReason.RelocationFailed, `prepare part ${m.part} of unit ${a.u} arrived where part ${a.next} was expected`);
    if (a.keys.length + m.keys.length > a.head.n) return this.fail(a, RelocationReason.RelocationFailed, `prepare of unit ${a.u} carries more than the ${a.head.n} keys it announced`);
    for (const key of m.keys) a.keys.push(key);
    if (++a.next < a.head.parts) return;
    this.drop(a);
    if (a.keys.length !== a.head.n) return this.port.fail(from, a.u, RelocationReason.RelocationFailed, `prepare of unit ${a.u} ended with ${a.keys.length} of the ${a.head.n} keys it announced`);
    const { kind, ty, types } = a.head;
    this.port.complete(from, { t: RELOCATION_MESSAGE.prepare, units: [{ u: a.u, kind, keys: a.keys, ty }], types });
  }

  /** §14: everything open is dropped with the transport, no failure sent. */
  clear(): void {
    this.open.clear();
    this.announced = 0;
    this.expiry.clear();
  }

  private drop(a: Assembly): void {
    this.open.delete(a.id);
    this.announced -= a.head.n;
  }

  private fail(a: Assembly, reason: RelocationReason, error: string): void {
    this.drop(a);
    this.port.fail(a.from, a.u, reason, error);
  }
}
