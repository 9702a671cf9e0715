import { describeTransportContract } from '../contract';
import { createMemoryTransport, memoryEndpoint } from '.';

describeTransportContract({
  kind: 'memory',
  mesh: (name, extra) => ({ name, ...extra }),
  reserve: async (self, name) => ({ mesh: { name }, endpoint: memoryEndpoint(self, name) }),
  create: createMemoryTransport,
});
