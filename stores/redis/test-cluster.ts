/**
 * Test helpers for suites against a real Redis Cluster (three masters).
 *
 * - `ZLINK_REDIS_CLUSTER=host:port,host:port,...` names the cluster to use (.ci/run exports it). It must answer
 *   with cluster_state:ok, or the suites fail: a cluster that was asked for is never skipped.
 * - Otherwise, when redis-server is installed, tools/redis-cluster.sh starts one on 127.0.0.1:7101-7103 (or reuses
 *   the one already running there) and leaves it running for the next run.
 * - Only when redis-server is not installed are the suites skipped, with the reason printed -- or, under CI=true,
 *   failed.
 *
 * Decided once per test file, synchronously (child processes), because jest chooses describe vs describe.skip
 * while it collects tests.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import type { RedisClusterNode } from './options';

export const CLUSTER_ENV = 'ZLINK_REDIS_CLUSTER';
const SCRIPT = join(__dirname, '..', '..', 'tools', 'redis-cluster.sh');

/** Parses `host:port,host:port` (`[v6]:port` too). */
export function parseClusterNodes(spec: string): RedisClusterNode[] {
  return spec
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const match = /^\[?([^\]]+?)\]?:(\d+)$/.exec(entry);
      if (!match) throw new Error(`${CLUSTER_ENV}: '${entry}' is not host:port`);
      return { host: match[1]!, port: Number(match[2]) };
    });
}

const PROBE = `
const [host, port] = [process.argv[1], Number(process.argv[2])];
const socket = require('node:net').connect(port, host);
socket.setTimeout(2000, () => process.exit(2));
socket.on('error', () => process.exit(2));
socket.on('connect', () => socket.write('CLUSTER INFO\\r\\n'));
let text = '';
socket.on('data', (data) => {
  text += data;
  if (/cluster_state:ok/.test(text)) process.exit(0);
  if (/cluster_state:fail|^-/m.test(text)) process.exit(1);
});
`;

/** Whether every node answers CLUSTER INFO with cluster_state:ok (a reason when not). */
function probe(nodes: readonly RedisClusterNode[]): string | undefined {
  for (const { host, port } of nodes) {
    const status = spawnSync(process.execPath, ['-e', PROBE, host, String(port)], { timeout: 5000 }).status;
    if (status !== 0) return `${host}:${port} ${status === 1 ? 'is not in cluster_state:ok' : 'does not answer'}`;
  }
  return undefined;
}

const installed = (command: string): boolean => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;

export type TestCluster = { readonly nodes: RedisClusterNode[] } | { readonly unavailable: string; readonly mustFail: boolean };

let found: TestCluster | undefined;

/** The cluster the tests use, started here when needed (see the file comment). */
export function testCluster(): TestCluster {
  found ??= findCluster();
  return found;
}

function findCluster(): TestCluster {
  const spec = process.env[CLUSTER_ENV];
  if (spec) {
    const nodes = parseClusterNodes(spec);
    const problem = nodes.length === 0 ? 'names no node' : probe(nodes);
    return problem ? { unavailable: `${CLUSTER_ENV}=${spec}: ${problem}`, mustFail: true } : { nodes };
  }
  if (!installed('redis-server') || !installed('redis-cli'))
    return { unavailable: `no ${CLUSTER_ENV} given and redis-server is not installed to start one`, mustFail: process.env.CI === 'true' };
  const started = spawnSync('bash', [SCRIPT, 'start'], { timeout: 240_000, encoding: 'utf8' });
  if (started.status !== 0)
    return { unavailable: `tools/redis-cluster.sh start failed: ${(started.stderr || String(started.error)).trim()}`, mustFail: true };
  const nodes = parseClusterNodes(spawnSync('bash', [SCRIPT, 'nodes'], { encoding: 'utf8' }).stdout);
  return { nodes };
}

/** describe() with the cluster's nodes; otherwise a failing test (asked for, or CI=true) or a skipped suite. */
export function describeWithCluster(name: string, body: (nodes: readonly RedisClusterNode[]) => void): void {
  const cluster = testCluster();
  if ('nodes' in cluster) return describe(name, () => body(cluster.nodes));
  if (cluster.mustFail) {
    describe(name, () => {
      test('a redis cluster is available', () => {
        throw new Error(`no usable Redis Cluster: ${cluster.unavailable}`);
      });
    });
    return;
  }
  console.warn(`[stores] skipping "${name}": ${cluster.unavailable} (set ${CLUSTER_ENV}=host:port,..., or install redis-server)`);
  describe.skip(name, () => body([]));
}

/** A plain cluster client for setup, fault injection and cleanup (not the store under test). */
export function clusterAdmin(nodes: readonly RedisClusterNode[]): Cluster {
  return new Cluster(
    nodes.map(({ host, port }) => ({ host, port })),
    { lazyConnect: true, redisOptions: { maxRetriesPerRequest: 1 } },
  );
}
