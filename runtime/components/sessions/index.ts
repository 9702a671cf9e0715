/**
 * STREAM sessions (DESIGN.md "Components", §12, §15 STREAM row): the host component named `sessions`.
 *
 * Every host runs the Actor side (bindings.ts): an Actor anywhere may have sessions bound to it, and its bindings
 * move with it. A host given `sessions: { listen }` also runs a session endpoint (listener.ts) and is the session
 * owner (owner.ts) of the clients connected to it; its endpoint is published in its descriptor
 * (`components.sessions.endpoint`), where clients told to move find the other Serving hosts' endpoints.
 */
import { TRANSPORT_DEFAULTS } from '../../../transport/constants';
import type { NodeDescriptor, NodeRef } from '../../../stores/types';
import type { RuntimeMessage } from '../../../transport/types';
import { FrameworkRuntimeState } from '../../../vocabulary';
import { sameNode } from '../../keys';
import type { ResolvedRuntimeOptions } from '../../options';
import type { ComponentPorts, HostComponent } from '../component';
import { ActorSessions } from './bindings';
import { SessionListener, type SessionAuthenticate } from './listener';
import { SessionOwner } from './owner';
import { parseSessionNodeMessage, SESSIONS } from './protocol';

export { SESSIONS } from './protocol';
export type { SessionAuthenticate, SessionAuthRequest } from './listener';

/** `createRuntime({ sessions })`: this host's STREAM session endpoint. */
export interface SessionsOptions {
  /** Where the endpoint's ws listener binds (port 0 = any). */
  listen: { host: string; port: number };
  /**
   * The address clients reach the endpoint at, published in the descriptor instead of the listen address:
   * `host:port`, `host` alone (the bound port) or a `ws://` / `wss://` URL. Needed when `listen.host` is an
   * unspecified address (0.0.0.0, ::). @default the listen address
   */
  advertise?: string;
  /** Admits a client connection: true, false, or the session's identity (see SessionAuthenticate). @default admit every client */
  authenticate?: SessionAuthenticate;
  /** How long an Actor keeps a session whose client left this endpoint, for the client to resume elsewhere. @default 30000 */
  resumeWindowMs?: number;
}

/** @default 30 s */
export const DEFAULT_RESUME_WINDOW_MS = 30_000;
/** Added to the time a unit may take to reach its owner commit (§11) to make the seal timeout. */
export const SEAL_MARGIN_MS = 5000;
/** Session envelope requests (open, resume, frames) time out after this; a frame is then sent again. */
const REQUEST_TIMEOUT_MS = 30_000;

/** For tests and diagnostics: what the component holds now. */
export interface SessionsStats {
  readonly endpoint: string | undefined;
  /** Sessions owned here (clients connected to this endpoint). */
  readonly sessions: number;
  readonly openConnections: number;
  /** Client connections accepted since start. */
  readonly acceptedConnections: number;
  /** Writes queued on client connections whose completion was not observed yet. */
  readonly pendingWrites: number;
  /** Sessions bound to Actors hosted here. */
  readonly bindings: number;
}

export interface SessionsComponent extends HostComponent {
  readonly endpoint: string | undefined;
  stats(): SessionsStats;
}

export function createSessionsComponent(options: ResolvedRuntimeOptions, ports: ComponentPorts): SessionsComponent {
  const objects = ports.hostedObjects;
  const config = options.sessions;
  // §11: the target may retry its owner CAS for restoreValidityMs after the cutover wait; past that (and a margin
  // for the payload on its way) a sealed session's Actor is not coming back.
  const sealTimeoutMs = options.timing.restoreValidityMs + options.timing.relocationCutoverWaitTimeoutMs + SEAL_MARGIN_MS;

  let owner: SessionOwner | undefined;
  const toOwner = (peer: NodeRef, message: RuntimeMessage): boolean => {
    if (!sameNode(peer, ports.self)) return ports.send(peer, message);
    const parsed = parseSessionNodeMessage(message);
    if (!owner || !parsed) return false;
    owner.onNodeMessage(ports.self, parsed);
    return true;
  };

  const actors = new ActorSessions({
    get self() {
      return ports.self;
    },
    clock: ports.clock,
    logger: ports.logger,
    state: () => ports.state(),
    toOwner,
    reply: (env, terminal) => objects.reply(env, terminal),
    inTurn: (hosted, fn) => hosted.lane.push({ k: 'ctl', to: hosted.key, run: fn }),
    hosted: (key) => objects.get(key),
    onUnitEvent: (listener) => ports.onUnitEvent(listener),
    sealTimeoutMs,
  });
  objects.registerExtension(SESSIONS, actors.restore);
  objects.setSessionHandler(actors.onEnvelope, actors.api);

  let listener: SessionListener | undefined;
  if (config) {
    owner = new SessionOwner({
      get self() {
        return ports.self;
      },
      clock: ports.clock,
      logger: ports.logger,
      state: () => ports.state(),
      request: (actor, body, gen) => ports.sessionEnvelope(actor, body, gen, REQUEST_TIMEOUT_MS)!,
      post: (actor, body, gen) => void ports.sessionEnvelope(actor, body, gen),
      otherEndpoints: () => otherEndpoints(ports.descriptors(), ports.self),
      sealTimeoutMs,
      resumeWindowMs: config.resumeWindowMs ?? DEFAULT_RESUME_WINDOW_MS,
    });
    const sessionOwner = owner;
    listener = new SessionListener(config, (link) => sessionOwner.accept(link), ports.clock, ports.logger, TRANSPORT_DEFAULTS.maxFrameBytes);
  }

  return {
    name: SESSIONS,
    get endpoint() {
      return listener?.endpoint;
    },
    async start() {
      await listener?.start();
    },
    describe() {
      return listener?.endpoint ? { endpoint: listener.endpoint } : undefined;
    },
    async settleAccepted() {
      await owner?.settle();
    },
    onMessage(from, message) {
      const parsed = parseSessionNodeMessage(message);
      if (!parsed) return ports.logger.warn({ peer: from.nodeId, type: message.t }, 'invalid session message dropped');
      if (!owner) return ports.logger.debug({ peer: from.nodeId, type: message.t }, 'session message for a host without a session endpoint; dropped');
      owner.onNodeMessage(from, parsed);
    },
    onPeerLost(peer) {
      owner?.onPeerLost(peer);
      actors.onOwnerLost(peer, config?.resumeWindowMs ?? DEFAULT_RESUME_WINDOW_MS);
    },
    async drain(signal) {
      await owner?.drain(signal);
    },
    async close() {
      actors.close();
      owner?.close();
      await listener?.close();
    },
    forceClose() {
      actors.close();
      owner?.forceClose();
      listener?.forceClose();
    },
    stats() {
      return {
        endpoint: listener?.endpoint,
        sessions: owner?.sessionCount ?? 0,
        openConnections: listener?.openConnections ?? 0,
        acceptedConnections: listener?.accepted ?? 0,
        pendingWrites: listener?.pendingWrites ?? 0,
        bindings: actors.bindingCount,
      };
    },
  };
}

/** Session endpoints of the other Serving hosts, from the descriptor snapshot (automatic discovery). */
export function otherEndpoints(descriptors: readonly NodeDescriptor[], self: NodeRef): string[] {
  const out: string[] = [];
  for (const d of descriptors) {
    if (d.state !== FrameworkRuntimeState.Serving || sameNode(d, self)) continue;
    const endpoint = (d.components?.[SESSIONS] as { endpoint?: unknown } | undefined)?.endpoint;
    if (typeof endpoint === 'string' && endpoint.length > 0) out.push(endpoint);
  }
  return out;
}
