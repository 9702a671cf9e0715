/**
 * §8/§11: the Location Store names the new owner only once the target's CAS lands. Here the target's CAS is slow
 * (an honest delay wrapper around the real Location Store: cas/casMany/commitOwners/commitAggregate answer after
 * CAS_DELAY_MS, then apply unchanged) and the source's Message Follow window is short, so for a while the store still
 * names the source while the source no longer forwards. A sender must keep its messages until the owner record converges
 * (bounded by restoreValidityMs) instead of giving up after MAX_HOPS bounces: every message is processed exactly
 * once, in order, and no request fails.
 */
import { RelocationMode, RelocationOutcome, type ObjectRef } from '../../runtime';
import { eventually, FAST_TIMING, makeStack, STACKS, type Stack } from '../support/stack';
import { ALL_TYPES, checkSequence, type Ledger } from '../support/workload';
import { customHosts, delayedOwnerCas, quietLog, sleep, storesWith } from './support';

const FOLLOW_MS = 100;
const CAS_DELAY_MS = 700; // well past the Message Follow window, well inside restoreValidityMs
const timing = { ...FAST_TIMING, messageFollowDurationMs: FOLLOW_MS, restoreValidityMs: 5000 };
const { log } = quietLog();
const ACTORS = 8;

describe.each(STACKS)('sender waits for owner convergence on %s', (stackName) => {
  let stack: Stack;
  let extra: ReturnType<typeof customHosts>;
  beforeEach(async () => {
    stack = await makeStack(stackName);
    extra = customHosts(stack);
  });
  afterEach(async () => {
    await extra.close();
    await stack.close();
  });

  test("messages sent while the target's CAS is still landing (after the source stopped forwarding) are kept until the owner converges", async () => {
    let casDelayed = false;
    const a = await stack.host({ nodeId: 'a', applicationVersion: 1, types: ALL_TYPES, timing, log });
    await extra.host({
      nodeId: 'b',
      applicationVersion: 2,
      types: ALL_TYPES,
      timing,
      log,
      stores: storesWith(stack.stores, { location: delayedOwnerCas(stack.stores.location, () => (casDelayed ? sleep(CAS_DELAY_MS) : Promise.resolve())) }),
    });
    const c = await stack.host({ nodeId: 'c', applicationVersion: 1, types: ALL_TYPES, timing, log });
    const refs: ObjectRef[] = [];
    for (let i = 0; i < ACTORS; i++) {
      await a.createActor('Counter', `o-${i}`);
      refs.push({ actor: `o-${i}` });
    }
    await eventually(async () => (await c.request(refs[0]!, { op: 'where' }, { timeoutMs: 500 }).catch(() => '')) === 'a', 5000, 'c reaches a');
    for (const ref of refs) expect(await c.request(ref, { op: 'where' })).toBe('a');

    // Continuous traffic from c: a one-way send per actor per round, a request per actor every 4th round.
    const failures: string[] = [];
    const requests: Promise<void>[] = [];
    let rounds = 0;
    let stop = false;
    const traffic = (async () => {
      while (!stop) {
        const n = rounds++;
        for (const ref of refs) c.send(ref, { op: 'seq', from: 'c', n });
        if (n % 4 === 0)
          for (const ref of refs)
            requests.push(
              c.request(ref, { op: 'seq', from: 'r', n }, { timeoutMs: 10_000 }).then(
                () => undefined,
                (error: unknown) => void failures.push(`request ${n} to ${(ref as { actor: string }).actor}: ${String(error)}`),
              ),
            );
        await sleep(2);
      }
    })();

    await sleep(30);
    casDelayed = true;
    const result = await a.relocate({ mode: RelocationMode.RollingUpdate, targetApplicationVersion: 2, deadlineMs: 10_000 });
    expect(result.outcome).toBe(RelocationOutcome.Relocated);
    // The owner records converge once the delayed CAS lands; keep sending a little longer.
    await eventually(async () => (await stack.stores.location.getMany(refs.map((r) => ({ kind: 'actor' as const, id: (r as { actor: string }).actor })))).every((r) => r?.owner.nodeId === 'b'), 5000, 'owner records name b');
    await sleep(100);
    stop = true;
    await traffic;
    await Promise.all(requests);

    // No request failed (in particular none with "route of … did not converge").
    expect({ failed: failures.length, first: failures.slice(0, 3) }).toEqual({ failed: 0, first: [] });
    // Every one-way message processed exactly once, in order, on b.
    const ledger = (ref: ObjectRef) => c.request(ref, { op: 'ledger' }, { timeoutMs: 5000 }) as Promise<Ledger>;
    const wrong: Record<string, string> = {};
    for (const ref of refs) {
      const state = await ledger(ref);
      const problem = checkSequence(state.seen.c, rounds);
      if (problem) wrong[(ref as { actor: string }).actor] = problem;
    }
    expect(wrong).toEqual({});
  }, 30_000);
});
