/**
 * Application object definitions (API.md "Application objects"): defineActor, defineSpot and the three
 * relocation policies of §9 (PreserveStateWith, RecreateOnRelocation, DisableRelocation).
 */
import { z } from 'zod';
import { ArgumentError } from './errors';
import type { ObjectContext, SessionEvent, SpotContext } from './context';

export type RelocationPolicy<S> =
  | {
      readonly kind: 'preserve';
      readonly capture: (state: S) => Uint8Array;
      readonly restore: (bytes: Buffer) => S;
      /** Names the adapter's format; source and target must agree (§5 order 3). @default 'default' */
      readonly adapter: string;
    }
  | { readonly kind: 'recreate' }
  | { readonly kind: 'disable' };

/** §9 PreserveStateWith: the bytes the adapter returns move; the application owns their format and migration. */
export function preserveState<S>(adapter: {
  capture: (state: S) => Uint8Array;
  restore: (bytes: Buffer) => S;
  adapter?: string;
}): RelocationPolicy<S> {
  if (typeof adapter?.capture !== 'function') throw new ArgumentError('capture', 'must be a function (state) => bytes');
  if (typeof adapter.restore !== 'function') throw new ArgumentError('restore', 'must be a function (bytes) => state');
  if (adapter.adapter !== undefined && (typeof adapter.adapter !== 'string' || adapter.adapter.length === 0))
    throw new ArgumentError('adapter', 'must be a non-empty string');
  return { kind: 'preserve', capture: adapter.capture, restore: adapter.restore, adapter: adapter.adapter ?? 'default' };
}

/** §9 RecreateOnRelocation: the target factory runs again with the same id; unfinished Framework work moves. */
export function recreateOnRelocation<S>(): RelocationPolicy<S> {
  return { kind: 'recreate' };
}

/** §9 DisableRelocation: while such an object remains, Relocate ends Blocked/RelocationDisabled. */
export function disableRelocation<S>(): RelocationPolicy<S> {
  return { kind: 'disable' };
}

export type TimerSpec = { dueMs: number; periodMs?: number };

export interface ActorDefinition<S = unknown> {
  readonly kind: 'actor';
  readonly type: string;
  readonly relocation: RelocationPolicy<S>;
  readonly create: (id: string) => S;
  readonly receive: (state: S, message: any, ctx: ObjectContext<S>) => unknown;
  readonly onTimer?: (state: S, name: string, ctx: ObjectContext<S>) => unknown;
  /**
   * STREAM sessions (docs/concepts.md "STREAM sessions"): called in the Actor's turn when a client binds
   * ('open' — throw to refuse the binding), for each client frame in order ('frame'), and once when the session
   * ends ('closed'). An Actor type without it refuses every binding.
   */
  readonly onSession?: (state: S, event: SessionEvent, ctx: ObjectContext<S>) => unknown;
}

export type ClosingReason = 'RelocationOut' | 'HostShutdown' | 'Closed';
export type ReadyCompletion = 'Relocated' | 'Continued';

export interface SpotDefinition<S = unknown> {
  readonly kind: 'user' | 'instance';
  readonly type: string;
  /** User Spots only. @default 'SpotWide' */
  readonly executionMode: 'SpotWide' | 'PerActor';
  /** 'ApplicationSignaled' is for SpotWide User Spots only (docs/options.md). @default 'Immediate' */
  readonly readiness: 'Immediate' | 'ApplicationSignaled';
  readonly relocation: RelocationPolicy<S>;
  readonly create: (spotId: string) => S;
  readonly receive: (state: S, message: any, ctx: SpotContext<S>) => unknown;
  readonly onTimer?: (state: S, name: string, ctx: SpotContext<S>) => unknown;
  /** Asked in the Spot's turn before an Actor joins; throw to refuse the join. */
  readonly onActorJoin?: (state: S, actorId: string, ctx: SpotContext<S>) => unknown;
  /** After the membership is recorded. */
  readonly onJoinedActor?: (state: S, actorId: string, ctx: SpotContext<S>) => unknown;
  /** After an Actor left. */
  readonly onLeaveActor?: (state: S, actorId: string, ctx: SpotContext<S>) => unknown;
  /** §10.5, §14 step 4. `ctx.signal` aborts when the shutdown deadline ends. */
  readonly onClosing?: (state: S, reason: ClosingReason, ctx: SpotContext<S>) => unknown;
  /** §7, §10.5: ApplicationSignaled spots only. */
  readonly onRelocationReadyCompleted?: (state: S, outcome: ReadyCompletion, ctx: SpotContext<S>) => unknown;
}

export type ObjectDefinition = ActorDefinition<any> | SpotDefinition<any>;

const typeName = z.string().min(1).max(256).regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits and _ . : - only');
const fn = z.custom<(...args: unknown[]) => unknown>((v) => typeof v === 'function', 'must be a function');
const optionalFn = fn.optional();
const policy = z.custom<RelocationPolicy<unknown>>(
  (v) => typeof v === 'object' && v !== null && ['preserve', 'recreate', 'disable'].includes((v as { kind?: string }).kind ?? ''),
  'must come from preserveState(), recreateOnRelocation() or disableRelocation()',
);

const actorSchema = z.object({
  type: typeName,
  relocation: policy,
  create: fn,
  receive: fn,
  onTimer: optionalFn,
  onSession: optionalFn,
});

const spotSchema = z
  .object({
    type: typeName,
    kind: z.enum(['user', 'instance']),
    executionMode: z.enum(['SpotWide', 'PerActor']).optional(),
    readiness: z.enum(['Immediate', 'ApplicationSignaled']).optional(),
    relocation: policy,
    create: fn,
    receive: fn,
    onTimer: optionalFn,
    onActorJoin: optionalFn,
    onJoinedActor: optionalFn,
    onLeaveActor: optionalFn,
    onClosing: optionalFn,
    onRelocationReadyCompleted: optionalFn,
  })
  .superRefine((v, ctx) => {
    if (v.kind === 'instance' && v.executionMode !== undefined)
      ctx.addIssue({ code: 'custom', path: ['executionMode'], message: 'Instance Spots have no execution mode (they hold no Actors)' });
    if (v.readiness === 'ApplicationSignaled' && (v.kind !== 'user' || (v.executionMode ?? 'SpotWide') !== 'SpotWide'))
      ctx.addIssue({ code: 'custom', path: ['readiness'], message: "'ApplicationSignaled' is for SpotWide User Spots only (docs/options.md)" });
  });

/** Throws ArgumentError naming the first offending field. */
export function parseOrThrow<T>(schema: z.ZodType<T>, value: unknown, prefix: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const path = issue.path.length ? issue.path.join('.') : '';
  throw new ArgumentError(path ? `${prefix}.${path}` : prefix, issue.message);
}

export function defineActor<S>(definition: Omit<ActorDefinition<S>, 'kind'>): ActorDefinition<S> {
  parseOrThrow(actorSchema, definition, 'defineActor');
  return Object.freeze({ ...definition, kind: 'actor' as const });
}

export function defineSpot<S>(
  definition: Omit<SpotDefinition<S>, 'executionMode' | 'readiness'> & {
    executionMode?: 'SpotWide' | 'PerActor';
    readiness?: 'Immediate' | 'ApplicationSignaled';
  },
): SpotDefinition<S> {
  parseOrThrow(spotSchema, definition, 'defineSpot');
  return Object.freeze({
    ...definition,
    executionMode: definition.kind === 'user' ? (definition.executionMode ?? 'SpotWide') : 'SpotWide',
    readiness: definition.readiness ?? 'Immediate',
  });
}
