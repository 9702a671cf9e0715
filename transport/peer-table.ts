/**
 * Core peer table of one mesh (§5 order 5: a target must be Admitted and Ready here with exactly the RID and
 * lifecycle generation of its descriptor). One record per RID: a process run is identified by (RID, generation),
 * and a newer generation of a RID replaces the older one.
 *
 * `setState` is the one place a peer's state changes; it fires onPeer (like ioredis' setStatus).
 *
 * States: Connecting (we dial a known identity) → Admitted (Admit sent or received) → Ready (the other side's
 * Ready received) → Draining (the peer sealed, §14 step 1) ; Lost (connection gone, replaced or vanished: the
 * record is removed). A Draining record stays Draining when its connection drops: a sealed node never admits again,
 * so transport loss cannot un-drain it.
 */
import type { Connection } from './connection';
import type { PeerInfo, PeerState } from './types';
import type { NodeRef } from '../vocabulary';

export interface PeerRecord {
  readonly nodeId: string;
  readonly lifecycleGeneration: number;
  applicationVersion: number;
  state: PeerState;
  source: 'descriptor' | 'manual';
  conn: Connection | undefined;
}

/** Total order on process runs: RID, then generation. Used by the connection rule (mesh-node.ts). */
export function compareRefs(a: NodeRef, b: NodeRef): number {
  if (a.nodeId !== b.nodeId) return a.nodeId < b.nodeId ? -1 : 1;
  return a.lifecycleGeneration - b.lifecycleGeneration;
}

export function sameRef(a: NodeRef, b: NodeRef): boolean {
  return a.nodeId === b.nodeId && a.lifecycleGeneration === b.lifecycleGeneration;
}

export class PeerTable {
  private readonly records = new Map<string, PeerRecord>();

  constructor(
    readonly mesh: string,
    private readonly emit: (peer: PeerInfo) => void,
  ) {}

  get(nodeId: string): PeerRecord | undefined {
    return this.records.get(nodeId);
  }

  all(): PeerRecord[] {
    return [...this.records.values()];
  }

  /** Creates the record of a process run (replacing nothing: the caller removed an older one first). */
  create(peer: NodeRef & { applicationVersion: number }, state: PeerState, source: PeerRecord['source'], conn: Connection | undefined): PeerRecord {
    const rec: PeerRecord = {
      nodeId: peer.nodeId,
      lifecycleGeneration: peer.lifecycleGeneration,
      applicationVersion: peer.applicationVersion,
      state,
      source,
      conn,
    };
    this.records.set(rec.nodeId, rec);
    this.emit(this.info(rec));
    return rec;
  }

  setState(rec: PeerRecord, state: PeerState): void {
    if (this.records.get(rec.nodeId) !== rec || rec.state === state) return;
    rec.state = state;
    if (state === 'Lost') this.records.delete(rec.nodeId);
    this.emit(this.info(rec));
  }

  info(rec: PeerRecord): PeerInfo {
    return {
      nodeId: rec.nodeId,
      lifecycleGeneration: rec.lifecycleGeneration,
      mesh: this.mesh,
      applicationVersion: rec.applicationVersion,
      state: rec.state,
      source: rec.source,
    };
  }

  snapshot(): PeerInfo[] {
    return this.all().map((r) => this.info(r));
  }

  /** The record of exactly this run, if any. */
  find(ref: NodeRef): PeerRecord | undefined {
    const rec = this.records.get(ref.nodeId);
    return rec && rec.lifecycleGeneration === ref.lifecycleGeneration ? rec : undefined;
  }

  isReady(ref: NodeRef): boolean {
    return this.find(ref)?.state === 'Ready';
  }

  /** The connection runtime traffic to this run uses (Ready, or Draining but still connected). */
  exchangeConnection(ref: NodeRef): Connection | undefined {
    const conn = this.find(ref)?.conn;
    return conn?.canExchange ? conn : undefined;
  }
}
