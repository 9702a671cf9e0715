import { cpuAt, mainThreadCpuMs, peakUntil, redisCpuMs, s0s1Deciles, sealedAtOnce, startRamp, statCpuMs, tenths } from './bench-common';

describe('cpuAt (CPU of the move from 100 ms samples)', () => {
  // (wall clock ms, CPU ms) pairs
  const samples = [1000, 0, 1100, 80, 1200, 100, 1300, 190];

  test('is linear between the two samples around the time', () => {
    expect(cpuAt(samples, 1150)).toBe(90);
    expect(cpuAt(samples, 1225)).toBeCloseTo(122.5);
  });

  test('is the sample itself at a sample time', () => {
    expect(cpuAt(samples, 1100)).toBe(80);
    expect(cpuAt(samples, 1300)).toBe(190);
  });

  test('clamps to the first and last sample', () => {
    expect(cpuAt(samples, 500)).toBe(0);
    expect(cpuAt(samples, 5000)).toBe(190);
  });

  test('two samples at the same time do not divide by zero', () => {
    expect(cpuAt([1000, 5, 1000, 7], 1000)).toBe(5);
    expect(cpuAt([1000, 5, 1000, 7, 1100, 9], 1050)).toBe(8);
  });

  test('no samples: NaN', () => {
    expect(cpuAt([], 1000)).toBeNaN();
  });
});

describe('s0s1Deciles (S0→S1 by tenth of the move, split at relay-ready)', () => {
  // 20 units sealed 10 ms apart; each restores 3 ms after its seal, S1 2 ms later; unit 19 stops 100 ms.
  const s0: [string, number][] = Array.from({ length: 20 }, (_, i) => [`u${i}`, 1000 + 10 * i]);
  const ready = new Map(s0.map(([u, at]) => [u, at + 3]));
  const s1 = new Map(s0.map(([u, at], i) => [u, i === 19 ? at + 100 : at + 5]));
  // The target's owner CAS 7 ms after S1, 40 ms for unit 18.
  const s2 = new Map([...s1].map(([u, at], i) => [u, at + (i === 18 ? 40 : 7)]));

  test('one row per tenth, in seal order, with both legs and the CAS after S1', () => {
    const rows = s0s1Deciles(s0, ready, s1, s2).split('\n');
    expect(rows).toHaveLength(10);
    expect(rows[0]).toBe('decile 0: sealed from +0 ms, S0→S1 p50 5 p99 5 max 5 | S0→ready p50 3 p99 3 | ready→S1 p50 2 p99 2 | CAS−S1 p50 7 p99 7');
    expect(rows[9]).toBe('decile 9: sealed from +180 ms, S0→S1 p50 5 p99 100 max 100 | S0→ready p50 3 p99 3 | ready→S1 p50 2 p99 97 | CAS−S1 p50 7 p99 40');
  });

  test('units that never reached S1 are left out', () => {
    expect(s0s1Deciles(s0, ready, new Map(), new Map())).toBe('deciles: no unit reached S1');
  });
});

describe('startRamp (the start of the move, per step from Relocate)', () => {
  test('the first seal, then per step the units that reached S1 and the mean sealed at once', () => {
    // Relocate at 1000; a seals at 1030 and stops at 1130; b seals at 1050 and stops at 1060; c never stops.
    const s0 = new Map([['a', 1030], ['b', 1050], ['c', 1040]]);
    const s1 = new Map([['a', 1130], ['b', 1060]]);
    expect(startRamp(1000, s0, s1, 100, 200)).toBe(
      'ramp: first S0 +30 ms; per 100 ms from Relocate, units reaching S1 / sealed at once (mean): 100: 1 / 0.8, 200: 1 / 0.3',
    );
  });

  test('a stop after the last step counts for the steps it covers only; nothing sealed says so', () => {
    expect(startRamp(0, new Map([['a', 50]]), new Map([['a', 450]]), 100, 200)).toBe(
      'ramp: first S0 +50 ms; per 100 ms from Relocate, units reaching S1 / sealed at once (mean): 100: 0 / 0.5, 200: 0 / 1',
    );
    expect(startRamp(0, new Map(), new Map())).toBe('ramp: no unit sealed');
  });
});

describe('sealedAtOnce (units between S0 and S1)', () => {
  test('the mean over the span from the first seal to the last cutover, and the most at one time', () => {
    const s0 = new Map([['a', 0], ['b', 0], ['c', 10], ['lost', 5]]);
    const s1 = new Map([['a', 10], ['b', 20], ['c', 20]]);
    // 0–10: a and b; 10–20: b and c (a stops as c seals): 2 throughout
    expect(sealedAtOnce(s0, s1)).toEqual({ mean: 2, max: 2 });
    expect(sealedAtOnce(new Map([['a', 0], ['b', 5]]), new Map([['a', 10], ['b', 20]]))).toEqual({ mean: 1.25, max: 2 });
  });

  test('no unit with both stamps: NaN', () => {
    expect(sealedAtOnce(new Map([['a', 0]]), new Map())).toEqual({ mean: NaN, max: NaN });
  });
});

describe('peakUntil (peak RSS of the move from 100 ms samples)', () => {
  // (wall ms, MiB): the move ends at 1250; the reads after it allocate more (the 900 at 1400 is not the move's).
  const samples = [1000, 300, 1100, 500, 1200, 450, 1300, 480, 1400, 900];
  test('the largest sample up to the end, and the first one at or after it', () => {
    expect(peakUntil(samples, 1250)).toBe(500);
    expect(peakUntil([1000, 300, 1100, 350, 1200, 320, 1300, 480, 1400, 900], 1250)).toBe(480);
  });
  test('an end before the first sample reads the first; after the last, the whole series', () => {
    expect(peakUntil(samples, 500)).toBe(300);
    expect(peakUntil(samples, 5000)).toBe(900);
    expect(peakUntil([], 1000)).toBeNaN();
  });
});

describe('tenths (how long each tenth of the units took to reach S1)', () => {
  test('from the start to the first tenth, then tenth to tenth, in S1 order', () => {
    // 20 units: S1 at 1010, 1020, … 1200 (given out of order); Relocate at 1000
    const s1 = Array.from({ length: 20 }, (_, i) => 1200 - 10 * i);
    expect(tenths(1000, s1)).toEqual([20, 20, 20, 20, 20, 20, 20, 20, 20, 20]);
  });

  test('a slow first tenth shows as its own figure; fewer units than tenths repeat the last stamp', () => {
    expect(tenths(0, [500, 510, 520, 530, 540, 550, 560, 570, 580, 590])).toEqual([500, 10, 10, 10, 10, 10, 10, 10, 10, 10]);
    expect(tenths(0, [100, 300])).toEqual([100, 0, 0, 0, 0, 200, 0, 0, 0, 0]);
    expect(tenths(0, [])).toEqual([]);
  });
});

describe('redisCpuMs (the Redis server CPU from INFO cpu)', () => {
  test('sums user and system seconds into ms', async () => {
    const info = '# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:2.500000\r\nused_cpu_sys_children:9.000000\r\nused_cpu_user_children:9.000000\r\n';
    await expect(redisCpuMs({ info: async () => info })).resolves.toBe(3750);
  });

  test('a reply without the fields is NaN, not a number to subtract', async () => {
    await expect(redisCpuMs({ info: async () => '# CPU\r\n' })).resolves.toBeNaN();
  });
});

describe('statCpuMs / mainThreadCpuMs (one thread\'s CPU from /proc)', () => {
  test('reads utime + stime (fields 14 and 15) in 10 ms ticks, past a name with spaces and parentheses', () => {
    const stat = '4242 (node (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1234 56 0 0 20 0 11 0 100 1000000 5000 18446744073709551615';
    expect(statCpuMs(stat)).toBe((1234 + 56) * 10);
  });

  test('a truncated line is NaN, not a number to subtract', () => {
    expect(statCpuMs('4242 (node) S 1 4242')).toBeNaN();
  });

  test('this process: the main thread has used CPU, and no more than the whole process', () => {
    if (process.platform !== 'linux') return;
    const main = mainThreadCpuMs();
    const { user, system } = process.cpuUsage();
    expect(main).toBeGreaterThan(0);
    expect(main).toBeLessThanOrEqual((user + system) / 1000 + 10);
  });
});
