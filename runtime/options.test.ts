import { SimulatedClock } from 'xstate';
import {
  DEFAULT_IN_FLIGHT_PAYLOAD_BUDGET_BYTES,
  DEFAULT_RELOCATION_DEADLINE_MS,
  DEFAULT_SHUTDOWN_DEADLINE_MS,
  DEFAULT_TIMING,
  parseRelocationOptions,
  parseRuntimeOptions,
  parseShutdownOptions,
} from './options';
import { ArgumentError, RelocationArgumentError } from './errors';
import { RelocationMode } from '../vocabulary';
import type { Stores } from '../stores/types';

/** The thrown error's class and field (the call must throw). */
function thrown(f: () => unknown): { error: Error & { field: string } } {
  try {
    f();
  } catch (error) {
    return { error: error as Error & { field: string } };
  }
  throw new Error('expected a throw');
}

const SOURCE_VERSION = 3;
const PM = RelocationMode.PlannedMaintenance;
const RU = RelocationMode.RollingUpdate;

describe('parseRelocationOptions (§2.1)', () => {
  test('PlannedMaintenance: the effective target version is the source’s; default deadline 30000', () => {
    expect(parseRelocationOptions({ mode: PM }, SOURCE_VERSION)).toEqual({ mode: 0, targetApplicationVersion: 3, deadlineMs: 30_000 });
    expect(DEFAULT_RELOCATION_DEADLINE_MS).toBe(30_000);
  });

  test('RollingUpdate: the requested version; an explicit deadline is kept', () => {
    expect(parseRelocationOptions({ mode: RU, targetApplicationVersion: 4, deadlineMs: 1500 }, SOURCE_VERSION)).toEqual({
      mode: 1,
      targetApplicationVersion: 4,
      deadlineMs: 1500,
    });
    expect(parseRelocationOptions({ mode: RU, targetApplicationVersion: 10 }, SOURCE_VERSION).deadlineMs).toBe(30_000);
  });

  test.each([
    ['not an object', undefined, 'options'],
    ['null', null, 'options'],
    ['a number', 0, 'options'],
    ['no mode', {}, 'mode'],
    ['an unknown mode', { mode: 2 }, 'mode'],
    ['a mode given by name', { mode: 'RollingUpdate' }, 'mode'],
    ['PlannedMaintenance with a target version', { mode: PM, targetApplicationVersion: 3 }, 'targetApplicationVersion'],
    ['RollingUpdate without a target version', { mode: RU }, 'targetApplicationVersion'],
    ['RollingUpdate at the source version', { mode: RU, targetApplicationVersion: 3 }, 'targetApplicationVersion'],
    ['RollingUpdate below the source version', { mode: RU, targetApplicationVersion: 2 }, 'targetApplicationVersion'],
    ['RollingUpdate with a fractional version', { mode: RU, targetApplicationVersion: 4.5 }, 'targetApplicationVersion'],
    ['RollingUpdate with a string version', { mode: RU, targetApplicationVersion: '4' }, 'targetApplicationVersion'],
    ['a zero deadline', { mode: PM, deadlineMs: 0 }, 'deadlineMs'],
    ['a negative deadline', { mode: PM, deadlineMs: -1 }, 'deadlineMs'],
    ['a NaN deadline', { mode: PM, deadlineMs: NaN }, 'deadlineMs'],
    ['an infinite deadline', { mode: PM, deadlineMs: Infinity }, 'deadlineMs'],
    ['a deadline beyond a timer’s range', { mode: PM, deadlineMs: 2 ** 31 }, 'deadlineMs'],
    ['a string deadline', { mode: RU, targetApplicationVersion: 4, deadlineMs: '100' }, 'deadlineMs'],
  ])('%s → RelocationArgumentError naming %s', (_name, options, field) => {
    const { error } = thrown(() => parseRelocationOptions(options, SOURCE_VERSION));
    expect(error).toBeInstanceOf(RelocationArgumentError);
    expect(error.field).toBe(field);
    expect(error.message.startsWith(`${field}: `)).toBe(true);
  });

  test('the RollingUpdate version error says which source version it must exceed', () => {
    expect(() => parseRelocationOptions({ mode: RU, targetApplicationVersion: 3 }, 3)).toThrow(/greater than the source version 3/);
  });
});

describe('parseRuntimeOptions', () => {
  const stores = { provider: 'memory', location: {}, descriptors: {}, relocation: {} } as unknown as Stores;
  const base = { nodeId: 'node-1', applicationVersion: 3, stores };

  test('defaults: one in-process mesh, DEFAULT_TIMING, capacity 100000, weight 1, 16 MiB budget', () => {
    const o = parseRuntimeOptions(base);
    expect(o.meshes).toEqual([{ name: 'main' }]);
    expect(o.types).toEqual([]);
    expect(o.timing).toEqual(DEFAULT_TIMING);
    expect(o.timing).not.toBe(DEFAULT_TIMING); // a copy: DEFAULT_TIMING stays frozen and shared
    expect(o.capacity).toBe(100_000);
    expect(o.weight).toBe(1);
    expect(o.inFlightPayloadBudgetBytes).toBe(DEFAULT_IN_FLIGHT_PAYLOAD_BUDGET_BYTES);
    expect(DEFAULT_IN_FLIGHT_PAYLOAD_BUDGET_BYTES).toBe(16 * 1024 * 1024);
    expect(o.nodeId).toBe('node-1');
    expect(o.stores).toBe(stores);
  });

  test('DEFAULT_TIMING values and frozenness', () => {
    expect(DEFAULT_TIMING).toEqual({
      relocationCutoverWaitTimeoutMs: 1000,
      messageFollowDurationMs: 10_000,
      restoreValidityMs: 30_000,
      leaseMs: 10_000,
      discoveryIntervalMs: 250,
      requestTerminalTtlMs: 600_000,
    });
    expect(Object.isFrozen(DEFAULT_TIMING)).toBe(true);
  });

  test('a partial timing override keeps the other defaults; given values are kept', () => {
    const clock = new SimulatedClock();
    const o = parseRuntimeOptions({
      ...base,
      timing: { relocationCutoverWaitTimeoutMs: 50 },
      meshes: [{ name: 'a' }, { name: 'b', listen: { host: '127.0.0.1', port: 0 } }],
      capacity: 5,
      weight: 2.5,
      maintenanceWave: 'wave-1',
      inFlightPayloadBudgetBytes: 1024,
      clock,
    });
    expect(o.timing).toEqual({ ...DEFAULT_TIMING, relocationCutoverWaitTimeoutMs: 50 });
    expect(o.meshes.map((m) => m.name)).toEqual(['a', 'b']);
    expect(o.capacity).toBe(5);
    expect(o.weight).toBe(2.5);
    expect(o.inFlightPayloadBudgetBytes).toBe(1024);
    expect(o.clock).toBe(clock);
  });

  test.each([
    ['not an object', undefined, 'options'],
    ['null', null, 'options'],
    ['no nodeId', { ...base, nodeId: undefined }, 'nodeId'],
    ['an empty nodeId', { ...base, nodeId: '' }, 'nodeId'],
    ['a nodeId with a space', { ...base, nodeId: 'a b' }, 'nodeId'],
    ['a negative version', { ...base, applicationVersion: -1 }, 'applicationVersion'],
    ['a fractional version', { ...base, applicationVersion: 1.5 }, 'applicationVersion'],
    ['no stores', { ...base, stores: undefined }, 'stores'],
    ['stores of the wrong shape', { ...base, stores: { location: {} } }, 'stores'],
    ['an empty mesh list', { ...base, meshes: [] }, 'meshes'],
    ['a mesh without a name', { ...base, meshes: [{ name: '' }] }, 'meshes.0.name'],
    ['duplicate mesh names', { ...base, meshes: [{ name: 'm' }, { name: 'm' }] }, 'meshes'],
    ['a listen port out of range', { ...base, meshes: [{ name: 'm', listen: { host: 'h', port: 70000 } }] }, 'meshes.0.listen.port'],
    ['a zero capacity', { ...base, capacity: 0 }, 'capacity'],
    ['a zero weight', { ...base, weight: 0 }, 'weight'],
    ['a negative cutover wait', { ...base, timing: { relocationCutoverWaitTimeoutMs: -1 } }, 'timing.relocationCutoverWaitTimeoutMs'],
    ['a zero message follow duration', { ...base, timing: { messageFollowDurationMs: 0 } }, 'timing.messageFollowDurationMs'],
    ['a too short lease', { ...base, timing: { leaseMs: 10 } }, 'timing.leaseMs'],
    ['an infinite restore validity', { ...base, timing: { restoreValidityMs: Infinity } }, 'timing.restoreValidityMs'],
    ['an unknown timing key', { ...base, timing: { cutoverWait: 5 } }, 'timing.cutoverWait'],
    ['a fractional budget', { ...base, inFlightPayloadBudgetBytes: 1.5 }, 'inFlightPayloadBudgetBytes'],
    ['a clock without setTimeout', { ...base, clock: { now: () => 0 } }, 'clock'],
    ['a log that is not a function', { ...base, log: 'console' }, 'log'],
    ['duplicate type names', { ...base, types: [{ type: 't' }, { type: 't' }] }, 'types'],
    ['a type that is not a definition', { ...base, types: ['t'] }, 'types.0'],
  ])('%s → ArgumentError naming %s', (_name, options, field) => {
    const { error } = thrown(() => parseRuntimeOptions(options));
    expect(error).toBeInstanceOf(ArgumentError);
    expect(error.field).toBe(field);
    expect(error.message.startsWith(`${field}: `)).toBe(true);
  });

  test('an unknown timing key is named in the message', () => {
    expect(() => parseRuntimeOptions({ ...base, timing: { cutoverWait: 5 } })).toThrow(/cutoverWait/);
  });

  test.each([
    ['loger', 'logger'],
    ['Logger', 'logger'],
    ['mesh', 'meshes'],
    ['maintenanceWaves', 'maintenanceWave'],
    ['timings', 'timing'],
  ])('an unknown top-level option %s is refused, naming it and the closest known one (%s)', (key, closest) => {
    const { error } = thrown(() => parseRuntimeOptions({ ...base, [key]: 1 }));
    expect(error).toBeInstanceOf(ArgumentError);
    expect(error.field).toBe(key);
    expect(error.message).toBe(`${key}: is not a createRuntime option — did you mean '${closest}'?`);
  });

  test('an unknown option with no close match lists the known ones', () => {
    const { error } = thrown(() => parseRuntimeOptions({ ...base, frobnicate: true }));
    expect(error.field).toBe('frobnicate');
    expect(error.message).toMatch(/^frobnicate: is not a createRuntime option \(known: nodeId, applicationVersion, stores, meshes, .*logger/);
  });

  test('unknown keys inside a mesh or its listen address are refused with a suggestion', () => {
    const mesh = thrown(() => parseRuntimeOptions({ ...base, meshes: [{ name: 'm', listen: { host: '10.0.0.5', port: 1 }, advertize: 'x:1' }] }));
    expect(mesh.error.field).toBe('meshes.0.advertize');
    expect(mesh.error.message).toMatch(/did you mean 'advertise'\?/);
    const listen = thrown(() => parseRuntimeOptions({ ...base, meshes: [{ name: 'm', listen: { host: 'h', port: 1, prot: 1 } }] }));
    expect(listen.error.field).toBe('meshes.0.listen.prot');
    const timing = thrown(() => parseRuntimeOptions({ ...base, timing: { leasMs: 5 } }));
    expect(timing.error.message).toMatch(/did you mean 'leaseMs'\?/);
  });

  describe('meshes[].tls: only what the ws transport implements, and only where it takes effect', () => {
    const listen = { host: '127.0.0.1', port: 0 };
    const pem = '-----BEGIN TEST-----';
    const tlsMesh = (tls: unknown, withListen = true) => ({ ...base, meshes: [{ name: 'm', ...(withListen && { listen }), tls }] });

    test.each([
      ['key + cert (a wss:// listener), PEM strings', { key: pem, cert: pem }],
      ['key + cert + ca + rejectUnauthorized, Buffers', { key: Buffer.from(pem), cert: Buffer.from(pem), ca: Buffer.from(pem), rejectUnauthorized: false }],
      ['ca alone (trust for wss:// peers, e.g. behind a TLS-terminating proxy)', { ca: pem }],
    ])('%s is accepted', (_name, tls) => {
      expect(parseRuntimeOptions(tlsMesh(tls)).meshes[0]!.tls).toEqual(tls);
    });

    test.each([
      ['an option the transport does not implement (passed through before)', { key: pem, cert: pem, passphrase: 'x' }, 'meshes.0.tls.passphrase', /is not an option here \(known: key, cert, ca, rejectUnauthorized\)/],
      ['a misspelt field', { key: pem, cert: pem, rejectUnauthorised: false }, 'meshes.0.tls.rejectUnauthorised', /did you mean 'rejectUnauthorized'\?/],
      ['key without cert (would leave the listener plain ws://)', { key: pem }, 'meshes.0.tls.cert', /is required with tls\.key/],
      ['cert without key', { cert: pem, ca: pem }, 'meshes.0.tls.key', /is required with tls\.cert/],
      ['a key that is neither text nor bytes', { key: 1, cert: pem }, 'meshes.0.tls.key', /PEM string or a Buffer/],
      ['rejectUnauthorized as a string', { ca: pem, rejectUnauthorized: 'false' }, 'meshes.0.tls.rejectUnauthorized', /boolean/],
      ['tls that is not an object', 'on', 'meshes.0.tls', /object/],
    ])('%s → ArgumentError naming %s', (_name, tls, field, rule) => {
      const { error } = thrown(() => parseRuntimeOptions(tlsMesh(tls)));
      expect(error).toBeInstanceOf(ArgumentError);
      expect(error.field).toBe(field);
      expect(error.message).toMatch(rule);
    });

    test('tls on an in-process mesh (no listen) is refused: there is no socket to secure', () => {
      const { error } = thrown(() => parseRuntimeOptions(tlsMesh({ key: pem, cert: pem }, false)));
      expect(error.field).toBe('meshes.0.tls');
      expect(error.message).toMatch(/needs listen/);
    });
  });
});

describe('parseRuntimeOptions: logger', () => {
  const stores = { provider: 'memory', location: {}, descriptors: {}, relocation: {} } as unknown as Stores;
  const base = { nodeId: 'node-1', applicationVersion: 3, stores };

  test('a pino-compatible logger (or console) is taken as it is', () => {
    const logger = { debug: jest.fn(), info: jest.fn(), warn: jest.fn(), error: jest.fn() };
    expect(parseRuntimeOptions({ ...base, logger }).logger).toBe(logger);
    expect(parseRuntimeOptions({ ...base, logger: console }).logger).toBe(console);
  });

  test('without logger or log: the console logger (info and up)', () => {
    const previous = process.env.ZLINK_LOG_LEVEL;
    delete process.env.ZLINK_LOG_LEVEL;
    try {
      const logger = parseRuntimeOptions(base).logger;
      expect(logger.level).toBe('info');
      expect(logger.isLevelEnabled?.('debug')).toBe(false);
    } finally {
      if (previous !== undefined) process.env.ZLINK_LOG_LEVEL = previous;
    }
  });

  test('the deprecated log function still receives warnings and errors, fields appended to the message', () => {
    const lines: [string, string, unknown][] = [];
    const cause = new Error('boom');
    const logger = parseRuntimeOptions({ ...base, log: (level: 'warn' | 'error', message: string, error?: unknown) => void lines.push([level, message, error]) }).logger;
    logger.info({ nodeId: 'node-1' }, 'not forwarded');
    logger.debug({ nodeId: 'node-1' }, 'not forwarded');
    logger.warn({ nodeId: 'node-1', object: 'a:x' }, 'handler threw');
    logger.error({ nodeId: 'node-1', err: cause, unit: 'u 1' }, 'unit failed');
    expect(lines).toEqual([
      ['warn', 'handler threw object=a:x', undefined],
      ['error', 'unit failed unit="u 1"', cause],
    ]);
  });

  test.each([
    ['a logger without error()', { logger: { debug() {}, info() {}, warn() {} } }, 'logger'],
    ['a logger that is a function', { logger: () => undefined }, 'logger'],
    ['log and logger together', { logger: console, log: () => undefined }, 'log'],
  ])('%s → ArgumentError naming %s', (_name, patch, field) => {
    const { error } = thrown(() => parseRuntimeOptions({ ...base, ...patch }));
    expect(error).toBeInstanceOf(ArgumentError);
    expect(error.field).toBe(field);
  });
});

describe('parseRuntimeOptions: listen and advertise', () => {
  const stores = { provider: 'memory', location: {}, descriptors: {}, relocation: {} } as unknown as Stores;
  const base = { nodeId: 'node-1', applicationVersion: 3, stores };
  const mesh = (m: object) => ({ ...base, meshes: [{ name: 'main', ...m }] });

  test.each(['0.0.0.0', '::', '[::]', '0:0:0:0:0:0:0:0', '::0'])('listen on the unspecified address %s without advertise is refused, naming advertise', (host) => {
    const { error } = thrown(() => parseRuntimeOptions(mesh({ listen: { host, port: 7100 } })));
    expect(error).toBeInstanceOf(ArgumentError);
    expect(error.field).toBe('meshes.0.advertise');
    expect(error.message).toMatch(/is required when listen\.host is/);
    expect(error.message).toContain('7100');
  });

  test.each(['10.0.0.5:7100', 'ws://10.0.0.5:7100', 'wss://zlink-0.zlink.svc:443/mesh', 'node-a.internal', '[fd00::5]:7100'])(
    'listen on 0.0.0.0 with advertise %s is accepted',
    (advertise) => {
      expect(parseRuntimeOptions(mesh({ listen: { host: '0.0.0.0', port: 0 }, advertise })).meshes[0]!.advertise).toBe(advertise);
    },
  );

  test.each([
    ['an unspecified advertise address', { listen: { host: '0.0.0.0', port: 7100 }, advertise: '0.0.0.0:7100' }, /unspecified address/],
    ['an unspecified advertise URL', { listen: { host: '::', port: 7100 }, advertise: 'ws://[::]:7100' }, /unspecified address/],
    ['an http URL', { listen: { host: '0.0.0.0', port: 7100 }, advertise: 'http://10.0.0.5:7100' }, /ws:\/\/ or wss:\/\//],
    ['a port out of range', { listen: { host: '0.0.0.0', port: 7100 }, advertise: '10.0.0.5:70000' }, /port must be 1–65535/],
    ['an empty advertise', { listen: { host: '0.0.0.0', port: 7100 }, advertise: '' }, /empty/],
    ['advertise without listen (in-process mesh)', { advertise: '10.0.0.5:7100' }, /needs listen/],
  ])('%s is refused, naming advertise', (_name, m, rule) => {
    const { error } = thrown(() => parseRuntimeOptions(mesh(m)));
    expect(error).toBeInstanceOf(ArgumentError);
    expect(error.field).toBe('meshes.0.advertise');
    expect(error.message).toMatch(rule);
  });

  test('a specific listen address needs no advertise', () => {
    expect(parseRuntimeOptions(mesh({ listen: { host: '127.0.0.1', port: 0 } })).meshes[0]!.listen!.host).toBe('127.0.0.1');
  });
});

describe('parseShutdownOptions (§14)', () => {
  test('default deadline 30000; an explicit one and a signal are kept', () => {
    expect(parseShutdownOptions(undefined)).toEqual({ deadlineMs: 30_000 });
    expect(DEFAULT_SHUTDOWN_DEADLINE_MS).toBe(30_000);
    const signal = new AbortController().signal;
    expect(parseShutdownOptions({ deadlineMs: 5, signal })).toEqual({ deadlineMs: 5, signal });
    expect(parseShutdownOptions({}).deadlineMs).toBe(30_000);
  });

  test.each([
    ['null', null, 'options'],
    ['a zero deadline', { deadlineMs: 0 }, 'deadlineMs'],
    ['a string deadline', { deadlineMs: '5' }, 'deadlineMs'],
    ['a signal that is not an AbortSignal', { signal: {} }, 'signal'],
  ])('%s → ArgumentError naming %s', (_name, options, field) => {
    const { error } = thrown(() => parseShutdownOptions(options));
    expect(error).toBeInstanceOf(ArgumentError);
    expect(error.field).toBe(field);
  });
});
