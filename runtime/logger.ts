/**
 * Logging: the `logger` option takes a pino-compatible object (`debug/info/warn/error(obj, msg)`); pino, a pino
 * child, `console` and most structured loggers fit. Every line the runtime writes carries `nodeId` plus fields.
 * Without one the host logs through `consoleLogger()`: one line per event, prefixed with the node id.
 *
 * Levels: info for startup (node id, generation, endpoints), peers admitted / lost, relocation start and end,
 * shutdown; warn and error for problems; debug for per-unit relocation detail, which is only built when the logger
 * says debug is enabled (`isLevelEnabled('debug')`, or its `level`).
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** A pino-compatible logger: fields first, then the message. */
export interface Logger {
  debug(obj: Record<string, unknown>, msg?: string): void;
  info(obj: Record<string, unknown>, msg?: string): void;
  warn(obj: Record<string, unknown>, msg?: string): void;
  error(obj: Record<string, unknown>, msg?: string): void;
  /** pino: whether lines of `level` are written. Read once, by createRuntime, for 'debug'. */
  isLevelEnabled?(level: string): boolean;
  /** pino: the current level name; used when `isLevelEnabled` is absent. */
  level?: string;
}

/**
 * The old `log` option (deprecated, removed in the next release): warnings and errors only.
 * `error` is the Error (or other value) that caused the line, when there is one.
 */
export type LogFn = (level: 'warn' | 'error', message: string, error?: unknown) => void;

const LEVELS: readonly (LogLevel | 'silent')[] = ['debug', 'info', 'warn', 'error', 'silent'];
const RANK: Record<LogLevel | 'silent', number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** Environment variable that sets the default console logger's level (debug | info | warn | error | silent). */
export const LOG_LEVEL_ENV = 'ZLINK_LOG_LEVEL';

export interface ConsoleLoggerOptions {
  /** Lowest level written. @default process.env.ZLINK_LOG_LEVEL, else 'info' */
  readonly level?: LogLevel | 'silent';
}

/**
 * The default logger: `[zlink <nodeId>] <message> key=value …` through console.debug/info/warn/error. An `err`
 * field is passed to the console as a separate argument, so its stack is printed.
 */
export function consoleLogger(options: ConsoleLoggerOptions = {}): Logger {
  const fromEnv = process.env[LOG_LEVEL_ENV] as LogLevel | 'silent' | undefined;
  const level = options.level ?? (fromEnv !== undefined && LEVELS.includes(fromEnv) ? fromEnv : 'info');
  if (!LEVELS.includes(level)) throw new TypeError(`consoleLogger: level must be one of ${LEVELS.join(', ')}; got ${String(level)}`);
  const min = RANK[level];
  const write = (lvl: LogLevel) => {
    if (RANK[lvl] < min) return () => undefined;
    // eslint-disable-next-line no-console
    const out = console[lvl];
    return (obj: Record<string, unknown>, msg?: string) => {
      const { nodeId, err, ...fields } = obj ?? {};
      const prefix = nodeId === undefined ? '[zlink]' : `[zlink ${String(nodeId)}]`;
      const line = `${prefix} ${msg ?? ''}${formatFields(fields)}`;
      if (err === undefined) out.call(console, line);
      else out.call(console, line, err);
    };
  };
  return {
    level,
    isLevelEnabled: (l: string) => RANK[l as LogLevel] !== undefined && RANK[l as LogLevel] >= min,
    debug: write('debug'),
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
  };
}

/** ` key=value` per field: strings without spaces as they are, everything else as JSON. */
export function formatFields(fields: Record<string, unknown>): string {
  let out = '';
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    out += ` ${key}=${formatValue(value)}`;
  }
  return out;
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value instanceof Error) return JSON.stringify(value.message);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Adapts the deprecated `log(level, message, error?)` option: warn and error lines, fields appended to the message. */
export function loggerFromLogFn(log: LogFn): Logger {
  const line =
    (level: 'warn' | 'error') =>
    (obj: Record<string, unknown>, msg?: string): void => {
      const { nodeId: _nodeId, err, ...fields } = obj ?? {};
      log(level, `${msg ?? ''}${formatFields(fields)}`, err);
    };
  return { level: 'warn', isLevelEnabled: (l) => l === 'warn' || l === 'error', debug: () => undefined, info: () => undefined, warn: line('warn'), error: line('error') };
}

function debugEnabled(logger: Logger): boolean {
  try {
    if (typeof logger.isLevelEnabled === 'function') return logger.isLevelEnabled('debug') === true;
    if (typeof logger.level === 'string') return logger.level === 'debug' || logger.level === 'trace';
  } catch {
    return false;
  }
  // A logger that cannot say (console, a plain object): it was given a debug method, so it gets debug lines.
  return true;
}

/** What the runtime's parts log through (HostLogger; tests pass a recorder). */
export interface RuntimeLog {
  readonly debugEnabled: boolean;
  debug(fields: Record<string, unknown>, msg: string): void;
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
}

/**
 * The host's logger: adds `nodeId` to every line, never throws into the runtime, and answers `debugEnabled`
 * (read once) so per-unit detail is built only when it will be written.
 */
export class HostLogger implements RuntimeLog {
  readonly debugEnabled: boolean;

  constructor(
    private readonly target: Logger,
    private readonly nodeId: string,
  ) {
    this.debugEnabled = debugEnabled(target);
  }

  debug(fields: Record<string, unknown>, msg: string): void {
    if (this.debugEnabled) this.write('debug', fields, msg);
  }

  info(fields: Record<string, unknown>, msg: string): void {
    this.write('info', fields, msg);
  }

  warn(fields: Record<string, unknown>, msg: string): void {
    this.write('warn', fields, msg);
  }

  error(fields: Record<string, unknown>, msg: string): void {
    this.write('error', fields, msg);
  }

  private write(level: LogLevel, fields: Record<string, unknown>, msg: string): void {
    try {
      this.target[level]({ nodeId: this.nodeId, ...fields }, msg);
    } catch {
      // A failing logger never stops the host.
    }
  }
}

/** Writes nothing (unit tests of the runtime's parts). */
export const silentLog: RuntimeLog = { debugEnabled: false, debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
