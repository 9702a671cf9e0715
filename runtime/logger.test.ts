/**
 * Logging wiring: the `logger` option (pino-compatible), the default console logger, the deprecated `log` option,
 * and the lines a host writes — startup, peers, relocation start / end, shutdown at info; per-unit detail at debug,
 * built only when debug is enabled.
 */
import {
  consoleLogger,
  createRuntime,
  defineActor,
  memoryStores,
  preserveState,
  RelocationMode,
  type FrameworkRuntime,
  type Logger,
  type Stores,
} from '.';
import { HostLogger } from './logger';

interface Line {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: Record<string, unknown>;
  msg: string | undefined;
}

/** A pino-like recorder; `debug` says whether debug is enabled (pino's isLevelEnabled). */
function recorder(debug: boolean): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: Line['level']) => (obj: Record<string, unknown>, msg?: string) => void lines.push({ level, obj, msg });
  return { lines, isLevelEnabled: (l) => l !== 'debug' || debug, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const Counter = defineActor<{ n: number }>({
  type: 'Counter',
  relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) }),
  create: () => ({ n: 0 }),
  receive: (state) => ++state.n,
});
const TIMING = { discoveryIntervalMs: 20, messageFollowDurationMs: 100, relocationCutoverWaitTimeoutMs: 100, leaseMs: 3000 };

async function twoHosts(stores: Stores, a: Logger, b: Logger): Promise<[FrameworkRuntime, FrameworkRuntime]> {
  const base = { applicationVersion: 1, stores, types: [Counter], timing: TIMING };
  const source = await createRuntime({ ...base, nodeId: 'node-a', logger: a });
  const target = await createRuntime({ ...base, nodeId: 'node-b', logger: b });
  return [source, target];
}

const messages = (r: { lines: Line[] }, level?: Line['level']) => r.lines.filter((l) => !level || l.level === level).map((l) => l.msg);

describe('host log lines', () => {
  test('startup, peers, relocation start / end and shutdown at info, every line with the nodeId and fields', async () => {
    const stores = memoryStores();
    const a = recorder(false);
    const b = recorder(false);
    const [source, target] = await twoHosts(stores, a, b);
    try {
      await source.createActor('Counter', 'c-1');
      await source.createActor('Counter', 'c-2');
      await source.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 10_000 });
      await source.shutdown({ deadlineMs: 5000 });
      await new Promise((r) => setTimeout(r, 100)); // the target sees the source go
    } finally {
      await target.shutdown({ deadlineMs: 5000 });
      await stores.close();
    }
    expect(a.lines.every((l) => l.obj['nodeId'] === 'node-a')).toBe(true);
    expect(b.lines.every((l) => l.obj['nodeId'] === 'node-b')).toBe(true);

    const serving = a.lines.find((l) => l.msg === 'host serving')!;
    expect(serving.level).toBe('info');
    expect(serving.obj).toMatchObject({ nodeId: 'node-a', lifecycleGeneration: source.lifecycleGeneration, applicationVersion: 1 });
    expect(Object.keys(serving.obj['endpoints'] as object)).toEqual(['main']);

    expect(b.lines.find((l) => l.msg === 'peer admitted')?.obj).toMatchObject({ peer: 'node-a', peerGeneration: source.lifecycleGeneration, mesh: 'main' });
    expect(messages(b, 'info')).toEqual(expect.arrayContaining(['peer admitted', 'peer draining']));

    const started = a.lines.find((l) => l.msg === 'relocation started')!;
    expect(started.obj).toMatchObject({ mode: 'PlannedMaintenance', targetApplicationVersion: 1, deadlineMs: 10_000, objects: 2 });
    const ended = a.lines.find((l) => l.msg === 'relocation ended')!;
    expect(ended.level).toBe('info');
    expect(ended.obj).toMatchObject({ outcome: 'Relocated', reason: 'None', target: 'node-b', units: 2, objects: 2 });
    expect(typeof ended.obj['relocationMs']).toBe('number');

    expect(a.lines.find((l) => l.msg === 'shutdown started')?.obj).toMatchObject({ state: 'Relocated', deadlineMs: 5000 });
    expect(a.lines.find((l) => l.msg === 'host stopped')?.obj).toMatchObject({ outcome: 'Stopped', reason: 'None' });
    // In this order, with the peer admitted somewhere after startup (the target started later).
    expect(messages(a, 'info').filter((m) => m !== 'peer admitted')).toEqual(['host serving', 'relocation started', 'relocation ended', 'shutdown started', 'host stopped']);
    expect(messages(a, 'info').filter((m) => m === 'peer admitted')).toHaveLength(1);
    // debug disabled: not one debug call was made
    expect(messages(a, 'debug')).toEqual([]);
    expect(messages(b, 'debug')).toEqual([]);
    expect(messages(a, 'warn')).toEqual([]);
  });

  test('debug enabled: per-unit lines on both sides (side, unit, kind, state, point)', async () => {
    const stores = memoryStores();
    const a = recorder(true);
    const b = recorder(true);
    const [source, target] = await twoHosts(stores, a, b);
    try {
      await source.createActor('Counter', 'c-1');
      await source.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 10_000 });
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      await source.shutdown({ deadlineMs: 5000 });
      await target.shutdown({ deadlineMs: 5000 });
      await stores.close();
    }
    const units = (r: { lines: Line[] }) => r.lines.filter((l) => l.level === 'debug' && String(l.msg).startsWith('relocation unit'));
    expect(units(a).map((l) => l.obj['state'])).toEqual(expect.arrayContaining(['sealed', 'cutOver']));
    expect(units(a)[0]!.obj).toMatchObject({ nodeId: 'node-a', side: 'source', kind: 'actor', objects: 1, root: 'a:c-1' });
    expect(units(b).map((l) => l.obj['state'])).toEqual(['relayReady', 'committed', 'opened']);
    expect(units(b).find((l) => l.obj['state'] === 'committed')!.obj).toMatchObject({ side: 'target', point: 'S2' });
  });

  test('the deprecated log option still gets warnings (with fields) and no info lines', async () => {
    const stores = memoryStores();
    const lines: string[] = [];
    const Thrower = defineActor<object>({
      type: 'Thrower',
      relocation: preserveState({ capture: () => Buffer.alloc(0), restore: () => ({}) }),
      create: () => ({}),
      receive: () => {
        throw new Error('boom');
      },
    });
    const host = await createRuntime({ nodeId: 'node-a', applicationVersion: 1, stores, types: [Thrower], log: (level, message, error) => void lines.push(`${level} ${message} ${String(error)}`) });
    try {
      await host.createActor('Thrower', 't-1');
      host.send({ actor: 't-1' }, 'x');
      await new Promise((r) => setTimeout(r, 50));
      expect(lines).toEqual(['warn handler threw on a one-way message object=a:t-1 Error: boom']);
    } finally {
      await host.shutdown({ deadlineMs: 5000 });
      await stores.close();
    }
  });

  test('a logger that throws never stops the host', async () => {
    const stores = memoryStores();
    const broken = {
      debug: () => {
        throw new Error('no');
      },
      info: () => {
        throw new Error('no');
      },
      warn: () => {
        throw new Error('no');
      },
      error: () => {
        throw new Error('no');
      },
    };
    const host = await createRuntime({ nodeId: 'node-a', applicationVersion: 1, stores, types: [Counter], logger: broken });
    try {
      await host.createActor('Counter', 'c-1');
      expect(await host.request({ actor: 'c-1' }, {})).toBe(1);
    } finally {
      expect((await host.shutdown({ deadlineMs: 5000 })).outcome).toBe(0);
      await stores.close();
    }
  });
});

describe('consoleLogger (the default)', () => {
  afterEach(() => jest.restoreAllMocks());

  test('prefixes the node id, appends fields, passes err on so its stack prints, filters by level', () => {
    const info = jest.spyOn(console, 'info').mockImplementation(() => undefined);
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const debug = jest.spyOn(console, 'debug').mockImplementation(() => undefined);
    const logger = new HostLogger(consoleLogger({ level: 'info' }), 'node-a');
    const err = new Error('boom');
    logger.info({ lifecycleGeneration: 3, endpoints: { main: 'ws://10.0.0.5:7100/' }, note: 'two words' }, 'host serving');
    logger.warn({ object: 'a:x', err }, 'handler threw');
    logger.debug({ unit: 'u1' }, 'relocation unit sealed');
    expect(info.mock.calls).toEqual([['[zlink node-a] host serving lifecycleGeneration=3 endpoints={"main":"ws://10.0.0.5:7100/"} note="two words"']]);
    expect(warn.mock.calls).toEqual([['[zlink node-a] handler threw object=a:x', err]]);
    expect(debug).not.toHaveBeenCalled();
    expect(logger.debugEnabled).toBe(false);
    expect(new HostLogger(consoleLogger({ level: 'debug' }), 'n').debugEnabled).toBe(true);
  });

  test('level from ZLINK_LOG_LEVEL when not given; silent writes nothing; an unknown level is refused', () => {
    const previous = process.env.ZLINK_LOG_LEVEL;
    try {
      process.env.ZLINK_LOG_LEVEL = 'error';
      expect(consoleLogger().level).toBe('error');
      process.env.ZLINK_LOG_LEVEL = 'nonsense';
      expect(consoleLogger().level).toBe('info');
    } finally {
      if (previous === undefined) delete process.env.ZLINK_LOG_LEVEL;
      else process.env.ZLINK_LOG_LEVEL = previous;
    }
    const error = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    consoleLogger({ level: 'silent' }).error({}, 'x');
    expect(error).not.toHaveBeenCalled();
    expect(() => consoleLogger({ level: 'verbose' as never })).toThrow(/level must be one of/);
  });

  test('console itself is a valid logger (debug is then on: it cannot say otherwise)', () => {
    expect(new HostLogger(console, 'n').debugEnabled).toBe(true);
    expect(new HostLogger({ ...recorder(false), isLevelEnabled: undefined, level: 'info' }, 'n').debugEnabled).toBe(false);
  });
});
