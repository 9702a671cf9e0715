/**
 * redisStores options are checked at the call, before any connection: what plain JavaScript can pass wrongly is
 * refused at once with an ArgumentError (a TypeError) whose `field` names the option (no Redis needed).
 */
import { ArgumentError } from '../../vocabulary';
import { redisStores, type RedisStoresOptions } from './redis-stores';

const make = (options: unknown) => () => redisStores(options as RedisStoresOptions);
const url = 'redis://127.0.0.1:6379';
const nodes = [{ host: '127.0.0.1', port: 7101 }];

test.each([
  ['no options', undefined, 'options', /redisStores needs an object/],
  ['no keyPrefix (plain JS)', { url }, 'keyPrefix', /keyPrefix: is required.*got nothing/],
  ['a keyPrefix that is not a string', { url, keyPrefix: 7 }, 'keyPrefix', /is required/],
  ['a keyPrefix with a hash tag brace', { url, keyPrefix: 'a{b}' }, 'keyPrefix', /must not contain '\{' or '\}'/],
  ['neither url nor cluster', { keyPrefix: 'app:' }, 'url', /url: is required \(or cluster: \{ nodes/],
  ['both url and cluster', { url, cluster: { nodes }, keyPrefix: 'app:' }, 'cluster', /cluster: and url exclude each other/],
  ['an http:// url', { url: 'http://127.0.0.1:6379', keyPrefix: 'app:' }, 'url', /must be a redis:\/\/ or rediss:\/\/ URL.*got 'http:\/\/127\.0\.0\.1:6379'/],
  ['a bare host:port', { url: '127.0.0.1:6379', keyPrefix: 'app:' }, 'url', /must be a redis:\/\/ or rediss:\/\/ URL/],
  ['a url without a host', { url: 'redis://', keyPrefix: 'app:' }, 'url', /must name a host/],
  ['a url whose path is not a database number', { url: 'redis://h:6379/zero', keyPrefix: 'app:' }, 'url', /path must be a database number/],
  ['a zero commandTimeoutMs', { url: 'redis://h', keyPrefix: 'a:', commandTimeoutMs: 0 }, 'commandTimeoutMs', /must be a number of milliseconds/],
  ['a string backoffMs', { url: 'redis://h', keyPrefix: 'a:', backoffMs: '5' }, 'backoffMs', /got '5'/],
  ['fractional attempts', { url: 'redis://h', keyPrefix: 'a:', attempts: 1.5 }, 'attempts', /must be an integer/],
  ['a misspelt option', { url, keyprefix: 'app:' }, 'keyprefix', /is not a redisStores option — did you mean 'keyPrefix'\?/],
  ['a misspelt timing', { url, keyPrefix: 'a:', commandTimeout: 100 }, 'commandTimeout', /did you mean 'commandTimeoutMs'\?/],
  ['an unknown option far from any', { url, keyPrefix: 'a:', zzzzzzzzzz: 1 }, 'zzzzzzzzzz', /is not a redisStores option \(known: url, cluster, keyPrefix/],
  ['cluster: an array', { cluster: nodes, keyPrefix: 'a:' }, 'cluster', /must be an object: \{ nodes/],
  ['cluster: no nodes', { cluster: {}, keyPrefix: 'a:' }, 'cluster.nodes', /non-empty array of \{ host, port \}.*got nothing/],
  ['cluster: empty nodes', { cluster: { nodes: [] }, keyPrefix: 'a:' }, 'cluster.nodes', /non-empty array/],
  ['cluster: a misspelt field', { cluster: { node: nodes }, keyPrefix: 'a:' }, 'cluster.node', /is not a cluster field — did you mean 'nodes'\?/],
  ['cluster: a node as a string', { cluster: { nodes: ['127.0.0.1:7101'] }, keyPrefix: 'a:' }, 'cluster.nodes.0', /must be \{ host, port \}/],
  ['cluster: a port out of range', { cluster: { nodes: [...nodes, { host: 'h', port: 70000 }] }, keyPrefix: 'a:' }, 'cluster.nodes.1.port', /integer port 1–65535; got 70000/],
  ['cluster: an empty host', { cluster: { nodes: [{ host: '', port: 1 }] }, keyPrefix: 'a:' }, 'cluster.nodes.0.host', /must be a host name/],
  ['cluster: a node with a misspelt field', { cluster: { nodes: [{ hots: 'h', port: 1 }] }, keyPrefix: 'a:' }, 'cluster.nodes.0.hots', /did you mean 'host'\?/],
  ['cluster: options not an object', { cluster: { nodes, options: 'tls' }, keyPrefix: 'a:' }, 'cluster.options', /must be an object/],
  ['cluster: a misspelt option', { cluster: { nodes, options: { natmap: {} } }, keyPrefix: 'a:' }, 'cluster.options.natmap', /did you mean 'natMap'\?/],
  ['cluster: scaleReads (fixed by zlink)', { cluster: { nodes, options: { scaleReads: 'slave' } }, keyPrefix: 'a:' }, 'cluster.options.scaleReads', /set by zlink.*read from masters/],
  ['cluster: enableOfflineQueue (fixed by zlink)', { cluster: { nodes, options: { enableOfflineQueue: true } }, keyPrefix: 'a:' }, 'cluster.options.enableOfflineQueue', /set by zlink/],
  ['cluster: redisOptions (fixed by zlink)', { cluster: { nodes, options: { redisOptions: {} } }, keyPrefix: 'a:' }, 'cluster.options.redisOptions', /use commandTimeoutMs/],
  ['cluster: tls not an object', { cluster: { nodes, options: { tls: true } }, keyPrefix: 'a:' }, 'cluster.options.tls', /node:tls connection options/],
  ['cluster: a password not a string', { cluster: { nodes, options: { password: 1 } }, keyPrefix: 'a:' }, 'cluster.options.password', /must be a string/],
  ['cluster: a natMap entry without a port', { cluster: { nodes, options: { natMap: { '10.0.0.1:7000': { host: 'h' } } } }, keyPrefix: 'a:' }, 'cluster.options.natMap.10.0.0.1:7000.port', /integer port/],
  ['cluster: a zero slotsRefreshTimeout', { cluster: { nodes, options: { slotsRefreshTimeout: 0 } }, keyPrefix: 'a:' }, 'cluster.options.slotsRefreshTimeout', /greater than 0/],
  ['cluster: maxRedirections 0', { cluster: { nodes, options: { maxRedirections: 0 } }, keyPrefix: 'a:' }, 'cluster.options.maxRedirections', /at least 1/],
  ['cluster: dnsLookup not a function', { cluster: { nodes, options: { dnsLookup: 'x' } }, keyPrefix: 'a:' }, 'cluster.options.dnsLookup', /must be a function/],
])('%s is refused at once', (_name, options, field, rule) => {
  const started = Date.now();
  let error: unknown;
  try {
    make(options)();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(ArgumentError);
  expect(error).toBeInstanceOf(TypeError);
  expect(error).toMatchObject({ field });
  expect((error as Error).message).toMatch(rule);
  expect(Date.now() - started).toBeLessThan(500); // not after a connect timeout
});

test.each([
  ['redis:// with a db', { url: 'redis://user:pw@127.0.0.1:6379/2', keyPrefix: 'app:' }],
  ['rediss:// (TLS)', { url: 'rediss://cache.example.com:6380', keyPrefix: 'app:' }],
  ['an empty keyPrefix, deliberately', { url, keyPrefix: '' }],
  ['a cluster', { cluster: { nodes }, keyPrefix: 'app:' }],
  [
    'a cluster with every supported option',
    {
      cluster: {
        nodes: [...nodes, { host: 'redis-2.internal', port: 6379 }],
        options: {
          username: 'zlink',
          password: 'secret',
          tls: { servername: 'redis.internal' },
          natMap: { '10.0.0.1:7000': { host: '127.0.0.1', port: 7101 } },
          dnsLookup: (address: string, callback: (error: null, address: string) => void) => callback(null, address),
          slotsRefreshTimeout: 2000,
          slotsRefreshInterval: 10_000,
          maxRedirections: 8,
        },
      },
      keyPrefix: 'app:',
      connectionName: 'zlink',
    },
  ],
  ['a cluster with a natMap function', { cluster: { nodes, options: { natMap: () => null } }, keyPrefix: 'app:' }],
])('%s is accepted (nothing connects until first use)', async (_name, options) => {
  const stores = redisStores(options as RedisStoresOptions);
  expect(stores.provider).toBe('redis');
  await stores.close();
});
