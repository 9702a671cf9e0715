import { describeStoreContract } from '../contract';
import { memoryStores } from './memory-stores';

let clock = 1_000_000;
describeStoreContract('memory', () => {
  const stores = memoryStores({ now: () => clock });
  return {
    stores,
    advance: async (ms) => {
      clock += ms;
    },
    tamperPage: async (relocationId, spotId, page) => {
      const pages = stores.location.pages(relocationId, spotId)!;
      pages[page] = pages[page]!.replace('\t1\n', '\t2\n');
    },
  };
});

test('memoryStores instances are independent', async () => {
  const a = memoryStores();
  const b = memoryStores();
  await a.location.claim({ object: { kind: 'spot', id: 's' }, type: 'Room', owner: { nodeId: 'n', lifecycleGeneration: 1 }, opId: 'o' });
  expect(await b.location.get({ kind: 'spot', id: 's' })).toBeUndefined();
});
