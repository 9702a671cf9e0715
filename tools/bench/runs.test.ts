import { describePair, median, pairRatio, pairsSummary, parseEnv, seriesRow, seriesSummary, type BenchRun } from './runs';

/** Fields of one real 100k results file (bench/results.json of a run over 6×). */
const over: BenchRun = {
  floorMs: 1452.7,
  zlinkMs: 9257,
  zlinkOverFloor: 6.37,
  s0s1P99Ms: 36,
  casAfterS1P99Ms: 37,
  usPerUnit: 92.6,
  peakRssGrowthMB: 51.5,
  lost: 0,
  duplicated: 0,
  reordered: 0,
  cutoverTimeouts: 0,
  details: {
    zlink: {
      sealedAtOnce: { mean: 108.4, max: 256 },
      cutOverByTenthMs: [1905, 665, 665, 633, 745, 983, 972, 910, 838, 896],
      fallbacksFromUnitEvents: 0,
      cpuMs: { sourceMove: 5127.2, targetMove: 6302, redisServerMove: 1530 },
    },
  },
};

const faster = (by: number, p99 = over.s0s1P99Ms): BenchRun => ({
  ...over,
  zlinkMs: Math.round(over.zlinkMs * by),
  zlinkOverFloor: Number(((over.zlinkMs * by) / over.floorMs).toFixed(2)),
  s0s1P99Ms: p99,
  details: {
    zlink: {
      ...over.details.zlink,
      cpuMs: { sourceMove: over.details.zlink.cpuMs.sourceMove * by, targetMove: over.details.zlink.cpuMs.targetMove * by, redisServerMove: over.details.zlink.cpuMs.redisServerMove },
    },
  },
});

describe('series', () => {
  test('a row holds the Must-show figures: tenths as the first / the range of the other nine', () => {
    expect(seriesRow('J13', over)).toBe(
      '| J13 | 1452.7 | 9257 | 6.37 | 36 | 37 | 92.6 | 51.5 | 5127.2 / 6302 | 108.4 / 256 | 1905 / 633–983 | 0/0/0/0 | 0 |',
    );
  });

  test('a run without tenths (too few units reached S1) shows a dash, not Infinity', () => {
    const blocked: BenchRun = { ...over, details: { ...over.details, zlink: { ...over.details.zlink, cutOverByTenthMs: [] } } };
    expect(seriesRow('B1', blocked)).toContain('| 108.4 / 256 | — | 0/0/0/0 |');
  });

  test('the summary counts the runs within 6× and the losses over all runs', () => {
    const lossy: BenchRun = { ...faster(0.8), lost: 2, reordered: 1 };
    const text = seriesSummary([over, faster(0.7, 30), lossy]);
    expect(text).toContain('3 runs: 4.46–6.37× the floor, median 5.1×; within 6×: 2 of 3');
    expect(text).toContain('S0→S1 p99 30–36 ms');
    expect(text).toContain('lost + duplicated + reordered + cutover_timeout over all runs: 3');
  });

  test('the floor measured again after the move is summed up against the one before, where a run has it', () => {
    const withAfter = (floorMs: number): BenchRun => ({ ...over, details: { ...over.details, floorAfterMove: { floorMs } } });
    const text = seriesSummary([over, withAfter(1452.7 * 1.2), withAfter(1452.7 * 0.9)]);
    expect(text).toContain('floor after the move ÷ floor before (diagnostic, 2 runs): 0.9–1.2, median 1.05');
    expect(seriesSummary([over])).not.toContain('floor after the move');
  });

  test('no runs: said, not NaN', () => {
    expect(seriesSummary([])).toBe('no runs');
  });
});

describe('pairs', () => {
  test('B ÷ A of the move, each host’s CPU and Redis', () => {
    expect(pairRatio(over, faster(0.9))).toEqual({ move: 0.9, cpuSource: 0.9, cpuTarget: 0.9, redis: 1, sourceOverTarget: 1 });
  });

  test('the source’s CPU over the target’s: a change to one side, with the machine slower in B’s run', () => {
    const cpu = over.details.zlink.cpuMs;
    // B's machine 20% slower for both hosts; B's source does 5% less work on top.
    const slowerMachine: BenchRun = { ...over, details: { ...over.details, zlink: { ...over.details.zlink, cpuMs: { ...cpu, sourceMove: cpu.sourceMove * 1.2 * 0.95, targetMove: cpu.targetMove * 1.2 } } } };
    const r = pairRatio(over, slowerMachine);
    expect(r.cpuSource).toBe(1.14);
    expect(r.sourceOverTarget).toBe(0.95);
  });

  test('a pair says which build ran first', () => {
    expect(describePair(2, { a: over, b: faster(0.9), aFirst: false })).toMatch(/^pair 2 \(B first\)\n {2}A: 9257 ms .*\n {2}B: 8331 ms .*\n {2}B ÷ A: move 0\.9, CPU source 0\.9/);
  });

  test('the summary is the median over the pairs, with the range of the move', () => {
    const pairs = [0.8, 1.1, 0.9, 0.95].map((by, i) => ({ a: over, b: faster(by), aFirst: i % 2 === 0 }));
    expect(pairsSummary(pairs)).toBe('B ÷ A over 4 pairs: move 0.8–1.1 (median 0.925), CPU source median 0.925, target median 0.925, Redis median 1; source ÷ target CPU 1–1 (median 1)');
  });
});

describe('median', () => {
  test('odd, even and empty', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

describe('parseEnv', () => {
  test('KEY=VALUE pairs, a quoted value may hold spaces', () => {
    expect(parseEnv("ZLINK_BENCH_NODE_ARGS='--trace-gc --v8-pool-size=1' X=1", '--env-b')).toEqual({ ZLINK_BENCH_NODE_ARGS: '--trace-gc --v8-pool-size=1', X: '1' });
  });

  test('nothing given: no variables', () => {
    expect(parseEnv(undefined, '--env')).toEqual({});
  });

  test('text that holds no pair is refused, naming the flag', () => {
    expect(() => parseEnv('--trace-gc', '--env-a')).toThrow(/--env-a must be KEY=VALUE pairs/);
  });
});
