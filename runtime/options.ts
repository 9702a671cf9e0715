/**
 * createRuntime / relocate / shutdown options: defaults in one place (STYLE.md) and validation with zod.
 * Bad input throws an error naming the field and changes nothing.
 */
import { z } from 'zod';
import type { Stores } from '../stores/types';
import { advertisedEndpoint, isUnspecifiedHost } from '../transport/address';
import type { MeshConfig, TransportFactory } from '../transport/types';
import type { Clock } from './clock';
import type { ObjectDefinition } from './definitions';
import type { SessionsOptions } from './components/sessions';
import { ArgumentError, RelocationArgumentError } from './errors';
import { consoleLogger, loggerFromLogFn, type LogFn, type Logger } from './logger';
import { closestName, RelocationMode, type RelocationOptions } from '../vocabulary';

export const DEFAULT_TIMING = Object.freeze({
  /** Wait from the relay-ready reply until cutover arrives, then the target falls back to CAS (§9). @default 1000 */
  relocationCutoverWaitTimeoutMs: 1000,
  /** How long the old owner relays messages to the new one (§8 S1→S4). @default 10000 */
  messageFollowDurationMs: 10_000,
  /** How long the target retries its Location Store CAS before discarding the prepared unit (§11). @default 30000 */
  restoreValidityMs: 30_000,
  /** Owner lease of the descriptor; renewed about every third of it. @default 10000 */
  leaseMs: 10_000,
  /** How often the descriptor list is read for discovery and target selection. @default 250 */
  discoveryIntervalMs: 250,
  /** How long the Relocation Store keeps the terminal of a request that completed after relocation. @default 600000 */
  requestTerminalTtlMs: 600_000,
});
export type Timing = { -readonly [K in keyof typeof DEFAULT_TIMING]: number };

/** §2.1 and §14: both default to 30 s. */
export const DEFAULT_RELOCATION_DEADLINE_MS = 30_000;
export const DEFAULT_SHUTDOWN_DEADLINE_MS = 30_000;
/** Per peer connection (§7). @default 16 MiB */
export const DEFAULT_IN_FLIGHT_PAYLOAD_BUDGET_BYTES = 16 * 1024 * 1024;
/** Largest delay a JS timer can hold. */
const MAX_DELAY_MS = 2_147_483_647;

export type { LogFn, Logger } from './logger';

export interface RuntimeOptions {
  /** RID, stable across restarts. */
  nodeId: string;
  /** Non-negative safe integer. */
  applicationVersion: number;
  stores: Stores;
  /**
   * Meshes this host joins. With `listen: { host, port }` a mesh is a ws listener (port 0 = any); its descriptor
   * endpoint is `advertise` when given, else the listen address — an unspecified listen address (0.0.0.0, ::)
   * needs `advertise`. Without `listen`: the in-process transport (hosts of one process).
   * @default [{ name: 'main' }] (in-process)
   */
  meshes?: MeshConfig[];
  maintenanceWave?: string;
  /** @default 100000 */
  capacity?: number;
  /** @default 1 */
  weight?: number;
  types?: ObjectDefinition[];
  timing?: Partial<Timing>;
  /** @default 16 MiB */
  inFlightPayloadBudgetBytes?: number;
  /**
   * xstate inspection observer (a function or `{ next }`), e.g. `(await createInspector({ port: 0 })).inspect` from
   * `zlink/inspect`; passed to every machine actor of the host. Each event it receives carries the host's `nodeId`
   * (runtime/inspection.ts), so several hosts can share one observer.
   */
  inspect?: unknown;
  /** Time source; tests pass xstate's SimulatedClock. @default the system clock */
  clock?: Clock;
  /**
   * A pino-compatible logger (`debug/info/warn/error(obj, msg)`): pino, a pino child, `console`, … Every line
   * carries `nodeId` plus fields. Debug lines (per relocation unit) are built only when it reports debug enabled.
   * @default consoleLogger() — `[zlink <nodeId>] …` at level info (or `ZLINK_LOG_LEVEL`)
   */
  logger?: Logger;
  /**
   * @deprecated Use `logger`. Still honoured in this release (warnings and errors only, fields appended to the
   * message) and removed in the next one; it cannot be combined with `logger`.
   */
  log?: LogFn;
  /** Advanced: a transport other than the built-in ws / in-process ones. */
  transport?: TransportFactory;
  /**
   * STREAM session endpoint of this host (docs/concepts.md "STREAM sessions"): its own ws listener, published in
   * the descriptor, where `zlink/client` connects. Without it the host still hosts Actors sessions are bound to.
   * `listen: { host, port }` (port 0 = any), `advertise` (needed for 0.0.0.0 / ::), `authenticate(request)`,
   * `resumeWindowMs` (default 30000).
   */
  sessions?: SessionsOptions;
}

const positiveMs = z.number().finite().positive().max(MAX_DELAY_MS);
/** PEM text or its bytes (what https.createServer and tls.connect take). */
const keyMaterial = z.union([z.string(), z.instanceof(Buffer)], 'must be a PEM string or a Buffer');
const id = z.string().min(1).max(256);

const runtimeOptionsSchema = z.object({
  nodeId: id.regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits and _ . : - only'),
  applicationVersion: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  stores: z.custom<Stores>(
    (v) => typeof v === 'object' && v !== null && 'location' in v && 'descriptors' in v && 'relocation' in v,
    'must come from memoryStores() or redisStores()',
  ),
  meshes: z
    .array(
      z.object({
        name: id,
        listen: z.object({ host: z.string().min(1), port: z.number().int().min(0).max(65535) }).strict().optional(),
        advertise: z.string().optional(),
        sharedKey: z.union([z.string().min(1), z.instanceof(Buffer)]).optional(),
        tls: z
          .object({
            key: keyMaterial.optional(),
            cert: keyMaterial.optional(),
            ca: keyMaterial.optional(),
            rejectUnauthorized: z.boolean().optional(),
          })
          .strict()
          .optional(),
      }).strict(),
    )
    .min(1)
    .refine((m) => new Set(m.map((x) => x.name)).size === m.length, 'mesh names must be unique')
    .optional(),
  maintenanceWave: id.optional(),
  capacity: z.number().int().positive().optional(),
  weight: z.number().finite().positive().optional(),
  types: z
    .array(z.custom<ObjectDefinition>((v) => typeof v === 'object' && v !== null && typeof (v as { type?: unknown }).type === 'string', 'must come from defineActor() or defineSpot()'))
    .refine((t) => new Set(t.map((x) => x.type)).size === t.length, 'type names must be unique')
    .optional(),
  timing: z
    .object({
      relocationCutoverWaitTimeoutMs: positiveMs.optional(),
      messageFollowDurationMs: positiveMs.optional(),
      restoreValidityMs: positiveMs.optional(),
      leaseMs: positiveMs.min(30).optional(),
      discoveryIntervalMs: positiveMs.optional(),
      requestTerminalTtlMs: positiveMs.optional(),
    })
    .strict()
    .optional(),
  inFlightPayloadBudgetBytes: z.number().int().positive().optional(),
  inspect: z.unknown().optional(),
  clock: z.custom<Clock>((v) => typeof v === 'object' && v !== null && typeof (v as Clock).setTimeout === 'function').optional(),
  logger: z
    .custom<Logger>(
      (v) => typeof v === 'object' && v !== null && (['debug', 'info', 'warn', 'error'] as const).every((m) => typeof (v as Logger)[m] === 'function'),
      'must be a pino-compatible logger: an object with debug, info, warn and error methods taking (fields, message)',
    )
    .optional(),
  log: z.custom<LogFn>((v) => typeof v === 'function', 'must be a function (level, message, error?); deprecated: use logger').optional(),
  transport: z.custom<TransportFactory>((v) => typeof v === 'function').optional(),
  sessions: z
    .object({
      listen: z.object({ host: z.string().min(1), port: z.number().int().min(0).max(65535) }).strict(),
      advertise: z.string().optional(),
      authenticate: z.custom<SessionsOptions['authenticate']>((v) => typeof v === 'function', 'must be a function (request) => boolean | identity').optional(),
      resumeWindowMs: positiveMs.optional(),
    })
    .strict()
    .optional(),
});

const RUNTIME_OPTION_NAMES = Object.keys(runtimeOptionsSchema.shape);
const MESH_OPTION_NAMES = ['name', 'listen', 'advertise', 'sharedKey', 'tls'];
/** The TLS fields the ws transport implements (transport/ws/link.ts); anything else is refused, not passed through. */
const TLS_OPTION_NAMES = ['key', 'cert', 'ca', 'rejectUnauthorized'];
const SESSIONS_OPTION_NAMES = ['listen', 'advertise', 'authenticate', 'resumeWindowMs'];

export { closestName };

function unknownOption(path: readonly PropertyKey[], key: string, known: readonly string[] | undefined, where: string): ArgumentError {
  const suggestion = known ? closestName(key, known) : undefined;
  return new ArgumentError(
    [...path, key].join('.'),
    `is not ${where}${suggestion ? ` — did you mean '${suggestion}'?` : known ? ` (known: ${known.join(', ')})` : ''}`,
  );
}

/** Known keys of the nested objects checked strictly (for the "did you mean" of an unknown one). */
function knownKeysAt(path: readonly PropertyKey[]): readonly string[] | undefined {
  if (path.length === 2 && path[0] === 'meshes') return MESH_OPTION_NAMES;
  if (path.length === 3 && path[0] === 'meshes' && path[2] === 'listen') return ['host', 'port'];
  if (path.length === 3 && path[0] === 'meshes' && path[2] === 'tls') return TLS_OPTION_NAMES;
  if (path.length === 1 && path[0] === 'timing') return Object.keys(DEFAULT_TIMING);
  if (path.length === 1 && path[0] === 'sessions') return SESSIONS_OPTION_NAMES;
  if (path.length === 2 && path[0] === 'sessions' && path[1] === 'listen') return ['host', 'port'];
  return undefined;
}

/** The same listen / advertise rules for the STREAM session endpoint (its clients dial the published address). */
function checkSessionsAddress(sessions: SessionsOptions): void {
  const field = 'sessions.advertise';
  if (sessions.advertise !== undefined) {
    try {
      advertisedEndpoint(sessions.advertise, false, 1);
    } catch (error) {
      throw new ArgumentError(field, (error as Error).message);
    }
  } else if (isUnspecifiedHost(sessions.listen.host)) {
    throw new ArgumentError(
      field,
      `is required when sessions.listen.host is '${sessions.listen.host}': that unspecified address binds every interface but clients cannot dial it. ` +
        `Set advertise to the host:port clients reach this endpoint at (e.g. '10.0.0.5:${sessions.listen.port || 7200}')`,
    );
  }
}

/**
 * Listen / advertise / tls rules of ws meshes (transport/address.ts, transport/ws/link.ts): nothing is started when
 * one is broken. `tls.key` + `tls.cert` make the listener wss:// (one without the other would silently leave it
 * ws://); `tls.ca` / `tls.rejectUnauthorized` alone only say how wss:// peers are trusted (e.g. behind a
 * TLS-terminating proxy). A mesh without `listen` is in-process: it has no socket for tls to secure.
 */
function checkMeshAddresses(meshes: readonly MeshConfig[]): void {
  meshes.forEach((mesh, i) => {
    if (mesh.tls !== undefined) {
      if (!mesh.listen) throw new ArgumentError(`meshes.${i}.tls`, 'needs listen: { host, port } (a mesh without listen is in-process; there is no socket to secure)');
      const { key, cert } = mesh.tls;
      if ((key === undefined) !== (cert === undefined))
        throw new ArgumentError(
          `meshes.${i}.tls.${key === undefined ? 'key' : 'cert'}`,
          `is required with tls.${key === undefined ? 'cert' : 'key'}: the two together make the listener wss:// (one alone would leave it plain ws://)`,
        );
    }
    const field = `meshes.${i}.advertise`;
    if (mesh.advertise !== undefined) {
      if (!mesh.listen) throw new ArgumentError(field, 'needs listen: { host, port } (a mesh without listen is in-process and has no address to advertise)');
      const secure = mesh.tls?.key !== undefined && mesh.tls.cert !== undefined;
      try {
        advertisedEndpoint(mesh.advertise, secure, 1);
      } catch (error) {
        throw new ArgumentError(field, (error as Error).message);
      }
    } else if (mesh.listen && isUnspecifiedHost(mesh.listen.host)) {
      throw new ArgumentError(
        field,
        `is required when listen.host is '${mesh.listen.host}': that unspecified address binds every interface but peers cannot dial it. ` +
          `Set advertise to the host:port peers reach this node at (e.g. '10.0.0.5:${mesh.listen.port || 7100}')`,
      );
    }
  });
}

export interface ResolvedRuntimeOptions extends Omit<RuntimeOptions, 'timing' | 'meshes' | 'types' | 'logger' | 'log'> {
  /** `logger`, the deprecated `log` adapted, or the default console logger. */
  logger: Logger;
  meshes: MeshConfig[];
  types: ObjectDefinition[];
  timing: Timing;
  capacity: number;
  weight: number;
  inFlightPayloadBudgetBytes: number;
}

export function parseRuntimeOptions(options: unknown): ResolvedRuntimeOptions {
  if (typeof options !== 'object' || options === null) throw new ArgumentError('options', 'must be an object');
  // Unknown options are refused, not ignored: a misspelt one would otherwise silently keep its default.
  for (const key of Object.keys(options)) {
    if (!RUNTIME_OPTION_NAMES.includes(key)) throw unknownOption([], key, RUNTIME_OPTION_NAMES, 'a createRuntime option');
  }
  const parsed = runtimeOptionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    if (issue.code === 'unrecognized_keys') throw unknownOption(issue.path, issue.keys[0]!, knownKeysAt(issue.path), 'an option here');
    throw new ArgumentError(issue.path.length ? issue.path.join('.') : 'options', issue.message);
  }
  const o = options as RuntimeOptions;
  if (o.meshes) checkMeshAddresses(o.meshes);
  if (o.sessions) checkSessionsAddress(o.sessions);
  if (o.log !== undefined && o.logger !== undefined)
    throw new ArgumentError('log', 'is deprecated and cannot be combined with logger: pass only logger');
  const { log, logger, ...rest } = o;
  return {
    ...rest,
    logger: logger ?? (log ? loggerFromLogFn(log) : consoleLogger()),
    meshes: o.meshes ?? [{ name: 'main' }],
    types: o.types ?? [],
    timing: { ...DEFAULT_TIMING, ...(o.timing ?? {}) },
    capacity: o.capacity ?? 100_000,
    weight: o.weight ?? 1,
    inFlightPayloadBudgetBytes: o.inFlightPayloadBudgetBytes ?? DEFAULT_IN_FLIGHT_PAYLOAD_BUDGET_BYTES,
  };
}

export interface ParsedRelocationOptions {
  mode: RelocationMode;
  /** Effective target version (§2.1). */
  targetApplicationVersion: number;
  deadlineMs: number;
}

/** §2.1: argument errors are found before any state or admission change. */
export function parseRelocationOptions(options: unknown, sourceVersion: number): ParsedRelocationOptions {
  if (typeof options !== 'object' || options === null) throw new RelocationArgumentError('options', 'must be an object with a mode');
  const o = options as Partial<RelocationOptions> & Record<string, unknown>;
  if (o.mode !== RelocationMode.PlannedMaintenance && o.mode !== RelocationMode.RollingUpdate)
    throw new RelocationArgumentError('mode', `must be RelocationMode.PlannedMaintenance (0) or RelocationMode.RollingUpdate (1); got ${String(o.mode)}`);
  if (o.deadlineMs !== undefined && (typeof o.deadlineMs !== 'number' || !Number.isFinite(o.deadlineMs) || o.deadlineMs <= 0 || o.deadlineMs > MAX_DELAY_MS))
    throw new RelocationArgumentError('deadlineMs', `must be a number of milliseconds greater than 0 (at most ${MAX_DELAY_MS}); got ${String(o.deadlineMs)}`);
  const deadlineMs = o.deadlineMs ?? DEFAULT_RELOCATION_DEADLINE_MS;
  if (o.mode === RelocationMode.PlannedMaintenance) {
    if (o.targetApplicationVersion !== undefined)
      throw new RelocationArgumentError('targetApplicationVersion', 'must be omitted for PlannedMaintenance (its target is the source version)');
    return { mode: o.mode, targetApplicationVersion: sourceVersion, deadlineMs };
  }
  const v = o.targetApplicationVersion;
  if (v === undefined) throw new RelocationArgumentError('targetApplicationVersion', 'is required for RollingUpdate');
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw new RelocationArgumentError('targetApplicationVersion', `must be a non-negative safe integer; got ${String(v)}`);
  if (v <= sourceVersion)
    throw new RelocationArgumentError('targetApplicationVersion', `must be greater than the source version ${sourceVersion} for RollingUpdate; got ${v}`);
  return { mode: o.mode, targetApplicationVersion: v, deadlineMs };
}

export function parseShutdownOptions(opts: unknown): { deadlineMs: number; signal?: AbortSignal } {
  if (opts === undefined) return { deadlineMs: DEFAULT_SHUTDOWN_DEADLINE_MS };
  if (typeof opts !== 'object' || opts === null) throw new ArgumentError('options', 'must be an object');
  const o = opts as { deadlineMs?: unknown; signal?: unknown };
  if (o.deadlineMs !== undefined && (typeof o.deadlineMs !== 'number' || !Number.isFinite(o.deadlineMs) || o.deadlineMs <= 0 || o.deadlineMs > MAX_DELAY_MS))
    throw new ArgumentError('deadlineMs', `must be a number of milliseconds greater than 0; got ${String(o.deadlineMs)}`);
  checkSignal(o.signal);
  return { deadlineMs: (o.deadlineMs as number | undefined) ?? DEFAULT_SHUTDOWN_DEADLINE_MS, signal: o.signal as AbortSignal | undefined };
}

export function checkSignal(signal: unknown, field = 'signal'): AbortSignal | undefined {
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new ArgumentError(field, 'must be an AbortSignal');
  return signal as AbortSignal | undefined;
}
