/**
 * redisStores options are checked at the call, before any connection: what plain JavaScript can pass wrongly is
 * refused at once with a TypeError naming the field (no Redis needed).
 */
import { redisStores, type RedisStoresOptions } from './redis-stores';

const make = (options: unknown) => () => redisStores(options as RedisStoresOptions);

test.each([
  ['no options', undefined, /options must be an object/],
  ['no keyPrefix (plain JS)', { url: 'redis://127.0.0.1:6379' }, /field 'keyPrefix' is required.*got nothing/],
  ['a keyPrefix that is not a string', { url: 'redis://127.0.0.1:6379', keyPrefix: 7 }, /field 'keyPrefix' is required/],
  ['a keyPrefix with a hash tag brace', { url: 'redis://127.0.0.1:6379', keyPrefix: 'a{b}' }, /field 'keyPrefix' must not contain/],
  ['no url', { keyPrefix: 'app:' }, /field 'url' is required/],
  ['an http:// url', { url: 'http://127.0.0.1:6379', keyPrefix: 'app:' }, /field 'url' must be a redis:\/\/ or rediss:\/\/ URL.*got 'http:\/\/127\.0\.0\.1:6379'/],
  ['a bare host:port', { url: '127.0.0.1:6379', keyPrefix: 'app:' }, /field 'url' must be a redis:\/\/ or rediss:\/\/ URL/],
  ['a zero commandTimeoutMs', { url: 'redis://h', keyPrefix: 'a:', commandTimeoutMs: 0 }, /field 'commandTimeoutMs' must be a number of milliseconds/],
  ['a string backoffMs', { url: 'redis://h', keyPrefix: 'a:', backoffMs: '5' }, /field 'backoffMs'/],
  ['fractional attempts', { url: 'redis://h', keyPrefix: 'a:', attempts: 1.5 }, /field 'attempts' must be an integer/],
])('%s is refused at once', (_name, options, rule) => {
  const started = Date.now();
  expect(make(options)).toThrow(TypeError);
  expect(make(options)).toThrow(rule);
  expect(Date.now() - started).toBeLessThan(500); // not after a connect timeout
});

test.each([
  ['redis:// with a db', { url: 'redis://user:pw@127.0.0.1:6379/2', keyPrefix: 'app:' }],
  ['rediss:// (TLS)', { url: 'rediss://cache.example.com:6380', keyPrefix: 'app:' }],
  ['an empty keyPrefix, deliberately', { url: 'redis://127.0.0.1:6379', keyPrefix: '' }],
])('%s is accepted (nothing connects until first use)', async (_name, options) => {
  const stores = redisStores(options);
  expect(stores.provider).toBe('redis');
  await stores.close();
});
