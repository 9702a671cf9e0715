import { mainThreadRoles, parsePerfScript, roleOf, summarize, timeline } from './perf-summary';

/** `perf script -F comm,pid,tid,time,ip,sym` as it prints: a header per sample, one frame per line (leaf first). */
const SCRIPT = [
  'node 100/100  10.000: ',
  '\t 7f01 JS:*sealAndTransfer /w/dist/runtime/relocation/source/unit.js:212:20',
  '\t 7f02 JS:*onControl /w/dist/runtime/relocation/coordinator.js:426:14',
  '',
  'node 100/100  10.100: ',
  '\t 55a1 Builtins_LoadIC',
  '\t 7f03 JS:*pack /w/node_modules/msgpackr/dist/node.cjs:1961:16',
  '\t 7f04 JS:*sendPrepares /w/dist/runtime/relocation/control-batcher.js:134:5',
  '\t 7f05 JS:*prepareTarget /w/dist/runtime/relocation/source/unit.js:142:18',
  '',
  'node 100/103  10.200: ',
  '\t 1234 v8::internal::compiler::GraphReducer::ReduceTop',
  '\t 1235 v8::internal::OptimizingCompileDispatcher::CompileTask::RunInternal',
  '',
  'node 200/200  10.300: ',
  '\t 7f06 JS:*prepareUnit /w/.variants/b/runtime/relocation/target/inbound.js:119:16',
  '',
  'node 200/201  10.600: ',
  '\t 1236 v8::internal::Scavenger::ScavengeObject',
  '',
  'swapper 0/0  10.700: ',
  '\t ffff pvm_safe_halt_hc',
  '',
  'redis-server 300/300  10.800: ',
  '\t 4444 dictFind',
  '',
  'node 400/400  10.900: ',
  '\t 7f07 JS:* /w/dist/tools/bench/bench.js:171:33',
  '',
  'kdamond.0 83/83  10.950: ',
  '\t ffff ptep_test_and_clear_young',
  '',
].join('\n');

describe('perf-summary (the whole machine during a move)', () => {
  const samples = parsePerfScript(SCRIPT);

  test('parses each sample with its thread, time and frames, leaf first', () => {
    expect(samples).toHaveLength(9);
    expect(samples[1]).toEqual({
      comm: 'node',
      pid: 100,
      tid: 100,
      time: 10.1,
      frames: [
        'Builtins_LoadIC',
        'JS:*pack /w/node_modules/msgpackr/dist/node.cjs:1961:16',
        'JS:*sendPrepares /w/dist/runtime/relocation/control-batcher.js:134:5',
        'JS:*prepareTarget /w/dist/runtime/relocation/source/unit.js:142:18',
      ],
    });
  });

  test('names main threads by what they ran, other node threads by V8 job, and everything else by process', () => {
    const roles = mainThreadRoles(samples);
    expect([...roles]).toEqual([
      [100, 'source'],
      [200, 'target'],
      [400, 'traffic host'],
    ]);
    expect(samples.map((s) => roleOf(s, roles))).toEqual([
      'source',
      'source',
      'V8 compiler threads',
      'target',
      'V8 GC threads',
      'idle',
      'Redis',
      'traffic host',
      'other: kdamond.0',
    ]);
  });

  test('shares by thread, self time and the nearest frame of zlink (a dependency is not ours)', () => {
    const s = summarize(samples);
    expect(s.samples).toBe(9);
    expect(s.byRole[0]).toEqual(['source', 2]);
    expect(s.self.get('source')).toEqual([
      ['JS:*sealAndTransfer runtime/relocation/source/unit.js:212:20', 1],
      ['Builtins_LoadIC', 1],
    ]);
    expect(s.ours.get('source')).toEqual([
      ['JS:*sealAndTransfer runtime/relocation/source/unit.js:212:20', 1],
      ['JS:*sendPrepares runtime/relocation/control-batcher.js:134:5', 1],
    ]);
    expect(s.ours.get('target')).toEqual([['JS:*prepareUnit runtime/relocation/target/inbound.js:119:16', 1]]);
    expect(s.self.has('Redis')).toBe(false);
  });

  test('a timeline of compile, GC and idle shares per bin', () => {
    expect(timeline(samples, 500)).toEqual([
      { atMs: 0, compile: 0.25, gc: 0, idle: 0 },
      { atMs: 500, compile: 0, gc: 0.2, idle: 0.2 },
    ]);
    expect(timeline([])).toEqual([]);
  });
});
