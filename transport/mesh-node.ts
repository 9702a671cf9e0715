/**
 * The MeshNode of one mesh: its listener, its connections, its dialers and its Core peer table (§1.1 RouteMesh,
 * §5 order 5). Rules it applies:
 *
 * Generation (§5 order 5 "RID and lifecycle generation both match"): a Hello (or challenge) from a generation lower
 * than the live record of that RID, or than the generation in the current descriptor snapshot, is refused with
 * CloseCode.StaleGeneration. A higher generation replaces the record: the old connection is closed
 * (CloseCode.Replaced) and the old record turns Lost.
 *
 * Connection rule (one connection per pair of runs):
 *  - Discovery: of two runs that see each other's descriptor, only the smaller (nodeId, generation) dials; the
 *    larger waits for it. So discovered peers never cross-dial.
 *  - Manual peers are dialed regardless (their identity is unknown until the challenge), so two connections can
 *    meet. Then both sides keep the one dialed by the smaller run and close the other with CloseCode.Duplicate;
 *    when both were dialed by the same run the newer wins (the dialer only redials after it saw the old one die,
 *    while the other side may not have noticed yet). Both sides compute the same answer from the same facts.
 *
 * Seal (§14 step 1): no dial, no Hello, no Admit; admitted connections get `draining` and stay for accepted work.
 */
import { CloseCode } from './constants';
import { Connection, type ConnectionOwner, type PeerIdentity } from './connection';
import type { PayloadResult } from './chunks';
import { Dialer } from './dialer';
import type { Link, LinkHandlers, LinkProvider } from './link';
import { compareRefs, PeerTable, sameRef, type PeerRecord } from './peer-table';
import type { MeshConfig, PeerInfo, RuntimeMessage, TransportHandlers } from './types';
import type { NodeRef } from '../vocabulary';

export interface MeshNodeContext {
  readonly self: PeerIdentity;
  readonly provider: LinkProvider;
  readonly maxFrameBytes: number;
  readonly chunkBytes: number;
  readonly handshakeTimeoutMs: number;
  readonly reconnectMinMs: number;
  readonly reconnectMaxMs: number;
  readonly closeGraceMs: number;
  readonly handlers: TransportHandlers;
  isSealed(): boolean;
  /** close() has begun: no handler is called any more (§14: no late callback after teardown began). */
  isClosing(): boolean;
  /** Generation of this RID in the latest descriptor snapshot. */
  descriptorGeneration(nodeId: string): number | undefined;
  /** A run left for good (replaced by a newer generation or vanished from the descriptors). */
  peerGone(mesh: string, peer: NodeRef): void;
  /** A peer announced it is closing (`quiesce`). */
  peerLeaving(mesh: string, peer: NodeRef): void;
  /** The exchange connection to a peer closed; `announced` = it had sent `quiesce` first (a clean goodbye). */
  connectionLost(mesh: string, peer: NodeRef, info: { readonly announced: boolean; readonly unwritten: readonly RuntimeMessage[] }): void;
  countProtocolError(): void;
  countRefusedHello(): void;
}

export interface DescriptorTarget {
  readonly ref: NodeRef & { readonly applicationVersion: number };
  readonly endpoint: string;
}

export class MeshNode implements ConnectionOwner {
  readonly table: PeerTable;
  readonly connections = new Set<Connection>();
  private readonly dialers = new Map<string, Dialer>();
  private readonly dialerOf = new Map<Connection, Dialer>();
  /** Connections of runs whose descriptor vanished, closing: their record turns Lost once they closed. */
  private readonly vanishing = new Map<Connection, { readonly rec: PeerRecord; readonly timer: NodeJS.Timeout }>();
  endpoint: string | undefined;

  constructor(
    readonly mesh: MeshConfig,
    private readonly ctx: MeshNodeContext,
  ) {
    this.table = new PeerTable(mesh.name, (p: PeerInfo) => {
      if (!ctx.isClosing()) ctx.handlers.onPeer?.(p);
    });
  }

  get self(): PeerIdentity {
    return this.ctx.self;
  }
  get maxFrameBytes(): number {
    return this.ctx.maxFrameBytes;
  }
  get chunkBytes(): number {
    return this.ctx.chunkBytes;
  }
  get handshakeTimeoutMs(): number {
    return this.ctx.handshakeTimeoutMs;
  }
  isSealed(): boolean {
    return this.ctx.isSealed() || this.ctx.isClosing();
  }

  async listen(): Promise<string> {
    this.endpoint = await this.ctx.provider.listen(this.mesh, this.ctx.maxFrameBytes, (link) => this.accept(link));
    return this.endpoint;
  }

  private accept(link: Link): LinkHandlers {
    const { conn, handlers } = Connection.accept(this, link);
    this.connections.add(conn);
    return handlers;
  }

  // ---- discovery -------------------------------------------------------------------------------------------

  /** Follows one descriptor snapshot (targets of this mesh, self excluded). */
  applyDescriptors(targets: ReadonlyMap<string, DescriptorTarget>): void {
    for (const rec of this.table.all()) {
      const t = targets.get(rec.nodeId);
      // Manual only when this node's own manual registration dialed it: an inbound connection that arrived
      // before its descriptor was read is merely undiscovered yet, and is corrected here.
      const manualConn = rec.conn !== undefined && this.dialerOf.get(rec.conn)?.manual === true;
      if (t && t.ref.lifecycleGeneration > rec.lifecycleGeneration) this.drop(rec, CloseCode.Replaced, 'replaced by a newer generation');
      else if (!t && rec.source === 'descriptor' && !manualConn && !this.isVanishing(rec)) this.drop(rec, CloseCode.Vanished, 'descriptor vanished');
      else if (t && sameRef(t.ref, rec) && rec.source === 'manual' && !manualConn) {
        rec.source = 'descriptor';
        if (rec.conn) rec.conn.source = 'descriptor';
      }
    }
    for (const [endpoint, d] of this.dialers) {
      if (!d.expected) continue;
      const t = targets.get(d.expected.nodeId);
      if (t && t.endpoint === endpoint && sameRef(t.ref, d.expected)) continue;
      if (d.manual) d.expected = undefined;
      else this.removeDialer(d);
    }
    if (this.isSealed()) return;
    for (const t of targets.values()) {
      if (compareRefs(this.ctx.self, t.ref) > 0) continue; // the smaller run dials (connection rule)
      let d = this.dialers.get(t.endpoint);
      if (!d) d = this.addDialer(t.endpoint);
      d.expected = t.ref;
      d.kick();
    }
  }

  registerManual(endpoint: string): void {
    const d = this.dialers.get(endpoint) ?? this.addDialer(endpoint);
    d.manual = true;
    if (!this.isSealed()) d.kick();
  }

  /** The run reached through a dialed endpoint: announced by its descriptor, or learned from its challenge. */
  identityAt(endpoint: string): NodeRef | undefined {
    const id = this.dialers.get(endpoint)?.identity;
    return id && { nodeId: id.nodeId, lifecycleGeneration: id.lifecycleGeneration };
  }

  private addDialer(endpoint: string): Dialer {
    const d = new Dialer(endpoint, this.ctx, (x) => this.wanted(x), (x) => this.dial(x));
    this.dialers.set(endpoint, d);
    return d;
  }

  private removeDialer(d: Dialer): void {
    d.stop();
    this.dialers.delete(d.endpoint);
    const id = d.expected;
    const rec = id && this.table.find(id);
    if (rec && rec.state === 'Connecting' && !rec.conn) this.table.setState(rec, 'Lost');
  }

  private wanted(d: Dialer): boolean {
    if (this.isSealed()) return false;
    const id = d.identity;
    if (!id) return true;
    if (id.nodeId === this.ctx.self.nodeId) return false; // our own endpoint (a manual registration of it): nothing to dial
    const rec = this.table.get(id.nodeId);
    if (!rec || rec.lifecycleGeneration < id.lifecycleGeneration) return true;
    // A live connection (either direction) or a Draining record: nothing to dial.
    return !(rec.conn?.isOpen || rec.state === 'Draining');
  }

  private dial(d: Dialer): Connection {
    const id = d.expected;
    if (id && !this.table.get(id.nodeId)) {
      this.table.create({ ...id, applicationVersion: (id as Partial<PeerIdentity>).applicationVersion ?? 0 }, 'Connecting', d.manual ? 'manual' : 'descriptor', undefined);
    }
    const conn = Connection.dial(this, (handlers) => this.ctx.provider.dial(this.mesh, d.endpoint, this.ctx.maxFrameBytes, handlers));
    conn.source = d.manual ? 'manual' : 'descriptor';
    this.connections.add(conn);
    this.dialerOf.set(conn, d);
    return conn;
  }

  // ---- ConnectionOwner -------------------------------------------------------------------------------------

  judge(conn: Connection, peer: PeerIdentity): CloseCode | undefined {
    if (peer.nodeId === this.ctx.self.nodeId) return CloseCode.UnexpectedPeer; // our own endpoint (or an older run of us)
    const expected = this.dialerOf.get(conn)?.expected;
    if (expected && !sameRef(expected, peer)) return CloseCode.UnexpectedPeer; // endpoint now serves another run
    const rec = this.table.get(peer.nodeId);
    const liveGen = rec ? rec.lifecycleGeneration : -1;
    const knownGen = Math.max(liveGen, this.ctx.descriptorGeneration(peer.nodeId) ?? -1);
    if (peer.lifecycleGeneration < knownGen) return this.refusal(conn, CloseCode.StaleGeneration);
    if (rec && rec.lifecycleGeneration === peer.lifecycleGeneration) {
      if (rec.state === 'Draining') return this.refusal(conn, CloseCode.Sealed);
      const old = rec.conn;
      if (old && old !== conn && old.isOpen) {
        const dialerOfNew = conn.outbound ? this.ctx.self : peer;
        const dialerOfOld = old.outbound ? this.ctx.self : peer;
        const newWins = sameRef(dialerOfNew, dialerOfOld) || compareRefs(dialerOfNew, dialerOfOld) < 0;
        if (!newWins) return this.refusal(conn, CloseCode.Duplicate);
      }
    }
    return undefined;
  }

  private refusal(_conn: Connection, code: CloseCode): CloseCode {
    return code;
  }

  admitted(conn: Connection): void {
    const peer = conn.peer!;
    const d = this.dialerOf.get(conn);
    if (d) d.learned = { nodeId: peer.nodeId, lifecycleGeneration: peer.lifecycleGeneration };
    if (!d) conn.source = this.ctx.descriptorGeneration(peer.nodeId) === peer.lifecycleGeneration ? 'descriptor' : 'manual';
    let rec = this.table.get(peer.nodeId);
    if (rec && rec.lifecycleGeneration < peer.lifecycleGeneration) {
      this.drop(rec, CloseCode.Replaced, 'replaced by a newer generation');
      rec = undefined;
    }
    if (rec && rec.lifecycleGeneration > peer.lifecycleGeneration) {
      conn.close(CloseCode.StaleGeneration, 'stale generation'); // a newer run was admitted meanwhile
      return;
    }
    if (!rec) {
      this.table.create(peer, 'Admitted', conn.source, conn);
      return;
    }
    const old = rec.conn;
    rec.conn = conn;
    rec.applicationVersion = peer.applicationVersion;
    if (d?.manual) rec.source = 'manual';
    if (old && old !== conn) old.close(CloseCode.Duplicate, 'duplicate connection'); // judge() let the new one win
    this.table.setState(rec, 'Admitted');
  }

  ready(conn: Connection): void {
    const rec = conn.peer && this.table.find(conn.peer);
    if (!rec || rec.conn !== conn) return;
    this.dialerOf.get(conn)?.succeeded();
    if (rec.state !== 'Draining') this.table.setState(rec, 'Ready');
  }

  draining(conn: Connection): void {
    const rec = conn.peer && this.table.find(conn.peer);
    if (rec && rec.conn === conn) this.table.setState(rec, 'Draining');
  }

  leaving(conn: Connection): void {
    const rec = conn.peer && this.table.find(conn.peer);
    if (rec && rec.conn === conn && !this.ctx.isClosing()) this.ctx.peerLeaving(this.mesh.name, this.refOf(conn));
  }

  messages(conn: Connection, messages: RuntimeMessage[]): void {
    if (this.ctx.isClosing()) return;
    const from = this.refOf(conn);
    for (const m of messages) {
      if (this.ctx.isClosing()) return; // a handler closed the transport mid-batch
      this.ctx.handlers.onMessage(from, m);
    }
  }

  payload(conn: Connection, payloadId: string, result: PayloadResult): void {
    if (this.ctx.isClosing()) return;
    this.ctx.handlers.onPayload(this.refOf(conn), payloadId, result);
  }

  protocolError(): void {
    this.ctx.countProtocolError();
  }

  refused(conn: Connection): void {
    if (!conn.outbound) this.ctx.countRefusedHello();
  }

  closed(conn: Connection, code: number): void {
    this.connections.delete(conn);
    const vanished = this.vanishing.get(conn);
    if (vanished) {
      clearTimeout(vanished.timer);
      this.vanishing.delete(conn);
      // Unless the run came back meanwhile (its descriptor again) and a new connection took the record.
      if (!vanished.rec.conn) this.lose(vanished.rec);
    }
    const d = this.dialerOf.get(conn);
    this.dialerOf.delete(conn);
    // A sealed listener refuses before its challenge, so a descriptor dial knows the peer only as expected.
    const peer: NodeRef | undefined = conn.peer ?? d?.expected;
    const rec = peer && this.table.get(peer.nodeId);
    if (rec && rec.conn === conn) {
      rec.conn = undefined;
      if (conn.canExchangeBeforeClose && !this.ctx.isClosing()) this.ctx.connectionLost(this.mesh.name, this.refOf(conn), { announced: conn.peerLeaving, unwritten: conn.unwrittenAtClose });
      // A Draining record stays Draining (§14 step 1: loss after the seal does not un-drain).
      if (rec.state !== 'Draining') this.table.setState(rec, 'Lost');
    } else if (peer && conn.outbound && code === CloseCode.Sealed && !this.isSealed()) {
      // The peer refused us because it sealed: remember it as Draining so nobody dials it again.
      if (!rec) this.table.create({ applicationVersion: 0, ...peer }, 'Draining', conn.source, undefined);
      else if (rec.lifecycleGeneration === peer.lifecycleGeneration && !rec.conn) this.table.setState(rec, 'Draining');
    }
    if (this.ctx.isClosing()) return;
    // A manual dial refused after the challenge (e.g. a duplicate of a connection the peer dialed) still learned
    // who answers there (peerAt): without it the dialer, knowing no identity, would redial the same peer forever.
    if (d?.manual && conn.outbound && conn.peer) d.learned = { nodeId: conn.peer.nodeId, lifecycleGeneration: conn.peer.lifecycleGeneration };
    if (d) {
      if (code === CloseCode.StaleGeneration && !d.manual) this.removeDialer(d);
      else d.lost(conn);
    }
    // A dialer that was idle because of this connection may be wanted again.
    if (peer) for (const other of this.dialers.values()) if (other !== d && other.identity?.nodeId === peer.nodeId) other.kick();
  }

  private refOf(conn: Connection): NodeRef {
    const p = conn.peer!;
    return { nodeId: p.nodeId, lifecycleGeneration: p.lifecycleGeneration };
  }

  private drop(rec: PeerRecord, code: CloseCode, reason: string): void {
    const conn = rec.conn;
    rec.conn = undefined;
    if (conn?.isOpen && code === CloseCode.Vanished) {
      // A run whose descriptor vanished may have written to us just before it left (a shutdown result at its
      // deadline): what it sent before its close is read before it is reported Lost. Bounded like any close.
      this.vanishing.set(conn, { rec, timer: setTimeout(() => conn.destroy(), this.ctx.closeGraceMs) });
      conn.close(code, reason);
      return;
    }
    conn?.close(code, reason);
    this.lose(rec);
  }

  private lose(rec: PeerRecord): void {
    if (this.table.get(rec.nodeId) !== rec) return; // already Lost, or replaced by a newer run
    this.table.setState(rec, 'Lost');
    this.ctx.peerGone(this.mesh.name, rec);
  }

  private isVanishing(rec: PeerRecord): boolean {
    for (const v of this.vanishing.values()) if (v.rec === rec) return true;
    return false;
  }

  // ---- seal and close --------------------------------------------------------------------------------------

  /** §14 step 1. Dialers stop (wanted() is false from now on); Connecting records without a connection go. */
  seal(): void {
    for (const d of this.dialers.values()) d.stop();
    for (const conn of [...this.connections]) conn.seal();
    for (const rec of this.table.all()) if (rec.state === 'Connecting' && !rec.conn) this.table.setState(rec, 'Lost');
  }

  /**
   * §14 cleanup step 4 prelude: every exchange connection is asked to stop sending to this node; resolves when all
   * answered, or after closeGraceMs (a stalled peer must not hold Shutdown). Inbound traffic is still handled.
   */
  async quiesce(): Promise<void> {
    const all = Promise.all([...this.connections].map((c) => c.quiesce()));
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.ctx.closeGraceMs)));
    await Promise.race([all, grace]);
    clearTimeout(timer);
  }

  /**
   * Bounded teardown (§14): cancels pending payload sends, flushes accepted messages, closes every link and waits
   * for each to report closed; a link that takes longer than closeGraceMs is destroyed, and still awaited, so no
   * late callback can reach a resource after close() resolved.
   */
  async close(cancelError: () => Error): Promise<void> {
    for (const d of this.dialers.values()) d.stop();
    const conns = [...this.connections];
    for (const c of conns) c.close(CloseCode.GoingAway, 'transport closed', cancelError);
    let timer: NodeJS.Timeout | undefined;
    const all = Promise.all(conns.map((c) => c.whenClosed()));
    const grace = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), this.ctx.closeGraceMs)));
    const outcome = await Promise.race([all, grace]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      for (const c of conns) c.destroy();
      await all;
    }
  }
}
