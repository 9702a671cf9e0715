/** The package entry exports every public type and error the API uses (issue 12: strict, helpful options). */
import * as zlink from '.';
import { statePath } from './state-path';

test('errors and defaults a user needs are exported from the entry', () => {
  expect(new zlink.LeaseHeldError('n', 1, 2, 500)).toBeInstanceOf(Error);
  expect(zlink.REDIS_STORE_DEFAULTS.commandTimeoutMs).toBe(2000);
  expect(typeof zlink.consoleLogger).toBe('function');
  // Types (checked by the compiler): options of both store providers, the logger, transport and event listeners.
  const redis: zlink.RedisStoresOptions = { url: 'redis://127.0.0.1:6379', keyPrefix: 'app:' };
  const memory: zlink.MemoryStoresOptions = {};
  const logger: zlink.Logger = console;
  const listener: zlink.HostEventListener = () => undefined;
  const unit: zlink.UnitListener = () => undefined;
  const defs: zlink.ObjectDefinition[] = [];
  const serve: zlink.ServeHandler<{ n: number }, number> = (request, info: zlink.ServeInfo) => (info.signal.aborted ? 0 : request.n);
  const serveOptions: zlink.ServeOptions = { weight: 2 };
  const callOptions: zlink.CallOptions = { node: 'n', timeoutMs: 1, signal: new AbortController().signal };
  const registration: zlink.ServerRegistration | undefined = undefined;
  const spot: zlink.SpotRef = { spot: 'shard-9', type: 'Shard' };
  // Classic fanout and Logical Multicast.
  const handler: zlink.FanoutHandler = (_event: unknown, info: zlink.FanoutEventInfo) => void info.publisher.id;
  const subscribeOptions: zlink.SubscribeOptions = { endpoint: 'ws://10.0.0.5:7100' };
  const member: zlink.ChannelMemberRef = { spot: 'shard-1', type: 'Shard' };
  const result: zlink.MulticastResult = { targets: 1 };
  const fanout: Pick<zlink.FanoutPublisher, 'topic'> & Pick<zlink.FanoutSubscription, 'topic'> = { topic: 't' };
  const channels: Pick<zlink.ChannelApi, never> & Pick<zlink.ChannelStore, never> & zlink.ChannelMember = { spot: 's' };
  expect([redis, memory, logger, listener, unit, defs, serve, serveOptions, callOptions, registration, spot, handler, subscribeOptions, member, result, fanout, channels]).toHaveLength(17);
});

test('diagnostics phases are readable state paths, not JSON', () => {
  expect(statePath('awaitingTarget')).toBe('awaitingTarget');
  expect(statePath({ running: 'batch2' })).toBe('running.batch2');
  expect(statePath({ running: { batch2: 'draining' } })).toBe('running.batch2.draining');
  expect(statePath({ a: 'x', b: { c: 'y' } })).toBe('a.x, b.c.y');
});
