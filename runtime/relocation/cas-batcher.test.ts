import { memoryStores } from '../../stores/memory/memory-stores';
import type { CasRequest, CasResult } from '../../stores/types';
import { CasBatcher } from './cas-batcher';

describe('CasBatcher', () => {
  test('CASes asked for in one turn go out as one casMany per 128, each caller gets its own result', async () => {
    const calls: number[] = [];
    const location = {
      casMany: async (requests: readonly CasRequest[]): Promise<CasResult[]> => {
        calls.push(requests.length);
        return requests.map((r) => ({ status: r.opId.endsWith('7') ? 'conflict' : 'applied' }) as CasResult);
      },
    };
    const batcher = new CasBatcher(location);
    const owner = { nodeId: 't', lifecycleGeneration: 1 };
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, i) => batcher.cas({ object: { kind: 'actor', id: `a${i}` }, opId: `op${i}`, expectedAuthorityGeneration: 1, owner })),
    );
    expect(calls).toEqual([128, 128, 44]);
    expect(results[7]!.status).toBe('conflict');
    expect(results[8]!.status).toBe('applied');
  });

  test('a failed call rejects only the CASes it carried', async () => {
    let n = 0;
    const location = {
      casMany: async (requests: readonly CasRequest[]): Promise<CasResult[]> => {
        if (n++ === 0) throw new Error('store unavailable');
        return requests.map(() => ({ status: 'applied' }) as CasResult);
      },
    };
    const batcher = new CasBatcher(location, 2);
    const owner = { nodeId: 't', lifecycleGeneration: 1 };
    const out = await Promise.allSettled(
      [0, 1, 2].map((i) => batcher.cas({ object: { kind: 'actor', id: `a${i}` }, opId: `op${i}`, expectedAuthorityGeneration: 1, owner })),
    );
    expect(out.map((o) => o.status)).toEqual(['rejected', 'rejected', 'fulfilled']);
  });

  test('against the real memory store: one record flips per request, a stale authority does not', async () => {
    const stores = memoryStores();
    const source = { nodeId: 's', lifecycleGeneration: 1 };
    const target = { nodeId: 't', lifecycleGeneration: 1 };
    const a = await stores.location.claim({ object: { kind: 'actor', id: 'a' }, type: 'T', owner: source, opId: 'c1' });
    const b = await stores.location.claim({ object: { kind: 'actor', id: 'b' }, type: 'T', owner: source, opId: 'c2' });
    const batcher = new CasBatcher(stores.location);
    const [ra, rb] = await Promise.all([
      batcher.cas({ object: { kind: 'actor', id: 'a' }, opId: 'm1', expectedAuthorityGeneration: a.record.authorityGeneration, owner: target }),
      batcher.cas({ object: { kind: 'actor', id: 'b' }, opId: 'm2', expectedAuthorityGeneration: b.record.authorityGeneration + 5, owner: target }),
    ]);
    expect(ra.status).toBe('applied');
    expect(rb.status).not.toBe('applied');
    expect((await stores.location.get({ kind: 'actor', id: 'a' }))?.owner.nodeId).toBe('t');
    expect((await stores.location.get({ kind: 'actor', id: 'b' }))?.owner.nodeId).toBe('s');
    await stores.close();
  });
});
