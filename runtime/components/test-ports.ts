/**
 * ComponentPorts for unit tests on fake ports: each test gives what its component uses; what it does not use
 * fails loudly when touched (a component that starts using a port must get a real fake for it, not a silent one).
 */
import assert from 'node:assert';
import { SimulatedClock } from '../clock';
import type { ComponentPorts } from './component';

type Given = Pick<ComponentPorts, 'self' | 'state' | 'logger' | 'stores'> & Partial<ComponentPorts>;

export function fakeComponentPorts(given: Given): ComponentPorts {
  return {
    nodeId: given.self.nodeId,
    clock: new SimulatedClock(),
    descriptors: () => [],
    send: () => false,
    isReady: () => false,
    transport: () => undefined,
    onUnitEvent: () => () => undefined,
    republish: async () => undefined,
    sendToObject: () => assert.fail('this component sends no messages to objects'),
    get hostedObjects(): never {
      return assert.fail('this component does not use hosted objects');
    },
    sessionEnvelope: () => assert.fail('this component sends no session envelopes'),
    ...given,
  };
}
