/**
 * After the Message Follow route ends (S4) the old owner bounces what still arrives; the sender re-resolves.
 * One sender's messages keep their order and are processed exactly once across that re-route (§12, API.md:
 * "callers never see a relocation except as latency").
 */
import { RelocationMode, type ObjectRef } from '../runtime';
import { eventually, FAST_TIMING, makeStack, stacksWithCluster } from './support/stack';
import { ALL_TYPES, checkSequence, type Ledger } from './support/workload';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const timing = { ...FAST_TIMING, messageFollowDurationMs: 150 };

describe.each(stacksWithCluster())('re-route after Message Follow on %s', (stackName) => {
  test('a sender that keeps the old route past S4 still gets every message processed once and in order', async () => {
    const stack = await makeStack(stackName);
    try {
      const source = await stack.host({ nodeId: 'source', applicationVersion: 1, types: ALL_TYPES, timing });
      const peer = await stack.host({ nodeId: 'peer', applicationVersion: 1, types: ALL_TYPES, timing });
      await stack.host({ nodeId: 'target', applicationVersion: 2, types: ALL_TYPES, timing });
      const refs: ObjectRef[] = [];
      for (let i = 0; i < 30; i++) {
        await source.createActor('Counter', `c-${i}`);
        refs.push({ actor: `c-${i}` });
      }
      await eventually(async () => (await peer.request(refs[0]!, { op: 'where' }).catch(() => '')) === 'source', 5000, 'peer connected');
      let rounds = 0;
      let stop = false;
      const traffic = (async () => {
        while (!stop) {
          for (const ref of refs) peer.send(ref, { op: 'seq', from: 'peer', n: rounds });
          rounds++;
          await sleep(3);
        }
      })();
      await sleep(30);
      const result = await source.relocate({ mode: RelocationMode.RollingUpdate, targetApplicationVersion: 2, deadlineMs: 10_000 });
      expect(result.outcome).toBe(0);
      // Well past S4 of every unit: the peer's cached route still names the source, which now bounces.
      await eventually(() => source.diagnostics().followRoutes === 0, 5000, 'S4');
      await sleep(200);
      stop = true;
      await traffic;
      const ledger = (ref: ObjectRef) => peer.request(ref, { op: 'ledger' }, { timeoutMs: 5000 }) as Promise<Ledger>;
      await eventually(async () => ((await ledger(refs[refs.length - 1]!)).seen.peer ?? []).length === rounds, 5000, 'last message');
      for (const ref of refs) {
        const state = await ledger(ref);
        expect(checkSequence(state.seen.peer, rounds)).toBeUndefined();
        expect(state.nodes).toEqual(['source', 'target']);
      }
    } finally {
      await stack.close();
    }
  }, 30_000);
});
