/**
 * The Transport (types.ts) over any LinkProvider: ws/ and memory/ differ only in their provider, so the in-process
 * transport runs the very same handshake, peer table, coalescing, chunking, checksum and budget code as ws.
 *
 * One MeshNode per mesh (a host may join several; §5.1 "a process with multiple Meshes must satisfy the condition
 * on every Mesh"). Runtime messages and payloads use the first (primary) mesh. The payload budget is per peer run
 * (RID + generation) on the primary mesh, i.e. per logical peer connection: it survives a reconnect of the same run
 * and is closed when that run is replaced or vanishes.
 */
import { CHUNK_HEADER_MAX_BYTES, CloseCode, TRANSPORT_DEFAULTS } from './constants';
import type { PeerIdentity } from './connection';
import { PayloadBudget } from './budget';
import { PayloadRejectedError, PeerUnavailableError, TransportClosedError } from './errors';
import { batchFrameBytes, encodeMessage } from './frames';
import type { LinkProvider } from './link';
import { MeshNode, type DescriptorTarget, type MeshNodeContext } from './mesh-node';
import type { NodeDescriptor } from '../vocabulary';
import type { BudgetLease, PeerInfo, RuntimeMessage, Transport, TransportDiagnostics, TransportOptions } from './types';
import type { NodeRef } from '../vocabulary';

function positiveInt(value: number | undefined, fallback: number, name: string): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v <= 0) throw new RangeError(`TransportOptions.${name} must be a positive safe integer, got ${value}`);
  return v;
}

const refKey = (p: NodeRef): string => `${p.nodeId}\u0000${p.lifecycleGeneration}`;

export class MeshTransport implements Transport {
  private readonly nodes: MeshNode[];
  private readonly byName = new Map<string, MeshNode>();
  private readonly budgets = new Map<string, PayloadBudget>();
  private readonly descriptorGens = new Map<string, number>();
  private readonly manual: { mesh: string; endpoint: string }[] = [];
  /** Endpoints dialed for components (connectEndpoint): dialed like manual peers, not counted as RouteMesh peers. */
  private readonly dialed: { mesh: string; endpoint: string }[] = [];
  private lastSnapshot: readonly NodeDescriptor[] | undefined;
  private startPromise: Promise<Record<string, string>> | undefined;
  private started = false;
  private sealed = false;
  private closing = false;
  private closePromise: Promise<void> | undefined;
  private counters = { protocolErrors: 0, refusedHellos: 0 };
  private readonly budgetBytes: number;
  readonly maxFrameBytes: number;
  private readonly self: PeerIdentity;

  constructor(
    options: TransportOptions,
    private readonly provider: LinkProvider,
  ) {
    if (options.meshes.length === 0) throw new TypeError('TransportOptions.meshes must name at least one mesh');
    this.self = options.self;
    this.budgetBytes = positiveInt(options.inFlightPayloadBudgetBytes, TRANSPORT_DEFAULTS.inFlightPayloadBudgetBytes, 'inFlightPayloadBudgetBytes');
    this.maxFrameBytes = positiveInt(options.maxFrameBytes, TRANSPORT_DEFAULTS.maxFrameBytes, 'maxFrameBytes');
    const chunkBytes = positiveInt(options.chunkBytes, TRANSPORT_DEFAULTS.chunkBytes, 'chunkBytes');
    if (chunkBytes + CHUNK_HEADER_MAX_BYTES > this.maxFrameBytes) {
      throw new RangeError(`TransportOptions.chunkBytes (${chunkBytes}) plus the ${CHUNK_HEADER_MAX_BYTES}-byte chunk header must fit maxFrameBytes (${this.maxFrameBytes})`);
    }
    const t = options.timing ?? {};
    const ctx: MeshNodeContext = {
      self: this.self,
      provider,
      maxFrameBytes: this.maxFrameBytes,
      chunkBytes,
      handshakeTimeoutMs: positiveInt(t.handshakeTimeoutMs, TRANSPORT_DEFAULTS.handshakeTimeoutMs, 'timing.handshakeTimeoutMs'),
      reconnectMinMs: positiveInt(t.reconnectMinMs, TRANSPORT_DEFAULTS.reconnectMinMs, 'timing.reconnectMinMs'),
      reconnectMaxMs: positiveInt(t.reconnectMaxMs, TRANSPORT_DEFAULTS.reconnectMaxMs, 'timing.reconnectMaxMs'),
      closeGraceMs: positiveInt(t.closeGraceMs, TRANSPORT_DEFAULTS.closeGraceMs, 'timing.closeGraceMs'),
      handlers: options.handlers,
      isSealed: () => this.sealed,
      isClosing: () => this.closing,
      descriptorGeneration: (nodeId) => this.descriptorGens.get(nodeId),
      peerGone: (mesh, peer) => {
        if (mesh !== this.nodes[0]!.mesh.name) return;
        const key = refKey(peer);
        this.budgets.get(key)?.close(() => new PeerUnavailableError(`peer ${peer.nodeId}#${peer.lifecycleGeneration} left the mesh (replaced or vanished)`));
        this.budgets.delete(key);
      },
      peerLeaving: (mesh, peer) => {
        if (mesh === this.nodes[0]!.mesh.name) options.handlers.onPeerLeaving?.(peer);
      },
      connectionLost: (mesh, peer, info) => {
        if (mesh === this.nodes[0]!.mesh.name) options.handlers.onConnectionLost?.(peer, info);
      },
      countProtocolError: () => void this.counters.protocolErrors++,
      countRefusedHello: () => void this.counters.refusedHellos++,
    };
    this.nodes = options.meshes.map((m) => {
      if (this.byName.has(m.name)) throw new TypeError(`mesh ${m.name} is configured twice`);
      const node = new MeshNode(m, ctx);
      this.byName.set(m.name, node);
      return node;
    });
  }

  start(): Promise<Record<string, string>> {
    if (this.closing) return Promise.reject(new TransportClosedError('start'));
    this.startPromise ??= (async () => {
      const endpoints: Record<string, string> = {};
      for (const node of this.nodes) endpoints[node.mesh.name] = await node.listen();
      if (this.closing) throw new TransportClosedError('start');
      this.started = true;
      for (const m of [...this.manual, ...this.dialed]) this.byName.get(m.mesh)!.registerManual(m.endpoint);
      if (this.lastSnapshot) this.updatePeers(this.lastSnapshot);
      return endpoints;
    })();
    return this.startPromise;
  }

  updatePeers(descriptors: readonly NodeDescriptor[]): void {
    if (this.closing) return;
    this.lastSnapshot = descriptors;
    this.descriptorGens.clear();
    for (const d of descriptors) {
      if (d.nodeId === this.self.nodeId) continue;
      this.descriptorGens.set(d.nodeId, Math.max(d.lifecycleGeneration, this.descriptorGens.get(d.nodeId) ?? -1));
    }
    if (!this.started) return;
    for (const node of this.nodes) {
      const targets = new Map<string, DescriptorTarget>();
      for (const d of descriptors) {
        const endpoint = d.endpoints[node.mesh.name];
        if (d.nodeId === this.self.nodeId || endpoint === undefined) continue;
        if (d.lifecycleGeneration !== this.descriptorGens.get(d.nodeId)) continue; // an older run still listed
        if (!this.provider.canDial(endpoint)) continue; // another transport kind: not reachable from here
        targets.set(d.nodeId, { ref: { nodeId: d.nodeId, lifecycleGeneration: d.lifecycleGeneration, applicationVersion: d.applicationVersion }, endpoint });
      }
      node.applyDescriptors(targets);
    }
  }

  registerManualPeer(mesh: string, endpoint: string): void {
    this.dialByHand('registerManualPeer', this.manual, mesh, endpoint);
  }

  connectEndpoint(mesh: string, endpoint: string): void {
    this.dialByHand('connectEndpoint', this.dialed, mesh, endpoint);
  }

  /** A manual peer and a component's endpoint are dialed alike; only the list they are kept in differs (§4). */
  private dialByHand(call: string, list: { mesh: string; endpoint: string }[], mesh: string, endpoint: string): void {
    const node = this.byName.get(mesh);
    if (!node) throw new TypeError(`${call}: unknown mesh ${mesh}; configured: ${[...this.byName.keys()].join(', ')}`);
    if (!this.provider.canDial(endpoint)) throw new TypeError(`${call}: ${endpoint} is not a ${this.provider.kind} endpoint`);
    if (list.some((m) => m.mesh === mesh && m.endpoint === endpoint)) return;
    list.push({ mesh, endpoint });
    if (this.started && !this.closing) node.registerManual(endpoint);
  }

  peerAt(mesh: string, endpoint: string): NodeRef | undefined {
    return this.byName.get(mesh)?.identityAt(endpoint);
  }

  hasManualPeers(): boolean {
    return this.manual.length > 0; // §4: registration, not connection status
  }

  peers(mesh?: string): PeerInfo[] {
    if (mesh !== undefined) return this.byName.get(mesh)?.table.snapshot() ?? [];
    return this.nodes.flatMap((n) => n.table.snapshot());
  }

  isReadyOnEveryMesh(peer: NodeRef): boolean {
    return this.nodes.every((n) => n.table.isReady(peer));
  }

  send(peer: NodeRef, message: RuntimeMessage): boolean {
    if (this.closing) return false;
    const conn = this.nodes[0]!.table.exchangeConnection(peer);
    if (!conn || conn.peerLeaving) return false; // a leaving peer reads nothing more: the caller re-routes
    if (typeof message?.t !== 'string') throw new TypeError('send: a runtime message is an object with a string "t"');
    // Encoded now: the caller may reuse the object; the wire sees the value at send time.
    const part = encodeMessage(message);
    if (batchFrameBytes(part.length, 1) > this.maxFrameBytes) {
      throw new RangeError(`send: message of ${part.length} bytes exceeds maxFrameBytes ${this.maxFrameBytes}; send it as a payload`);
    }
    conn.queueMessage(part, message);
    return true;
  }

  acquireBudget(peer: NodeRef, bytes: number, signal?: AbortSignal): Promise<BudgetLease> {
    if (this.closing) return Promise.reject(new TransportClosedError('acquireBudget'));
    return this.budgetFor(peer).acquire(bytes, signal);
  }

  tryAcquireBudget(peer: NodeRef, bytes: number): BudgetLease | undefined {
    return this.closing ? undefined : this.budgetFor(peer).tryAcquire(bytes);
  }

  private budgetFor(peer: NodeRef): PayloadBudget {
    const key = refKey(peer);
    let budget = this.budgets.get(key);
    if (!budget) this.budgets.set(key, (budget = new PayloadBudget(this.budgetBytes)));
    return budget;
  }

  async sendPayload(peer: NodeRef, payloadId: string, bytes: Buffer, lease: BudgetLease, signal?: AbortSignal): Promise<void> {
    if (this.closing) throw new TransportClosedError('sendPayload');
    const conn = this.nodes[0]!.table.exchangeConnection(peer);
    if (!conn) throw new PeerUnavailableError(`sendPayload: no Ready connection to ${peer.nodeId}#${peer.lifecycleGeneration} on mesh ${this.nodes[0]!.mesh.name}`);
    try {
      await conn.sendPayload(payloadId, bytes, signal);
    } catch (err) {
      // The target's refusal also ends the bytes' stay there; a lost connection or abort keeps the lease for a retry.
      if (err instanceof PayloadRejectedError) lease.release();
      throw err;
    }
    lease.release(); // intake acknowledged (§7: the source's budget is released by the target's intake)
  }

  /**
   * Closes the current connection to `peer` on every mesh, as a network fault would; the dialing side
   * reconnects with backoff while not sealed. Fault tests use it for §13 retransmission.
   */
  disconnect(peer: NodeRef): void {
    for (const node of this.nodes) node.table.exchangeConnection(peer)?.close(CloseCode.Disconnected, 'disconnected on request');
  }

  async quiesce(): Promise<void> {
    if (this.closing) return;
    await Promise.all(this.nodes.map((n) => n.quiesce()));
  }

  seal(): void {
    if (this.sealed || this.closing) return;
    this.sealed = true;
    for (const node of this.nodes) node.seal();
  }

  close(): Promise<void> {
    this.closePromise ??= (async () => {
      this.closing = true;
      const cancel = (what: string) => () => new TransportClosedError(what);
      // 1. pending waits and writes turn terminal once, with a clear error (§14 bounded teardown)
      for (const b of this.budgets.values()) b.close(cancel('acquireBudget'));
      this.budgets.clear();
      // 2. connections: flush accepted messages, cancel payloads, close links and observe their closing
      await Promise.all(this.nodes.map((n) => n.close(cancel('sendPayload'))));
      // 3. listeners (after a pending start() finished binding, so no listener is left behind)
      await this.startPromise?.catch(() => undefined);
      await this.provider.close();
    })();
    return this.closePromise;
  }

  diagnostics(): TransportDiagnostics {
    let open = 0;
    for (const n of this.nodes) open += n.connections.size;
    return { ...this.counters, openConnections: open };
  }
}
