/**
 * Guarded writes (§1.1, DESIGN.md "A write whose reply is lost is never guessed"). Each attempt of a write sends
 * a fresh random token with its opId. When the reply is lost (timeout, dropped connection) the resolver fences
 * (opKey, token) and learns in the same step whether the write applied: either the op key holds the recorded
 * result, or the fence now guarantees that attempt never applies, even if the server runs it later. A fenced
 * attempt is retried with a new token; a resolver that cannot reach Redis in its bound gives up with
 * StoreUnavailableError(outcomeUnknown = true).
 */
import { randomUUID } from 'node:crypto';
import { ReplyError } from 'ioredis';
import { StoreUnavailableError } from '../types';
import { describe, rejected, type RedisClient } from './client';

export const FENCED = 'FENCED';

/**
 * Runs the entries of one hash slot (opKeys[i] guards entry i). `send(indices, token)` issues ONE script call
 * for the listed entries and returns one reply per entry. Returns each entry's final reply (never FENCED).
 */
export async function guarded(
  client: RedisClient,
  what: string,
  opTtlMs: number,
  opKeys: readonly string[],
  send: (indices: readonly number[], token: string) => Promise<unknown>,
): Promise<string[]> {
  const replies: (string | undefined)[] = new Array(opKeys.length);
  let pending = opKeys.map((_, index) => index);
  let last: unknown;
  for (let attempt = 0; attempt < client.settings.attempts && pending.length > 0; attempt++) {
    if (attempt > 0) await client.backoff(attempt);
    try {
      await client.ready();
    } catch (error) {
      last = error; // nothing was sent: not applied, try again
      continue;
    }
    // One token per attempt, shared by its entries: fences are per op key, so (op key, token) still names exactly
    // one attempt of one entry, and a call of 128 entries makes one UUID instead of 128.
    const token = randomUUID();
    let reply: unknown;
    try {
      reply = await send(pending, token);
    } catch (error) {
      if (error instanceof ReplyError) throw rejected(what, error as Error);
      reply = await resolve(client, what, opTtlMs, pending.map((index) => opKeys[index]!), token, error);
    }
    const batch = asReplies(reply, pending.length);
    pending.forEach((index, n) => {
      if (batch[n] !== FENCED) replies[index] = batch[n];
    });
    pending = pending.filter((index) => replies[index] === undefined);
    last = undefined;
  }
  if (pending.length > 0)
    throw new StoreUnavailableError(
      `${what}: not applied after ${client.settings.attempts} attempts (each attempt was fenced or never sent; safe to retry): ${describe(last)}`,
      false,
      { cause: last },
    );
  return replies as string[];
}

/** Fences every lost attempt and reads what happened; retried with backoff up to the attempt bound. */
async function resolve(
  client: RedisClient,
  what: string,
  opTtlMs: number,
  opKeys: readonly string[],
  token: string,
  lost: unknown,
): Promise<unknown> {
  let last: unknown = lost;
  for (let attempt = 1; attempt <= client.settings.attempts; attempt++) {
    await client.backoff(attempt);
    try {
      await client.ready();
      return await client.script('opFence', opKeys, [opTtlMs, ...opKeys.map(() => token)]);
    } catch (error) {
      last = error;
    }
  }
  throw new StoreUnavailableError(
    `${what}: reply lost and the outcome could not be resolved within ${client.settings.attempts} attempts: ${describe(last)}`,
    true,
    { cause: last },
  );
}

function asReplies(reply: unknown, count: number): string[] {
  const replies = Array.isArray(reply) ? reply : [reply];
  if (replies.length !== count || !replies.every((item) => typeof item === 'string'))
    throw new TypeError(`unexpected script reply: ${JSON.stringify(reply)}`);
  return replies;
}
