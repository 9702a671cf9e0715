/**
 * A transport gate for deterministic orderings: the real transport of the stack (in-process or ws), except that the
 * runtime messages `hold` selects, once they arrived, wait until the test releases them (then they are handed to the
 * host in arrival order). Nothing is dropped or altered: a held reply is only late, as on a slow network.
 */
import { createTransport } from '../../transport';
import type { NodeRef } from '../../stores/types';
import type { RuntimeMessage, TransportFactory } from '../../transport/types';

export interface HeldInbound {
  readonly factory: TransportFactory;
  /** How many messages are held now. */
  readonly held: number;
  /** Hands every held message to the host, in arrival order, and stops holding. */
  release(): void;
}

export function heldInbound(hold: (message: RuntimeMessage) => boolean): HeldInbound {
  const held: { from: NodeRef; message: RuntimeMessage; deliver: (from: NodeRef, message: RuntimeMessage) => void }[] = [];
  let holding = true;
  return {
    factory: (options) =>
      createTransport({
        ...options,
        handlers: {
          ...options.handlers,
          onMessage: (from, message) => {
            if (holding && hold(message)) return void held.push({ from, message, deliver: options.handlers.onMessage });
            options.handlers.onMessage(from, message);
          },
        },
      }),
    get held() {
      return held.length;
    },
    release() {
      holding = false;
      for (const h of held.splice(0)) h.deliver(h.from, h.message);
    },
  };
}
