import type { NodeRef } from '../stores/types';
import type { ObjectKey } from './keys';

/**
 * One application message as it travels (§12): its operation identity and the ObjectGeneration it was
 * addressed to are kept through holds, relays and Message Follow, so it is processed at most once and never
 * by a re-created object of the same id.
 */
export interface Envelope {
  /** Operation identity (node:crypto randomUUID). */
  readonly id: string;
  readonly to: ObjectKey;
  /** ObjectGeneration the sender resolved; 0 = not yet known (first message to an Instance Spot). */
  readonly gen: number;
  /** The message encoded at the call (runtime/codec.ts); the receiver decodes it at the start of its turn. */
  readonly body: Uint8Array;
  /** Node that accepted the call; replies go here. */
  readonly from: NodeRef;
  /** Present for requests: the caller waits for exactly one terminal. */
  readonly req?: 1;
  /** Instance Spot type, when the message may create the Spot (§10.4: only by a first message). */
  readonly place?: string;
  /** Set on a request that moved inside a relocation unit (saved work or relay): its terminal is recorded (§9). */
  readonly moved?: 1;
  /** Send order at the accepting node; keeps one sender's order through a re-route (router.onBounce). */
  readonly seq?: number;
  /** Hops through Message Follow / bounce re-routing; bounded so a stale route cannot loop. */
  readonly hops?: number;
  /**
   * Instance Spot Close (§12, runtime/spot-close): a request with no body for the owner itself, not the handler.
   * Routed like a request, but never followed, staged or used to place: where relocation came first it ends `moving`.
   */
  readonly close?: 1;
  /** STREAM: the body is a session envelope (runtime/components/sessions), handled beside `receive`, not by it. */
  readonly ses?: 1;
}

/**
 * A loop guard for Message Follow chains and redirects, not the convergence rule: a bounced sender waits for the
 * owner record by time (restoreValidityMs, §11), and each wait costs no hop.
 */
export const MAX_HOPS = 32;

/** Upper bound of an envelope's encoded size (frame splitting of relay batches; no encoding needed). */
export function envelopeWireBytes(env: Envelope): number {
  return env.body.length + Buffer.byteLength(env.id) + Buffer.byteLength(env.to) * 2 + Buffer.byteLength(env.from.nodeId) + (env.place?.length ?? 0) * 3 + 128;
}
