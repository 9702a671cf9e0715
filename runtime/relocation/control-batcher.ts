/**
 * Control messages of many units as one message (DESIGN.md "Relocation at scale", Parcels: "one `r.prepare`, …
 * Per-unit results stay per unit"). The units that reach the same step in the same I/O turn for the same peer go
 * as one `r.prepare` (source → target, type capabilities deduplicated across the units), one `r.prepared` and one
 * `r.ready` (target → source). Each unit still gets its own reply, failure and timers; only the envelope is shared.
 *
 * Order per unit on the connection is kept: a batch goes out at the end of the turn (setImmediate, like the
 * parcels), in the order prepare → prepared → ready → cutovers; a per-unit message that must not overtake a batched
 * one (`r.abort` after its `r.prepare`, §11; `r.fail` after a `r.prepared`; a Message Follow message after its unit's
 * cutover, §13) calls `flush(peer)` first.
 *
 * Cutovers (`r.cutovers`, source → target) do not wait for the end of the turn: S1 is the terminal of the cutover
 * submit (§8), so the step that cut the units over (one `r.ready` handled) flushes them before it returns.
 *
 * One unit whose keys alone do not fit one message (a SpotWide Spot with very many members) goes on its own as
 * `r.prepareKeys` parts, sent one after the other in the same flush, so its `r.abort` still cannot overtake them;
 * the target assembles them (prepare-assembly.ts). The message size follows the transport's frame limit.
 */
import type { NodeRef, TypeCapability } from '../../stores/types';
import { TRANSPORT_DEFAULTS } from '../../transport/constants';
import type { RuntimeMessage, Transport } from '../../transport/types';
import { nodeKey } from '../keys';
import { RELOCATION_MESSAGE, type PrepareKeysMessage, type PrepareUnit, type UnitsMessage } from './protocol';

/** Estimated encoded bytes per message: well under the transport's frame limit (default 4 MiB). */
export const CONTROL_BATCH_BYTES = 1024 * 1024;

/**
 * Estimated bytes per control message for a transport: CONTROL_BATCH_BYTES, or a quarter of a lower frame limit.
 * The estimates count UTF-16 code units and UTF-8 takes at most 3 bytes for one, so a quarter always fits.
 */
export function controlMessageBytes(maxFrameBytes: number | undefined): number {
  return Math.min(CONTROL_BATCH_BYTES, Math.floor((maxFrameBytes ?? TRANSPORT_DEFAULTS.maxFrameBytes) / 4));
}

interface PendingPrepare {
  readonly unit: PrepareUnit;
  /** Estimated encoded size, computed once when the unit joins the batch. */
  readonly bytes: number;
  /** The transport did not take the message: the unit fails at once, as a refused single send did. */
  readonly unsent: () => void;
}

interface Pending {
  readonly peer: NodeRef;
  prepares: PendingPrepare[];
  /** Estimated bytes of `prepares` (sum of their `bytes`). */
  prepareBytes: number;
  /** Capabilities of the prepares' types, deduplicated by type name; `PrepareUnit.ty` indexes into it. */
  types: TypeCapability[];
  typeIndex: Map<string, number>;
  prepared: string[];
  preparedBytes: number;
  ready: string[];
  readyBytes: number;
  cutovers: string[];
  cutoverBytes: number;
  /** Told whether the transport took the unit's cutover (same index as `cutovers`; only units that asked). */
  submitted: (((ok: boolean) => void) | undefined)[] | undefined;
}

/** Rough encoded size of one unit id / key in a control message (msgpack string header and the string). */
const idBytes = (s: string) => s.length + 5;
const prepareBytes = (unit: PrepareUnit) => {
  let n = idBytes(unit.u) + 16 + 2 * unit.ty.length;
  for (let i = 0; i < unit.keys.length; i++) n += idBytes(unit.keys[i]!);
  return n;
};
/** Rough encoded size of a type capability (field names, values, msgpack headers). */
const capabilityBytes = (c: TypeCapability) => c.type.length + (c.adapter?.length ?? 0) + 96;

export class ControlBatcher {
  private readonly pending = new Map<string, Pending>();
  private scheduled: NodeJS.Immediate | undefined;
  /** The peer object of the last call and its batch: the units of one message share it (no key string per reply). */
  private lastPeer: NodeRef | undefined;
  private lastEntry: Pending | undefined;

  constructor(private readonly transport: () => Transport | undefined) {}

  private entry(peer: NodeRef): Pending {
    if (peer === this.lastPeer) return this.lastEntry!;
    const key = nodeKey(peer);
    let entry = this.pending.get(key);
    if (!entry)
      this.pending.set(
        key,
        (entry = { peer, prepares: [], prepareBytes: 0, types: [], typeIndex: new Map(), prepared: [], preparedBytes: 0, ready: [], readyBytes: 0, cutovers: [], cutoverBytes: 0, submitted: undefined }),
      );
    // setImmediate: every unit that reaches this step in this I/O turn joins the same message.
    this.scheduled ??= setImmediate(() => this.flushAll());
    this.lastPeer = peer;
    this.lastEntry = entry;
    return entry;
  }

  /** Source → target: register this unit's temporary queue (§8), with the capabilities of the types it uses. */
  prepare(target: NodeRef, unit: Omit<PrepareUnit, 'ty'>, types: readonly TypeCapability[], unsent: () => void): void {
    const entry = this.entry(target);
    const ty: number[] = [];
    for (const cap of types) {
      let i = entry.typeIndex.get(cap.type);
      if (i === undefined) {
        i = entry.types.push(cap) - 1;
        entry.typeIndex.set(cap.type, i);
      }
      ty.push(i);
    }
    const prepare: PrepareUnit = { u: unit.u, kind: unit.kind, keys: unit.keys, ty };
    const bytes = prepareBytes(prepare);
    entry.prepares.push({ unit: prepare, bytes, unsent });
    entry.prepareBytes += bytes;
  }

  /** Target → source: the unit's temporary queue is registered. */
  prepared(source: NodeRef, u: string): void {
    const entry = this.entry(source);
    entry.prepared.push(u);
    entry.preparedBytes += idBytes(u);
  }

  /** Target → source: the unit's payload is verified and restored — relay-ready (§13). */
  ready(source: NodeRef, u: string): void {
    const entry = this.entry(source);
    entry.ready.push(u);
    entry.readyBytes += idBytes(u);
  }

  /**
   * Source → target: the one-way cutover of a unit whose relay batch is empty (§13). The caller flushes at the end
   * of its step; `submitted` learns whether the transport took the message that carried it.
   */
  cutover(target: NodeRef, u: string, submitted?: (ok: boolean) => void): void {
    const entry = this.entry(target);
    const i = entry.cutovers.push(u) - 1;
    entry.cutoverBytes += idBytes(u);
    if (submitted) (entry.submitted ??= [])[i] = submitted;
  }

  /** Sends what waits for this peer now (before a per-unit message that must not overtake it). */
  flush(peer: NodeRef): void {
    if (this.pending.size === 0) return;
    const key = nodeKey(peer);
    const entry = this.pending.get(key);
    if (!entry) return;
    this.pending.delete(key);
    if (this.lastEntry === entry) this.lastPeer = this.lastEntry = undefined;
    this.send(entry);
  }

  private flushAll(): void {
    this.scheduled = undefined;
    const entries = [...this.pending.values()];
    this.pending.clear();
    this.lastPeer = this.lastEntry = undefined;
    for (const entry of entries) this.send(entry);
  }

  private send(entry: Pending): void {
    const transport = this.transport();
    const { peer } = entry;
    const limit = controlMessageBytes(transport?.maxFrameBytes);
    // A message the transport refuses (none Ready, or too large after all) is one not taken: never a throw here.
    const send = (message: RuntimeMessage): boolean => {
      try {
        return transport?.send(peer, message) ?? false;
      } catch {
        return false;
      }
    };
    if (entry.prepares.length > 0) this.sendPrepares(entry, limit, send);
    // What was batched fits one message almost always: sent as it is, split only when the estimate is over.
    if (entry.prepared.length > 0) this.sendIds(RELOCATION_MESSAGE.prepared, entry.prepared, entry.preparedBytes, limit, send);
    if (entry.ready.length > 0) this.sendIds(RELOCATION_MESSAGE.ready, entry.ready, entry.readyBytes, limit, send);
    if (entry.cutovers.length > 0) this.sendCutovers(entry, limit, send);
  }

  private sendPrepares(entry: Pending, limit: number, send: (message: RuntimeMessage) => boolean): void {
    const { prepares } = entry;
    let batched = prepares;
    if (prepares.some((p) => p.bytes > limit)) {
      batched = [];
      for (const p of prepares) {
        if (p.bytes <= limit) batched.push(p);
        else if (!sendInParts(p, entry.types, limit, send)) p.unsent();
      }
    }
    const parts = batched === prepares && entry.prepareBytes <= limit ? [prepares] : split(batched, (p) => p.bytes, limit);
    for (const part of parts) {
      // Only the capabilities this message's units use, re-indexed when the batch was split.
      const { types, units } = part.length === prepares.length ? { types: entry.types, units: part.map((p) => p.unit) } : reindex(part, entry.types);
      if (!send({ t: RELOCATION_MESSAGE.prepare, units, types })) for (const p of part) p.unsent();
    }
  }

  private sendCutovers(entry: Pending, limit: number, send: (message: RuntimeMessage) => boolean): void {
    const parts = entry.cutoverBytes <= limit ? [entry.cutovers] : split(entry.cutovers, idBytes, limit);
    let at = 0;
    for (const part of parts) {
      const ok = send({ t: RELOCATION_MESSAGE.cutovers, us: part });
      if (entry.submitted) for (let i = at; i < at + part.length; i++) entry.submitted[i]?.(ok);
      at += part.length;
    }
  }

  private sendIds(t: UnitsMessage['t'], us: string[], bytes: number, limit: number, send: (message: RuntimeMessage) => boolean): void {
    if (bytes <= limit) return void send({ t, us });
    for (const part of split(us, idBytes, limit)) send({ t, us: part });
  }
}

/**
 * One unit's prepare as `r.prepareKeys` parts (protocol.ts), in order; part 0 carries the head. false as soon as
 * the transport does not take a part (the rest are not sent: the target's assembly expires or fails).
 */
function sendInParts(p: PendingPrepare, all: readonly TypeCapability[], limit: number, send: (message: RuntimeMessage) => boolean): boolean {
  const { types, units } = reindex([p], all);
  const { u, kind, keys, ty } = units[0]!;
  const headBytes = idBytes(u) + 64 + 2 * ty.length + types.reduce((n, c) => n + capabilityBytes(c), 0);
  const parts = split(keys, idBytes, Math.max(limit - headBytes, 1));
  for (let i = 0; i < parts.length; i++) {
    const message = { t: RELOCATION_MESSAGE.prepareKeys, u, part: i, keys: parts[i]!, ...(i === 0 ? { head: { parts: parts.length, n: keys.length, kind, ty, types } } : {}) } satisfies PrepareKeysMessage;
    if (!send(message)) return false;
  }
  return true;
}

/**
 * Consecutive runs whose estimated size stays under `limit` (at least one item each). An indexed loop, not for-of:
 * V8 compiled a long for-of loop here on stack (OSR) before its iterator-closing exit had run, and that cached code
 * then deoptimized on every later call (issue [6/10]: ~1 deopt per flush on the target, 10% of its profile samples).
 */
function split<T>(items: readonly T[], size: (item: T) => number, limit: number): T[][] {
  const parts: T[][] = [];
  let start = 0;
  let bytes = 0;
  for (let i = 0; i < items.length; i++) {
    const n = size(items[i]!);
    if (i > start && bytes + n > limit) {
      parts.push(items.slice(start, i));
      start = i;
      bytes = 0;
    }
    bytes += n;
  }
  if (items.length > start) parts.push(items.slice(start));
  return parts;
}

function reindex(part: PendingPrepare[], all: readonly TypeCapability[]): { types: TypeCapability[]; units: PrepareUnit[] } {
  const types: TypeCapability[] = [];
  const index = new Map<number, number>();
  const units = part.map(({ unit }) => ({
    ...unit,
    ty: unit.ty.map((i) => {
      let j = index.get(i);
      if (j === undefined) index.set(i, (j = types.push(all[i]!) - 1));
      return j;
    }),
  }));
  return { types, units };
}
