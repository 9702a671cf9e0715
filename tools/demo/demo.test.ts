/**
 * `npm run demo` at a small size, in this process (memory stores): it ends with exit code 0 — Relocated, nothing
 * lost, duplicated or reordered, every Shutdown Stopped/None — and prints its table. Flags are strict.
 */
import { parseDemoFlags, runDemo } from './demo';

test('flags: defaults, sizes, and errors that name the flag', () => {
  const defaults = parseDemoFlags([]);
  expect(defaults).toMatchObject({ sizes: { actors: 10_000, rooms: 20, roomMembers: 100, lobbies: 10, lobbyMembers: 50, shards: 500 }, processes: false, inspect: false });
  expect(parseDemoFlags(['--actors', '5', '--shards', '0'])).toMatchObject({ sizes: { actors: 5, shards: 0 } });
  expect(parseDemoFlags(['--help'])).toBe('help');
  expect(() => parseDemoFlags(['--actors', '1e3'])).toThrow(/--actors must be an integer/);
  expect(() => parseDemoFlags(['--actor', '5'])).toThrow(/actor/);
  expect(() => parseDemoFlags(['--processes'])).toThrow(/--processes needs --redis/);
  expect(() => parseDemoFlags(['--redis', 'localhost:6379'])).toThrow(/--redis must be a redis:\/\//);
});

test('a small demo run ends Relocated with nothing lost, duplicated or reordered', async () => {
  const printed: string[] = [];
  const log = jest.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void printed.push(args.join(' ')));
  const err = jest.spyOn(console, 'error').mockImplementation(() => undefined);
  const write = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    const flags = parseDemoFlags(['--actors', '300', '--rooms', '2', '--room-members', '10', '--lobbies', '2', '--lobby-members', '5', '--shards', '10', '--rate', '500', '--timer-ms', '300', '--follow-ms', '300']);
    if (flags === 'help') throw new Error('unexpected');
    expect(await runDemo(flags)).toBe(0);
  } finally {
    log.mockRestore();
    err.mockRestore();
    write.mockRestore();
  }
  const table = printed.join('\n');
  expect(table).toContain('units by kind');
  expect(table).toMatch(/actor 310 · spotWide 2 · perActorShell 2 · instance 10/);
  expect(table).toMatch(/messages lost \/ duplicated \/ reordered\s+\| 0 \/ 0 \/ 0/);
  expect(table).toMatch(/Shutdown source\s+\| Stopped\/None/);
}, 30_000);
