/**
 * Child-process entry of `npm run bench` (redis stack): one BenchNode (one zlink runtime) per process, driven by
 * the orchestrator over IPC (tools/child-host.ts).
 */
import { serveParent } from '../child-host';
import { BenchNode, type NodeConfig } from './bench-node';
import { installMetrics } from './bench-common';

const config = JSON.parse(process.argv[2] ?? '{}') as NodeConfig;
const reader = installMetrics();
const node = new BenchNode(config, undefined, (name) => reader.counter(name));
serveParent('bench-host', (cmd, args) => node.handle(cmd, args));
