/**
 * Slot safety of the key layout: every key one script or command touches hashes to one Redis Cluster slot. The
 * cluster itself only refuses a script's key that lives on another node (Redis 7 lets an undeclared key of another
 * slot on the same node pass), so the layout is checked here for every script's key set, with ids full of the
 * characters that could break a hash tag.
 */
import { RedisKeys } from './keys';
import { hashSlot } from './slot';

const ids = ['plain', 'with:colon', 'br{ace}s', '}{', 'tab\tand\nnewline', 'ünï', ''.padEnd(300, 'x')];
const prefixes = ['', 'app:', 'zlink:test:cluster:0a1b2c:'];

const sameSlot = (keys: readonly string[]) => expect(new Set(keys.map(hashSlot)).size).toBe(1);

describe.each(prefixes)('key prefix %j', (prefix) => {
  const keys = new RedisKeys(prefix);

  test.each(ids)('owner records of %j: claim, cas, remove, install each stay in one slot', (id) => {
    for (const kind of ['actor', 'spot'] as const) {
      const home = keys.home({ kind, id });
      sameSlot([home, keys.op(home, 'op-1'), keys.op(home, 'op:{2}')]);
    }
    for (const spot of ids) {
      const member = keys.member(spot, id);
      sameSlot([member, keys.op(member, 'op-1'), keys.home({ kind: 'spot', id: spot })]);
      expect(keys.placement(id, spot, true)).toBe(member);
    }
  });

  test.each(ids)('a SpotWide aggregate of spot %j: spot record, staged header and pages, members, op keys', (spot) => {
    const spotKey = keys.home({ kind: 'spot', id: spot });
    const staged = keys.staged(spot, 'ab'.repeat(16));
    sameSlot([spotKey, keys.op(spotKey, 'o'), staged.header, keys.op(staged.header, 'o'), `${staged.pageBase}1`, `${staged.pageBase}12`, ...ids.map((id) => keys.member(spot, id)), `${keys.memberBase(spot)}x`]);
  });

  test('descriptors, leases, lifecycle counters and the acquire op key share {d} (one list() snapshot)', () => {
    sameSlot([keys.nodes, keys.op(keys.nodes, 'token'), ...ids.flatMap((id) => [keys.lease(id), keys.descriptor(id), keys.lifecycle(id)]), `${keys.leaseBase}x`, `${keys.descriptorBase}x`]);
  });

  test.each(ids)('relocation store records of %j: one key each', (id) => {
    expect(keys.instance(id)).toMatch(/^[^{]*\{i:[^{}]*\}$/);
    expect(keys.terminal(id)).toMatch(/^[^{]*\{r:[^{}]*\}$/);
  });
});

test('objects spread over slots (one hot slot would put every record on one master)', () => {
  const keys = new RedisKeys('app:');
  const slots = new Set(Array.from({ length: 1000 }, (_, i) => hashSlot(keys.home({ kind: 'actor', id: `counter-${i}` }))));
  expect(slots.size).toBeGreaterThan(900);
});
