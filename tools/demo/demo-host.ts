/**
 * Child-process entry of `npm run demo -- --processes`: one DemoNode (one zlink host) per process, driven by the
 * orchestrator over IPC (tools/child-host.ts), like the bench's hosts.
 */
import { serveParent } from '../child-host';
import { DemoNode, type DemoNodeConfig } from './demo-node';

const node = new DemoNode(JSON.parse(process.argv[2] ?? '{}') as DemoNodeConfig);
serveParent('demo-host', (cmd, args) => node.handle(cmd, args));
