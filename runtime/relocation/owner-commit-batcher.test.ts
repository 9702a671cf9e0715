import { memoryStores } from '../../stores/memory/memory-stores';
import type { CasResult, OwnerCommitRequest } from '../../stores/types';
import { OwnerCommitBatcher, type CommitOutcome } from './owner-commit-batcher';

const target = { nodeId: 't', lifecycleGeneration: 1 };
const entry = (i: number, expectedAuthorityGeneration = 1) => ({ object: { kind: 'actor' as const, id: `a${i}` }, expectedAuthorityGeneration, objectGeneration: 1 });

describe('OwnerCommitBatcher', () => {
  test('commits asked for in one turn go out as one commitOwners per 128, each under its own opId, each caller gets its own result', async () => {
    const calls: OwnerCommitRequest[] = [];
    const location = {
      commitOwners: async (request: OwnerCommitRequest): Promise<CasResult[]> => {
        calls.push(request);
        return request.entries.map((e) => ({ status: e.object.id.endsWith('7') ? 'conflict' : 'applied' }) as CasResult);
      },
    };
    const batcher = new OwnerCommitBatcher(location, () => target);
    const results = await Promise.all(Array.from({ length: 300 }, (_, i) => batcher.commit(entry(i))));
    expect(calls.map((c) => c.entries.length)).toEqual([128, 128, 44]);
    expect(new Set(calls.map((c) => c.opId)).size).toBe(3);
    expect(calls.every((c) => c.owner === target)).toBe(true);
    expect(calls[1]!.entries[0]).toEqual(entry(128));
    expect(results[7]!.status).toBe('conflict');
    expect(results[8]!.status).toBe('applied');
  });

  test('a failed call rejects only the commits it carried', async () => {
    let n = 0;
    const location = {
      commitOwners: async (request: OwnerCommitRequest): Promise<CasResult[]> => {
        if (n++ === 0) throw new Error('store unavailable');
        return request.entries.map(() => ({ status: 'applied' }) as CasResult);
      },
    };
    const batcher = new OwnerCommitBatcher(location, () => target, 2);
    const out = await Promise.allSettled([0, 1, 2].map((i) => batcher.commit(entry(i))));
    expect(out.map((o) => o.status)).toEqual(['rejected', 'rejected', 'fulfilled']);
  });

  test('submit: one callback per submission, with its outcomes in its own order, across calls', async () => {
    const location = {
      commitOwners: async (request: OwnerCommitRequest): Promise<CasResult[]> =>
        request.entries.map((e) => ({ status: e.expectedAuthorityGeneration === 9 ? 'conflict' : 'applied' }) as CasResult),
    };
    const batcher = new OwnerCommitBatcher(location, () => target, 2);
    const got: string[][] = [];
    await new Promise<void>((resolve) => {
      let left = 2;
      const done = (outcomes: CommitOutcome[]) => {
        got.push(outcomes.map((o) => ('error' in o ? 'error' : o.status)));
        if (--left === 0) resolve();
      };
      batcher.submit([entry(0), entry(1, 9), entry(2)], done);
      batcher.submit([entry(3, 9)], done);
    });
    expect(got).toEqual([['applied', 'conflict', 'applied'], ['conflict']]);
  });

  test('against the real memory store: one record flips per entry, a stale authority does not', async () => {
    const stores = memoryStores();
    const source = { nodeId: 's', lifecycleGeneration: 1 };
    const a = await stores.location.claim({ object: { kind: 'actor', id: 'a' }, type: 'T', owner: source, opId: 'c1' });
    const b = await stores.location.claim({ object: { kind: 'actor', id: 'b' }, type: 'T', owner: source, opId: 'c2' });
    const batcher = new OwnerCommitBatcher(stores.location, () => target);
    const [ra, rb] = await Promise.all([
      batcher.commit({ object: { kind: 'actor', id: 'a' }, expectedAuthorityGeneration: a.record.authorityGeneration, objectGeneration: 1 }),
      batcher.commit({ object: { kind: 'actor', id: 'b' }, expectedAuthorityGeneration: b.record.authorityGeneration + 5, objectGeneration: 1 }),
    ]);
    expect(ra.status).toBe('applied');
    expect(rb.status).toBe('conflict');
    expect((await stores.location.get({ kind: 'actor', id: 'a' }))?.owner.nodeId).toBe('t');
    expect((await stores.location.get({ kind: 'actor', id: 'b' }))?.owner.nodeId).toBe('s');
    await stores.close();
  });
});
