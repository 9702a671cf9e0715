/**
 * The components a host coordinates together with its objects (§1.1): STREAM session endpoints, ClientServer
 * servers and clients, Classic fanout publishers and subscribers, Logical Multicast. Each one is a `HostComponent`
 * built from the `ComponentPorts` the host gives it (the router's `RouterDeps` is the pattern): the host calls the
 * hooks at the points the spec names — descriptor publication, §4 preflight, §15 admission (state changes), §14
 * drain and cleanup — and routes node-to-node messages whose `t` starts with `c.<name>.` to the component.
 */
import type { Clock } from '../clock';
import type { RuntimeLog } from '../logger';
import type { NodeDescriptor, NodeRef, Stores } from '../../stores/types';
import type { FrameworkRuntimeState } from '../../vocabulary';
import type { RuntimeMessage, Transport } from '../../transport/types';
import type { UnitEvent } from '../relocation/events';
import type { ObjectRef, SessionsApi } from '../context';
import type { Envelope } from '../envelope';
import type { ObjectKey } from '../keys';
import type { ExtensionRestorer, Hosted, Terminal } from '../objects';

/** Wire prefix of component messages: `c.<component name>.<message>` (one place for it). */
export const COMPONENT_MESSAGE_PREFIX = 'c.';

export const componentMessageType = (component: string, message: string): string => `${COMPONENT_MESSAGE_PREFIX}${component}.${message}`;

/** The component a message type belongs to, or undefined when it is not a component message. */
export function componentOf(type: string): string | undefined {
  if (!type.startsWith(COMPONENT_MESSAGE_PREFIX)) return undefined;
  const end = type.indexOf('.', COMPONENT_MESSAGE_PREFIX.length);
  return end < 0 ? undefined : type.slice(COMPONENT_MESSAGE_PREFIX.length, end);
}

/** What a component may use of its host. Read at each use: the generation is known once the host started. */
export interface ComponentPorts {
  readonly self: NodeRef;
  readonly nodeId: string;
  readonly clock: Clock;
  readonly logger: RuntimeLog;
  readonly stores: Stores;
  /** The host's lifecycle state now (§15 admission is decided from it). */
  state(): FrameworkRuntimeState;
  /** The latest descriptor snapshot (automatic discovery, §4 topology). */
  descriptors(): readonly NodeDescriptor[];
  /** One runtime message to a peer, ordered per peer; false when no Ready connection exists. */
  send(peer: NodeRef, message: RuntimeMessage): boolean;
  /** The peer with exactly this RID and generation is Ready on the primary mesh. */
  isReady(peer: NodeRef): boolean;
  /** The transport, for components that bind listeners of their own or read peer tables. */
  transport(): Transport | undefined;
  /** Per-unit relocation events of this host (S0–S4 on the source, S2/S3 on the target). */
  onUnitEvent(listener: (event: UnitEvent) => void): () => void;
  /**
   * Ask the host to republish its descriptor (a component's published fields changed). Resolves once it was written
   * (or could not be: that is logged; it never rejects), so a component can tell its caller "published".
   */
  republish(): Promise<void>;
  /**
   * An application message already encoded with runtime/codec.ts, to an object through the router (owner route,
   * relocation hold and relay, Message Follow), like `host.send`. The component decided admission (§15).
   */
  sendToObject(to: ObjectRef, body: Uint8Array): void;
  /** What a component may attach to the objects hosted here (STREAM: bindings that move with their Actor). */
  readonly hostedObjects: ObjectHooks;
  /**
   * A component envelope (STREAM session envelope, `ses`) to an object wherever it lives, routed like any message
   * (per-sender order, hold, relay, Message Follow), addressed to ObjectGeneration `gen` (0 = resolve it). With
   * `timeoutMs` it is a request whose promise ends exactly once.
   */
  sessionEnvelope(to: ObjectKey, body: Uint8Array, gen: number, timeoutMs?: number): Promise<unknown> | undefined;
}

/** The Object Server hooks a component uses: its objects' turns, replies and state that moves with them. */
export interface ObjectHooks {
  get(key: ObjectKey): Hosted | undefined;
  /** The terminal of a request envelope this component handled in an object's turn. */
  reply(env: Envelope, terminal: Terminal): void;
  /** Restores this component's ObjectExtension of an object that arrived in a unit payload. */
  registerExtension(name: string, restore: ExtensionRestorer): void;
  /** STREAM: runs `env.ses` envelopes in the object's turn, and is what `ctx.sessions` is. */
  setSessionHandler(handler: (obj: Hosted, env: Envelope) => unknown, api: (hosted: Hosted) => SessionsApi): void;
}

export interface HostComponent {
  /** Wire name: `c.<name>.*` messages and the descriptor's `components[name]` belong to this component. */
  readonly name: string;
  /** §3 Preparing: bind listeners before the first descriptor is written (a failure is a startup error). */
  start?(): Promise<void>;
  /** Plain JSON the host publishes as `descriptor.components[name]`; undefined publishes nothing. */
  describe?(): unknown;
  /** §4: manual topology registrations (registration, not connection): one text per registration. */
  manualTopology?(): readonly string[];
  /** §4 first row: accepted work to finish before the host fixes its inventory (bindings, placements). */
  settleAccepted?(): Promise<void>;
  /** The host entered `state` (§15 admission for this component changes with it). */
  onStateChange?(state: FrameworkRuntimeState): void;
  /** The descriptor snapshot changed (automatic discovery). */
  onDescriptors?(descriptors: readonly NodeDescriptor[]): void;
  /** A `c.<name>.*` message from a peer (the component validates its content). */
  onMessage?(from: NodeRef, message: RuntimeMessage): void;
  /** A peer's connection was lost or the peer left. */
  onPeerLost?(peer: NodeRef): void;
  /** A peer became Ready on the primary mesh (work waiting for its connection can go now). */
  onPeerReady?(peer: NodeRef): void;
  /**
   * The primary-mesh connection to `peer` closed (also for a Draining peer, whose record stays Draining): what was
   * sent over it and not answered may never be (`announced`: the peer said goodbye first, after reading everything).
   */
  onConnectionLost?(peer: NodeRef, info: { readonly announced: boolean }): void;
  /** §14 step 3: accepted work reaches its terminal; the signal aborts at the shutdown deadline. */
  drain?(signal: AbortSignal): Promise<void>;
  /** §14 step 5: release listeners, connections and records, in order. */
  close?(): Promise<void>;
  /** Past the deadline: release at once, without waiting on anything unbounded. */
  forceClose?(): void;
}

/** Builds a component from its host's ports (an entry of the host's component list). */
export type ComponentFactory = (ports: ComponentPorts) => HostComponent;
