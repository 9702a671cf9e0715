import { cpuAt } from './bench-common';

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
