/**
 * The one contract every provider is held to (stores/memory/memory.test.ts, stores/redis/redis.test.ts on one server,
 * stores/redis/cluster.test.ts on a Redis Cluster).
 * A harness gives the suite a fresh Stores plus the two things the interface cannot do: move time (memory:
 * the injected clock; Redis: a real wait on short leases) and tamper with a staged page (to prove data-lost).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { FrameworkRuntimeState } from '../vocabulary';
import { LeaseHeldError } from './lease-held-error';
import type { AggregateMember, NodeDescriptor, NodeRef, ObjectId, OwnerRecord, Stores } from './types';

export interface StoreHarness {
  readonly stores: Stores;
  /** Lets `ms` of lease/TTL time pass. */
  advance(ms: number): Promise<void>;
  /** Changes the content of staged page `page` (0-based) of a relocation without touching its header. */
  tamperPage(relocationId: string, spotId: string, page: number): Promise<void>;
}

/**
 * A TTL a test expects to still hold for its next few calls, then waits out (a real sleep on Redis): long enough that
 * a loaded CI machine does not let it lapse between two commands (60 ms did, once, on the cluster stack).
 */
const SHORT_TTL_MS = 500;
const PAST_SHORT_TTL_MS = SHORT_TTL_MS + 300;
const nodeA: NodeRef = { nodeId: 'node-a', lifecycleGeneration: 1 };
const nodeB: NodeRef = { nodeId: 'node-b', lifecycleGeneration: 3 };
const op = (): string => randomUUID();
const relocationId = (): string => randomBytes(16).toString('hex');
const actor = (id: string): ObjectId => ({ kind: 'actor', id });
const spot = (id: string): ObjectId => ({ kind: 'spot', id });
/** Ids unique per test run, so suites against one shared server never see each other's records. */
const unique = (name: string): string => `${name}-${randomBytes(4).toString('hex')}`;

export function describeStoreContract(name: string, makeHarness: () => StoreHarness): void {
  describe(`store contract: ${name}`, () => {
    let h: StoreHarness;
    let location: Stores['location'];
    beforeAll(() => {
      h = makeHarness();
      location = h.stores.location;
    });
    afterAll(() => h.stores.close());

    const claimActor = (id: string, owner = nodeA, membership: { spot?: string; spotWide?: boolean } = {}) =>
      location.claim({ object: actor(id), type: 'Counter', owner, opId: op(), ...membership });

    describe('owner records', () => {
      test('claim creates once; a second claim returns the record as it is; a replayed opId returns its result', async () => {
        const id = unique('claim');
        const opId = op();
        const first = await location.claim({ object: actor(id), type: 'Counter', owner: nodeA, opId });
        expect(first).toEqual({
          applied: true,
          record: { kind: 'actor', id, type: 'Counter', owner: nodeA, objectGeneration: 1, authorityGeneration: 1 },
        });
        expect(await claimActor(id, nodeB)).toEqual({ applied: false, record: first.record });
        expect(await location.claim({ object: actor(id), type: 'Counter', owner: nodeA, opId })).toEqual(first);
        expect(await location.get(actor(id))).toEqual(first.record);
      });

      test('cas bumps the authority generation; a stale generation conflicts; an absent record is missing', async () => {
        const id = unique('cas');
        await claimActor(id);
        const moved = await location.cas({ object: actor(id), opId: op(), expectedAuthorityGeneration: 1, owner: nodeB });
        expect(moved.status).toBe('applied');
        expect(moved.record).toMatchObject({ owner: nodeB, authorityGeneration: 2, objectGeneration: 1 });
        const stale = await location.cas({ object: actor(id), opId: op(), expectedAuthorityGeneration: 1, owner: nodeA });
        expect(stale).toEqual({ status: 'conflict', record: moved.record });
        expect(await location.cas({ object: actor(unique('none')), opId: op(), expectedAuthorityGeneration: 1 })).toEqual({ status: 'missing' });
      });

      test('a replayed cas opId returns the recorded result and does not apply twice', async () => {
        const id = unique('replay');
        await claimActor(id);
        const request = { object: actor(id), opId: op(), expectedAuthorityGeneration: 1, owner: nodeB };
        const first = await location.cas(request);
        await location.cas({ object: actor(id), opId: op(), expectedAuthorityGeneration: 2, owner: nodeA });
        expect(await location.cas(request)).toEqual(first);
        expect((await location.get(actor(id)))?.authorityGeneration).toBe(3);
      });

      test('spot membership: PerActor, SpotWide join and leave keep get() finding the record', async () => {
        const id = unique('member');
        const room = unique('room');
        await claimActor(id);
        const perActor = await location.cas({ object: actor(id), opId: op(), expectedAuthorityGeneration: 1, spot: room, spotWide: false });
        expect(perActor.record).toMatchObject({ spot: room, authorityGeneration: 2 });
        expect(perActor.record?.spotWide).toBeUndefined();
        const joined = await location.cas({ object: actor(id), opId: op(), expectedAuthorityGeneration: 2, spot: room, spotWide: true });
        expect(joined.record).toMatchObject({ spot: room, spotWide: true, authorityGeneration: 3 });
        expect(await location.get(actor(id))).toEqual(joined.record);
        const owned = await location.cas({ object: actor(id), opId: op(), expectedAuthorityGeneration: 3, owner: nodeB });
        expect(await location.get(actor(id))).toEqual(owned.record);
        const left = await location.cas({ object: actor(id), opId: op(), expectedAuthorityGeneration: 4, spot: null });
        expect(left.record).toEqual({ kind: 'actor', id, type: 'Counter', owner: nodeB, objectGeneration: 1, authorityGeneration: 5 });
        expect(await location.get(actor(id))).toEqual(left.record);
        expect(await location.getMany([actor(id), actor(unique('none'))])).toEqual([left.record, undefined]);
      });

      test('a SpotWide member claimed into its Spot, removed, and re-created continues its generations', async () => {
        const id = unique('wide');
        const room = unique('room');
        const created = await claimActor(id, nodeA, { spot: room, spotWide: true });
        expect(created.record).toMatchObject({ spot: room, spotWide: true, authorityGeneration: 1 });
        expect(await location.getMany([actor(id)])).toEqual([created.record]);
        expect((await claimActor(id, nodeB)).applied).toBe(false);
        expect((await location.remove({ object: actor(id), opId: op(), expectedAuthorityGeneration: 7 })).status).toBe('conflict');
        expect(await location.remove({ object: actor(id), opId: op(), expectedAuthorityGeneration: 1 })).toEqual({ status: 'applied' });
        expect(await location.get(actor(id))).toBeUndefined();
        expect(await location.remove({ object: actor(id), opId: op(), expectedAuthorityGeneration: 2 })).toEqual({ status: 'missing' });
        const again = await claimActor(id, nodeB);
        expect(again).toMatchObject({ applied: true, record: { objectGeneration: 2, authorityGeneration: 3, owner: nodeB } });
        expect(again.record.spot).toBeUndefined();
      });

      test('casMany: independent results, in order, one per request', async () => {
        const ids = Array.from({ length: 128 }, (_, i) => unique(`many${i}`));
        await Promise.all(ids.map((id) => claimActor(id)));
        const results = await location.casMany(
          ids.map((id, i) => ({ object: actor(id), opId: op(), expectedAuthorityGeneration: i % 4 === 0 ? 9 : 1, owner: nodeB })),
        );
        results.forEach((result, i) => {
          expect(result.status).toBe(i % 4 === 0 ? 'conflict' : 'applied');
          expect(result.record).toMatchObject({ id: ids[i], authorityGeneration: i % 4 === 0 ? 1 : 2 });
        });
      });

      describe('commitOwners (a relocation target commit)', () => {
        const entry = (id: string, expectedAuthorityGeneration = 1, objectGeneration = 1) => ({ object: actor(id), expectedAuthorityGeneration, objectGeneration });

        test('every entry goes to the owner at its generation + 1; a stale or missing one answers alone, in order', async () => {
          const ids = Array.from({ length: 130 }, (_, i) => unique(`commit${i}`));
          await Promise.all(ids.filter((_, i) => i % 10 !== 9).map((id) => claimActor(id)));
          const results = await location.commitOwners({ opId: op(), owner: nodeB, entries: ids.map((id, i) => entry(id, i % 4 === 0 ? 7 : 1)) });
          expect(results).toHaveLength(ids.length);
          results.forEach((result, i) => {
            if (i % 10 === 9) return expect(result).toEqual({ status: 'missing' });
            if (i % 4 === 0) return expect(result).toMatchObject({ status: 'conflict', record: { id: ids[i], owner: nodeA, authorityGeneration: 1 } });
            expect(result).toEqual({ status: 'applied', record: { kind: 'actor', id: ids[i], type: 'Counter', owner: nodeB, objectGeneration: 1, authorityGeneration: 2 } });
          });
          const records = await location.getMany(ids.map(actor));
          records.forEach((record, i) => (i % 10 === 9 ? expect(record).toBeUndefined() : expect(record).toEqual(results[i]!.record)));
        });

        test('a replayed opId answers the recorded results and writes nothing', async () => {
          const ids = [unique('creplay'), unique('creplay')];
          await Promise.all(ids.map((id) => claimActor(id)));
          const request = { opId: op(), owner: nodeB, entries: ids.map((id) => entry(id)) };
          const first = await location.commitOwners(request);
          await location.cas({ object: actor(ids[0]!), opId: op(), expectedAuthorityGeneration: 2, owner: nodeA });
          expect(await location.commitOwners(request)).toEqual(first);
          expect((await location.getMany(ids.map(actor))).map((r) => [r?.owner, r?.authorityGeneration])).toEqual([
            [nodeA, 3],
            [nodeB, 2],
          ]);
        });

        test("an entry this owner committed before (a retry under a new opId) answers applied and writes nothing; anyone else's change is a conflict", async () => {
          const [mine, other, recreated] = [unique('cretry'), unique('cretry'), unique('cretry')];
          await Promise.all([mine, other, recreated].map((id) => claimActor(id)));
          const committed = await location.commitOwners({ opId: op(), owner: nodeB, entries: [entry(mine)] });
          await location.cas({ object: actor(other), opId: op(), expectedAuthorityGeneration: 1, owner: { ...nodeB, lifecycleGeneration: 4 } });
          const removed = await location.remove({ object: actor(recreated), opId: op(), expectedAuthorityGeneration: 1 });
          expect(removed.status).toBe('applied');
          await claimActor(recreated, nodeB); // objectGeneration 2 at authority 3: names nodeB at 2 + 1, but a new object
          const retry = await location.commitOwners({ opId: op(), owner: nodeB, entries: [entry(mine), entry(other), entry(recreated, 2, 1)] });
          expect(retry[0]).toEqual(committed[0]);
          expect(retry[1]).toMatchObject({ status: 'conflict', record: { owner: { ...nodeB, lifecycleGeneration: 4 }, authorityGeneration: 2 } });
          expect(retry[2]).toMatchObject({ status: 'conflict', record: { owner: nodeB, objectGeneration: 2, authorityGeneration: 3 } });
          expect((await location.get(actor(mine)))?.authorityGeneration).toBe(2);
        });

        test('membership stays: a PerActor member, a SpotWide member (its record beside its Spot) and a Spot record', async () => {
          const [perActor, spotWide, room] = [unique('cmember'), unique('cmember'), unique('croom')];
          await claimActor(perActor, nodeA, { spot: room, spotWide: false });
          await claimActor(spotWide, nodeA, { spot: room, spotWide: true });
          await location.claim({ object: spot(room), type: 'Room', owner: nodeA, opId: op() });
          const results = await location.commitOwners({
            opId: op(),
            owner: nodeB,
            entries: [entry(perActor), entry(spotWide), { object: spot(room), expectedAuthorityGeneration: 1, objectGeneration: 1 }],
          });
          expect(results.map((r) => r.status)).toEqual(['applied', 'applied', 'applied']);
          expect(results[0]!.record).toMatchObject({ owner: nodeB, spot: room, authorityGeneration: 2 });
          expect(results[0]!.record?.spotWide).toBeUndefined();
          expect(results[1]!.record).toMatchObject({ owner: nodeB, spot: room, spotWide: true, authorityGeneration: 2 });
          expect(results[2]!.record).toMatchObject({ kind: 'spot', owner: nodeB, authorityGeneration: 2 });
          expect(await location.getMany([actor(perActor), actor(spotWide), spot(room)])).toEqual(results.map((r) => r.record));
        });

        test('bad input is a TypeError naming the field, and nothing is written', async () => {
          const id = unique('cbad');
          await claimActor(id);
          await expect(location.commitOwners({ opId: op(), owner: nodeB, entries: [] })).rejects.toThrow(/commitOwners: field 'entries'/);
          await expect(location.commitOwners({ opId: op(), owner: nodeB, entries: [entry(id), entry(id, 1.5)] })).rejects.toThrow(
            /entries\.1\.expectedAuthorityGeneration/,
          );
          await expect(location.commitOwners({ opId: op(), owner: nodeB, entries: [{ ...entry(id), objectGeneration: -1 }] })).rejects.toThrow(
            /entries\.0\.objectGeneration/,
          );
          await expect(location.commitOwners({ opId: '', owner: nodeB, entries: [entry(id)] })).rejects.toThrow(/opId/);
          await expect(location.commitOwners({ opId: op(), owner: { nodeId: '', lifecycleGeneration: 1 }, entries: [entry(id)] })).rejects.toThrow(
            /owner\.nodeId/,
          );
          expect(await location.get(actor(id))).toMatchObject({ owner: nodeA, authorityGeneration: 1 });
        });
      });

      test('getMany over more records than one read command takes: each in its place, a missing one undefined', async () => {
        const ids = Array.from({ length: 2500 }, (_, i) => unique(`read${i}`));
        const present = (i: number) => i % 7 !== 3;
        for (let i = 0; i < ids.length; i += 500) await Promise.all(ids.slice(i, i + 500).filter((_, j) => present(i + j)).map((id) => claimActor(id)));
        const records = await location.getMany(ids.map(actor));
        expect(records).toHaveLength(ids.length);
        records.forEach((record, i) => (present(i) ? expect(record).toMatchObject({ id: ids[i], owner: nodeA, authorityGeneration: 1 }) : expect(record).toBeUndefined()));
      });

      test('casMany: entries with different owners in one call each get their own owner', async () => {
        const ids = Array.from({ length: 12 }, (_, i) => unique(`mixed${i}`));
        await Promise.all(ids.map((id) => claimActor(id)));
        const ownerOf = (i: number): NodeRef => (i % 3 === 0 ? nodeB : i % 3 === 1 ? { nodeId: `node-c${i}`, lifecycleGeneration: 4 } : { ...nodeA });
        const results = await location.casMany(ids.map((id, i) => ({ object: actor(id), opId: op(), expectedAuthorityGeneration: i === 5 ? 3 : 1, owner: ownerOf(i) })));
        results.forEach((result, i) => {
          if (i === 5) return expect(result).toMatchObject({ status: 'conflict', record: { owner: nodeA, authorityGeneration: 1 } });
          expect(result).toMatchObject({ status: 'applied', record: { id: ids[i], owner: ownerOf(i), authorityGeneration: 2 } });
        });
        expect((await location.getMany(ids.map(actor))).map((r) => r?.owner)).toEqual(ids.map((_, i) => (i === 5 ? nodeA : ownerOf(i))));
      });

      test('bad input is a TypeError naming the field, and nothing is written', async () => {
        const id = unique('bad');
        await expect(location.claim({ object: actor(''), type: 'T', owner: nodeA, opId: op() })).rejects.toThrow(/object\.id/);
        await claimActor(id);
        await expect(location.cas({ object: actor(id), opId: op(), expectedAuthorityGeneration: 1.5 })).rejects.toThrow(TypeError);
        await expect(location.cas({ object: actor(id), opId: op(), expectedAuthorityGeneration: 1.5 })).rejects.toThrow(/expectedAuthorityGeneration/);
        await expect(location.cas({ object: actor(id), opId: '', expectedAuthorityGeneration: 1 })).rejects.toThrow(/opId/);
        await expect(
          location.cas({ object: actor(id), opId: op(), expectedAuthorityGeneration: 1, owner: { nodeId: 'x', lifecycleGeneration: -1 } }),
        ).rejects.toThrow(/owner\.lifecycleGeneration/);
        await expect(location.casMany([{ object: spot(id), opId: op(), expectedAuthorityGeneration: 1, spot: 'r' }])).rejects.toThrow(/casMany\[0\].*spot/);
        expect((await location.get(actor(id)))?.authorityGeneration).toBe(1);
      });
    });

    describe('SpotWide aggregate CAS (§10.3)', () => {
      async function aggregate(size: number) {
        const room = unique('agg');
        await location.claim({ object: spot(room), type: 'Room', owner: nodeA, opId: op() });
        const ids = Array.from({ length: size }, (_, i) => `${room}-m${i}`);
        for (let i = 0; i < ids.length; i += 1000)
          await Promise.all(ids.slice(i, i + 1000).map((id) => claimActor(id, nodeA, { spot: room, spotWide: true })));
        const members: AggregateMember[] = ids.map((id) => ({ object: actor(id), expectedAuthorityGeneration: 1 }));
        const rid = relocationId();
        const header = await location.stageAggregate({ relocationId: rid, spot: spot(room), expectedSpotAuthorityGeneration: 1, members, opId: op() });
        const commit = (opId = op()) => location.commitAggregate({ relocationId: rid, spot: spot(room), owner: nodeB, opId, header });
        return { room, ids, rid, header, commit };
      }
      const owners = async (ids: readonly string[]): Promise<OwnerRecord[]> =>
        (await location.getMany(ids.map(actor))).map((record) => record!);

      test.each([2500, 10_000])('%d members flip with the spot in one commit', async (size) => {
        const { room, ids, header, commit } = await aggregate(size);
        expect(header.total).toBe(size);
        expect(header.pageChecksums.length).toBe(Math.ceil(size / 1024));
        const opId = op();
        const result = await commit(opId);
        expect(result.status).toBe('applied');
        expect(result.spot).toMatchObject({ id: room, owner: nodeB, authorityGeneration: 2 });
        const records = await owners(ids);
        expect(records.every((record) => record.owner.nodeId === 'node-b' && record.authorityGeneration === 2)).toBe(true);
        expect(await commit(opId)).toEqual(result);
        expect((await commit()).status).toBe('conflict');
      });

      test('a tampered page is data-lost and nothing changes', async () => {
        const { room, ids, rid, commit } = await aggregate(2500);
        await h.tamperPage(rid, room, 1);
        expect(await commit()).toEqual({ status: 'data-lost' });
        expect((await location.get(spot(room)))?.owner).toEqual(nodeA);
        expect((await owners(ids)).every((record) => record.owner.nodeId === 'node-a' && record.authorityGeneration === 1)).toBe(true);
      });

      test('a header that does not match the staged one, or a discarded list, is data-lost', async () => {
        const { room, rid, header, commit } = await aggregate(30);
        expect(header.pageChecksums).toHaveLength(1);
        const wrong = { ...header, total: header.total - 1 };
        expect(await location.commitAggregate({ relocationId: rid, spot: spot(room), owner: nodeB, opId: op(), header: wrong })).toEqual({
          status: 'data-lost',
        });
        await location.discardAggregate(rid, spot(room));
        await location.discardAggregate(rid, spot(room));
        expect(await commit()).toEqual({ status: 'data-lost' });
      });

      test('a moved member authority is a conflict and nothing changes', async () => {
        const { room, ids, commit } = await aggregate(2500);
        expect((await location.get(spot(room)))?.authorityGeneration).toBe(1);
        await location.cas({ object: actor(ids[1234]!), opId: op(), expectedAuthorityGeneration: 1, owner: nodeA });
        const result = await commit();
        expect(result.status).toBe('conflict');
        expect(result.spot).toMatchObject({ owner: nodeA, authorityGeneration: 1 });
        const records = await owners(ids);
        expect(records.filter((record) => record.authorityGeneration !== 1).map((record) => record.id)).toEqual([ids[1234]]);
        expect(records.every((record) => record.owner.nodeId === 'node-a')).toBe(true);
      });

      test('a moved spot authority, or a member that left the spot, is a conflict', async () => {
        const first = await aggregate(5);
        await location.cas({ object: spot(first.room), opId: op(), expectedAuthorityGeneration: 1, owner: nodeA });
        expect((await first.commit()).status).toBe('conflict');
        const second = await aggregate(5);
        await location.cas({ object: actor(second.ids[0]!), opId: op(), expectedAuthorityGeneration: 1, spot: null });
        expect((await second.commit()).status).toBe('conflict');
        expect((await location.get(spot(second.room)))?.owner).toEqual(nodeA);
      });

      test('an empty aggregate flips only the spot', async () => {
        const { room, header, commit } = await aggregate(0);
        expect(header).toMatchObject({ total: 0, pageChecksums: [] });
        expect((await commit()).spot).toMatchObject({ id: room, owner: nodeB });
      });

      test('bad aggregate input is a TypeError naming the field', async () => {
        const base = { spot: spot('r'), expectedSpotAuthorityGeneration: 1, members: [], opId: op() };
        await expect(location.stageAggregate({ ...base, relocationId: '0'.repeat(32) })).rejects.toThrow(/relocationId/);
        const dup = { object: actor('a'), expectedAuthorityGeneration: 1 };
        await expect(location.stageAggregate({ ...base, relocationId: relocationId(), members: [dup, dup] })).rejects.toThrow(/members\.1/);
      });
    });

    describe('descriptors under owner leases', () => {
      const descriptor = (nodeId: string, lifecycleGeneration: number, load = 0): NodeDescriptor => ({
        nodeId,
        lifecycleGeneration,
        applicationVersion: 1,
        state: FrameworkRuntimeState.Serving,
        endpoints: { main: 'ws://127.0.0.1:1' },
        types: [{ type: 'Counter', kind: 'actor', policy: 'preserve', adapter: 'json' }],
        capacity: 10,
        load,
        weight: 1,
      });
      const mine = async (nodeId: string) => (await h.stores.descriptors.list()).filter((d) => d.nodeId === nodeId);

      test('lifecycle generations are new for every run', async () => {
        const nodeId = unique('node');
        const first = await h.stores.descriptors.nextLifecycleGeneration(nodeId);
        expect(await h.stores.descriptors.nextLifecycleGeneration(nodeId)).toBe(first + 1);
      });

      test('acquire, publish, renew, release', async () => {
        const { descriptors } = h.stores;
        const nodeId = unique('node');
        const lease = await descriptors.acquire(descriptor(nodeId, 1), 10_000);
        expect(lease).toMatchObject({ nodeId, lifecycleGeneration: 1 });
        expect(await mine(nodeId)).toEqual([descriptor(nodeId, 1)]);
        expect(await descriptors.publish(lease, descriptor(nodeId, 1, 5))).toBe(true);
        expect(await mine(nodeId)).toEqual([descriptor(nodeId, 1, 5)]);
        expect(await descriptors.renew(lease, 10_000)).toBe(true);
        expect(await descriptors.renew({ ...lease, token: 'f'.repeat(32) }, 10_000)).toBe(false);
        await descriptors.release(lease);
        await descriptors.release(lease);
        expect(await mine(nodeId)).toEqual([]);
        expect(await descriptors.renew(lease, 10_000)).toBe(false);
        expect(await descriptors.publish(lease, descriptor(nodeId, 1))).toBe(false);
      });

      test('an expired lease vanishes from list() and cannot be renewed', async () => {
        const { descriptors } = h.stores;
        const nodeId = unique('node');
        const lease = await descriptors.acquire(descriptor(nodeId, 1), SHORT_TTL_MS);
        expect(await descriptors.renew(lease, SHORT_TTL_MS)).toBe(true);
        await h.advance(PAST_SHORT_TTL_MS);
        expect(await mine(nodeId)).toEqual([]);
        expect(await descriptors.renew(lease, SHORT_TTL_MS)).toBe(false);
      });

      test('acquire is exclusive: a live lease refuses every other run, newer or older, with the time it has left', async () => {
        const { descriptors } = h.stores;
        const nodeId = unique('node');
        const live = await descriptors.acquire(descriptor(nodeId, 2), 10_000);
        for (const generation of [3, 2, 1]) {
          const refused = await descriptors.acquire(descriptor(nodeId, generation, 9), 10_000).catch((error: unknown) => error);
          expect(refused).toBeInstanceOf(LeaseHeldError);
          expect(refused).toMatchObject({ nodeId, heldGeneration: 2, requestedGeneration: generation });
          expect((refused as LeaseHeldError).leaseExpiresInMs).toBeGreaterThan(0);
          expect((refused as LeaseHeldError).leaseExpiresInMs).toBeLessThanOrEqual(10_000);
          expect((refused as LeaseHeldError).message).toContain(nodeId);
        }
        await descriptors.release(live);
      });

      test('a refused acquire changes nothing for the holder: its lease, descriptor and renewals stay', async () => {
        const { descriptors } = h.stores;
        const nodeId = unique('node');
        const live = await descriptors.acquire(descriptor(nodeId, 1), 10_000);
        expect(await descriptors.publish(live, descriptor(nodeId, 1, 4))).toBe(true);
        await expect(descriptors.acquire(descriptor(nodeId, 2, 7), 60)).rejects.toThrow(LeaseHeldError);
        expect(await mine(nodeId)).toEqual([descriptor(nodeId, 1, 4)]);
        // Had the loser shortened the lease to its own 60 ms, it would be gone after this wait.
        await h.advance(150);
        expect(await descriptors.renew(live, 10_000)).toBe(true);
        expect(await descriptors.publish(live, descriptor(nodeId, 1, 5))).toBe(true);
        expect(await mine(nodeId)).toEqual([descriptor(nodeId, 1, 5)]);
        await descriptors.release(live);
        expect(await mine(nodeId)).toEqual([]);
      });

      test('after the holder stops renewing (a crash), acquire succeeds once its lease expired; the old lease stays dead', async () => {
        const { descriptors } = h.stores;
        const nodeId = unique('node');
        const crashed = await descriptors.acquire(descriptor(nodeId, 1), SHORT_TTL_MS);
        await expect(descriptors.acquire(descriptor(nodeId, 2), 10_000)).rejects.toThrow(LeaseHeldError);
        await h.advance(PAST_SHORT_TTL_MS); // no renew, no release: the lease simply expires
        const next = await descriptors.acquire(descriptor(nodeId, 3), 10_000);
        expect(next).toMatchObject({ nodeId, lifecycleGeneration: 3 });
        expect(await mine(nodeId)).toEqual([descriptor(nodeId, 3)]);
        expect(await descriptors.renew(crashed, 10_000)).toBe(false);
        expect(await descriptors.publish(crashed, descriptor(nodeId, 1))).toBe(false);
        await descriptors.release(crashed);
        expect(await mine(nodeId)).toEqual([descriptor(nodeId, 3)]);
        await descriptors.release(next);
      });

      test('bad descriptor input is a TypeError naming the field', async () => {
        await expect(h.stores.descriptors.acquire({ ...descriptor('n', 1), capacity: -1 }, 1000)).rejects.toThrow(/capacity/);
        await expect(h.stores.descriptors.nextLifecycleGeneration('')).rejects.toThrow(TypeError);
      });
    });

    describe('relocation store (§9)', () => {
      const creation = (spotId: string, nodeId: string) => ({
        spotId,
        type: 'Shard',
        owner: { nodeId, lifecycleGeneration: 1 },
        objectGeneration: 1,
        createdAt: 1_700_000_000_000,
      });

      test('instance creation: first write wins; a replay of the winner still reports it won', async () => {
        const { relocation } = h.stores;
        const spotId = unique('shard');
        const opId = op();
        expect(await relocation.recordInstanceCreation(creation(spotId, 'node-a'), opId)).toBe(true);
        expect(await relocation.recordInstanceCreation(creation(spotId, 'node-a'), opId)).toBe(true);
        expect(await relocation.recordInstanceCreation(creation(spotId, 'node-b'), op())).toBe(false);
        expect(await relocation.getInstanceCreation(spotId)).toEqual(creation(spotId, 'node-a'));
        expect(await relocation.getInstanceCreation(unique('none'))).toBeUndefined();
      });

      test('instance creation: the record of one ObjectGeneration is removed once; a newer generation replaces an older record', async () => {
        const { relocation } = h.stores;
        const spotId = unique('shard');
        const gen = (objectGeneration: number, nodeId: string) => ({ ...creation(spotId, nodeId), objectGeneration });
        expect(await relocation.recordInstanceCreation(gen(1, 'node-a'), op())).toBe(true);
        // Another generation's removal keeps the record; its own removes it, once.
        expect(await relocation.removeInstanceCreation(spotId, 2)).toBe(false);
        expect(await relocation.getInstanceCreation(spotId)).toEqual(gen(1, 'node-a'));
        expect(await relocation.removeInstanceCreation(spotId, 1)).toBe(true);
        expect(await relocation.removeInstanceCreation(spotId, 1)).toBe(false);
        expect(await relocation.getInstanceCreation(spotId)).toBeUndefined();
        // Re-created after its close: the new generation is recorded.
        const opId = op();
        expect(await relocation.recordInstanceCreation(gen(2, 'node-b'), opId)).toBe(true);
        expect(await relocation.recordInstanceCreation(gen(2, 'node-b'), opId)).toBe(true);
        // A record left behind (never removed) does not block a newer generation; an older one never replaces it.
        expect(await relocation.recordInstanceCreation(gen(3, 'node-a'), op())).toBe(true);
        expect(await relocation.recordInstanceCreation(gen(2, 'node-c'), op())).toBe(false);
        expect(await relocation.recordInstanceCreation(gen(3, 'node-c'), op())).toBe(false);
        expect(await relocation.getInstanceCreation(spotId)).toEqual(gen(3, 'node-a'));
        await expect(relocation.removeInstanceCreation(spotId, -1)).rejects.toThrow(TypeError);
        await expect(relocation.removeInstanceCreation('', 1)).rejects.toThrow(TypeError);
      });

      test('request terminals: first write wins and expire after their TTL', async () => {
        const { relocation } = h.stores;
        const opId = op();
        expect(await relocation.recordRequestTerminal(opId, { ok: true, value: { n: 3 } }, SHORT_TTL_MS)).toBe(true);
        expect(await relocation.recordRequestTerminal(opId, { ok: false, error: 'late' }, SHORT_TTL_MS)).toBe(false);
        expect(await relocation.getRequestTerminal(opId)).toEqual({ ok: true, value: { n: 3 } });
        await h.advance(PAST_SHORT_TTL_MS);
        expect(await relocation.getRequestTerminal(opId)).toBeUndefined();
      });
    });

    describe('channel membership (Logical Multicast)', () => {
      test('join and leave: members() is one sorted snapshot; each write reports whether it changed membership', async () => {
        const { channels } = h.stores;
        const channel = unique('room:chat');
        expect(await channels.members(channel)).toEqual([]);
        expect(await channels.join(channel, { spot: 'b-spot' }, op())).toBe(true);
        expect(await channels.join(channel, { spot: 'a-shard', type: 'Shard' }, op())).toBe(true);
        expect(await channels.join(channel, { spot: 'b-spot' }, op())).toBe(false);
        expect(await channels.members(channel)).toEqual([{ spot: 'a-shard', type: 'Shard' }, { spot: 'b-spot' }]);
        expect(await channels.leave(channel, 'b-spot', op())).toBe(true);
        expect(await channels.leave(channel, 'b-spot', op())).toBe(false);
        expect(await channels.members(channel)).toEqual([{ spot: 'a-shard', type: 'Shard' }]);
        // Channels are independent of each other.
        expect(await channels.members(unique('other'))).toEqual([]);
      });

      test('a replayed opId returns its recorded result and does not apply again after a later leave', async () => {
        const { channels } = h.stores;
        const channel = unique('replay');
        const joinOp = op();
        expect(await channels.join(channel, { spot: 's1' }, joinOp)).toBe(true);
        expect(await channels.leave(channel, 's1', op())).toBe(true);
        // A late replay of the join (a retried command) must not bring the Spot back.
        expect(await channels.join(channel, { spot: 's1' }, joinOp)).toBe(true);
        expect(await channels.members(channel)).toEqual([]);
      });

      test('ids with braces, colons and spaces stay apart (one hash tag per Channel)', async () => {
        const { channels } = h.stores;
        const a = unique('{x}:a b');
        const b = unique('{x}:a');
        await channels.join(a, { spot: '{s}:1' }, op());
        await channels.join(b, { spot: 's 2' }, op());
        expect(await channels.members(a)).toEqual([{ spot: '{s}:1' }]);
        expect(await channels.members(b)).toEqual([{ spot: 's 2' }]);
      });

      test('bad channel input is a TypeError naming the field, and nothing is written', async () => {
        const { channels } = h.stores;
        const channel = unique('bad');
        await expect(channels.join('', { spot: 's' }, op())).rejects.toThrow(/channels\.join channel/);
        await expect(channels.join(channel, { spot: '' }, op())).rejects.toThrow(/field 'spot'/);
        await expect(channels.join(channel, { spot: 's', extra: 1 } as never, op())).rejects.toThrow(TypeError);
        await expect(channels.join(channel, { spot: 's' }, '')).rejects.toThrow(/opId/);
        await expect(channels.leave(channel, '', op())).rejects.toThrow(/channels\.leave spot/);
        expect(await channels.members(channel)).toEqual([]);
      });
    });

    test('ping answers', async () => {
      await expect(h.stores.ping()).resolves.toBeUndefined();
    });
  });
}
