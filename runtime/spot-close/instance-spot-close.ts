/**
 * Instance Spot Close (API.md `host.closeSpot`, §12): the owner's side. A close is a request routed to the Spot's
 * owner like any message (router.closeSpot); the owner decides it here, in one synchronous step:
 *
 *  - §12 order against relocation. On the owner, a relocation unit takes the Spot at its seal (S0); a close taken
 *    before that seal comes first. So: a unit that sealed (or the Spot already left: Message Follow, the target's
 *    temporary queue — the router answers those) → the close ends `moving` and is not resubmitted; a unit that has
 *    not sealed ends `closed` (it gives back budget, permit and the target's temporary queue, and the relocation goes
 *    on without it); a unit not started yet skips the Spot. Both outcomes are then fenced by the same authority
 *    generation in the Location Store: the close removes the owner record only while it still holds that generation,
 *    and the target's owner CAS expects it too — whichever applies first, the other cannot.
 *  - The queue ends: queued requests end `closed` (RequestError kind 'closed'); queued one-way messages are counted
 *    (`zlink.runtime.message.undeliverable`, cause `closed`) and logged once per origin; pending ticks and timers go.
 *    What arrives while the Spot closes ends the same way.
 *  - After the current handler: `onClosing(state, 'Closed', ctx)` runs as the Spot's next turn (a throw is logged; the
 *    Spot is closed anyway), then the owner record is removed (CAS on the authority generation), then the Instance
 *    Spot creation record of that ObjectGeneration, then the local instance. Every close request that joined ends
 *    with the one result. A later message to the id creates a new instance with a new ObjectGeneration (§10.4).
 */
import { randomUUID } from 'node:crypto';
import type { LocationStore, RelocationStore } from '../../stores/types';
import type { Clock } from '../clock';
import type { SpotDefinition } from '../definitions';
import type { Envelope } from '../envelope';
import type { ObjectKey } from '../keys';
import type { RuntimeLog } from '../logger';
import type { Hosted, ObjectServer, SpotCloseHandler, Terminal } from '../objects';

/** The relocation unit of an Instance Spot, as the close sees it (runtime/relocation/source/unit.ts). */
export interface ClosableUnit {
  /** The unit sealed the Spot: relocation came first. */
  readonly sealed: boolean;
  /** Close came first: the unit will not move the Spot; it waits for the close to finish. */
  closeFirst(): void;
  /** The close finished: the unit ends. */
  closeDone(): void;
}

export interface SpotClosePorts {
  readonly clock: Clock;
  readonly logger: RuntimeLog;
  readonly objects: Pick<ObjectServer, 'get' | 'forget' | 'inSpotTurn' | 'track'>;
  readonly location: Pick<LocationStore, 'remove'>;
  readonly relocationStore: Pick<RelocationStore, 'removeInstanceCreation'>;
  /** How long a Location Store that does not answer is retried (restoreValidityMs). */
  readonly storeRetryMs: number;
  /** Ends one message: a request's terminal goes to its caller; a one-way message is counted and logged. */
  terminal(env: Envelope, terminal: Terminal): void;
  /** The in-flight relocation unit of this Spot, if any (§12 order). */
  unitOf(key: ObjectKey): ClosableUnit | undefined;
  /** Drops this node's cached route for the key (the next message re-reads the Location Store). */
  invalidate(key: ObjectKey): void;
}

const CLOSED_ERROR = (id: string) => `Instance Spot '${id}' was closed before this message ran (closeSpot); a later message creates a new instance`;

/**
 * §12 relocation first: the terminal of a close that reached the Spot after a relocation sealed it (on its owner), or
 * after it left (Message Follow, the target's temporary queue: answered by the router).
 */
export function movingTerminal(spotId: string, to?: { readonly nodeId: string }): Terminal {
  return {
    ok: false,
    kind: 'moving',
    error:
      `Spot '${spotId}' is being moved${to ? ` to ${to.nodeId}` : ''} by a relocation that sealed it before this close: the close was not applied ` +
      'and is not resubmitted; call closeSpot again to close it at its new owner (docs/concepts.md "Closing an Instance Spot")',
  };
}

/** First and longest pause between two attempts of a record removal the store did not answer. */
const RETRY_FIRST_MS = 20;
const RETRY_MAX_MS = 1000;

export class InstanceSpotClose implements SpotCloseHandler {
  constructor(private readonly ports: SpotClosePorts) {}

  request(spot: Hosted, env: Envelope): void {
    const ports = this.ports;
    // (A close is addressed to a Spot key, so the only other kind here is a User Spot.)
    if (spot.def.kind !== 'instance')
      return ports.terminal(env, {
        ok: false,
        kind: 'not-found',
        error: `'${spot.id}' is a User Spot (type '${spot.def.type}'), not an Instance Spot: closeSpot closes Instance Spots only`,
      });
    // A second close joins the one in progress and ends with its result.
    if (spot.closing) return void spot.closing.push(env);
    // §12: relocation came first once its unit sealed the Spot (the ingress hold is set from the seal).
    const unit = ports.unitOf(spot.key);
    if (spot.hold || unit?.sealed) return ports.terminal(env, movingTerminal(spot.id));
    // Close first: a unit waiting for its seal ends `closed`; a unit not started yet skips the Spot (pool).
    unit?.closeFirst();
    spot.closing = [env];
    spot.timers.clear();
    // Queued work of the Spot ends now; the running handler, if any, finishes its turn.
    for (const item of spot.lane.take((i) => i.to === spot.key && i.k !== 'ctl')) if (item.k === 'msg') this.arrived(spot, item.env);
    void ports.objects.track(this.close(spot));
  }

  arrived(spot: Hosted, env: Envelope): void {
    this.ports.terminal(env, { ok: false, kind: 'closed', error: CLOSED_ERROR(spot.id) });
  }

  private async close(spot: Hosted): Promise<void> {
    const { objects, logger } = this.ports;
    const onClosing = (spot.def as SpotDefinition).onClosing;
    // The next turn of the Spot's lane: after the current handler, before anything else (the queue was taken).
    await objects
      .inSpotTurn(spot, () => onClosing?.(spot.state, 'Closed', spot.ctx))
      .catch((error: unknown) => logger.warn({ object: spot.key, err: error }, "onClosing(Closed) threw; the Spot is closed anyway"));
    const removed = await this.removeOwnerRecord(spot);
    if (objects.get(spot.key) === spot) objects.forget(spot.key);
    this.ports.invalidate(spot.key);
    if (removed.ok)
      await this.ports.relocationStore
        .removeInstanceCreation(spot.id, spot.objectGeneration)
        .catch((error: unknown) => logger.warn({ spot: spot.id, err: error }, 'Instance Spot creation record not removed from the Relocation Store'));
    // A relocation unit that waited for this close ends now: the Spot was not moved (§12).
    this.ports.unitOf(spot.key)?.closeDone();
    const waiting = spot.closing ?? [];
    const terminal: Terminal = removed.ok ? { ok: true } : { ok: false, kind: 'unavailable', error: removed.error };
    for (const env of waiting) this.ports.terminal(env, terminal);
    logger.debug({ spot: spot.id, objectGeneration: spot.objectGeneration, ok: removed.ok }, 'Instance Spot closed');
  }

  /**
   * The owner record goes only while this host still holds its authority generation (§12: the same fencing token a
   * relocation's owner CAS expects). A store without an answer is asked again with the same operation id (the store
   * resolves a lost reply, never guesses) for at most storeRetryMs.
   */
  private async removeOwnerRecord(spot: Hosted): Promise<{ ok: true } | { ok: false; error: string }> {
    const { clock, location, logger, storeRetryMs } = this.ports;
    const opId = randomUUID();
    const started = clock.now();
    let pause = RETRY_FIRST_MS;
    for (;;) {
      try {
        const result = await location.remove({ object: { kind: 'spot', id: spot.id }, opId, expectedAuthorityGeneration: spot.authorityGeneration });
        if (result.status !== 'conflict') return { ok: true }; // applied, or already gone
        const owner = result.record?.owner.nodeId;
        logger.error({ spot: spot.id, owner, authorityGeneration: spot.authorityGeneration }, 'closeSpot: the owner record changed authority; it was not removed');
        return { ok: false, error: `Spot '${spot.id}' was closed here, but its owner record now names ${owner ?? 'another authority'} and was not removed` };
      } catch (error) {
        if (clock.now() - started >= storeRetryMs) {
          logger.error({ spot: spot.id, err: error }, 'closeSpot: the owner record could not be removed (Location Store unavailable)');
          return {
            ok: false,
            error: `Spot '${spot.id}' was closed here, but its owner record could not be removed within ${storeRetryMs} ms: ${(error as Error).message}`,
          };
        }
        await new Promise<void>((resolve) => clock.setTimeout(resolve, pause));
        pause = Math.min(pause * 2, RETRY_MAX_MS);
      }
    }
  }
}
