/**
 * DESIGN.md "Values and delivery": one codec for every application value. A message and a reply mean the same
 * thing wherever the receiver lives — on the caller's host, on another host, or after the Actor moved — and
 * values are copied at the call, so neither side sees the other's later mutation.
 *
 * Hosts: `caller` (registers no types, so it is never a relocation target), `owner` (hosts the Actor first) and
 * `next` (the relocation target). Placements: local = the call is made on the Actor's host; remote = from `caller`.
 */
import { deserialize, serialize } from 'node:v8';
import { defineActor, preserveState, RelocationMode, RelocationOutcome, type FrameworkRuntime } from '../../runtime';
import { eventually, makeStack, STACKS, type Stack } from '../support/stack';

type BoxMessage = { op: 'hold' } | { op: 'echo'; v: unknown } | { op: 'keep'; v: unknown } | { op: 'kept' } | { op: 'put'; v: { list: unknown[] } } | { op: 'mutate' } | { op: 'get' };

/** A type-exact description, computed on both sides: toEqual alone does not tell Buffer from Uint8Array. */
function sig(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v !== 'object' || v === null) return JSON.stringify(v);
  if (Buffer.isBuffer(v)) return `Buffer[${[...v].join(',')}]`;
  if (v instanceof Uint8Array) return `Uint8Array[${[...v].join(',')}]`;
  if (v instanceof Date) return `Date(${v.getTime()})`;
  if (v instanceof Map) return `Map{${[...v].map(([k, x]) => `${sig(k)}=>${sig(x)}`).join(',')}}`;
  if (v instanceof Set) return `Set{${[...v].map(sig).join(',')}}`;
  if (Array.isArray(v)) return `[${v.map(sig).join(',')}]`;
  return `{${Object.keys(v)
    .map((k) => `${k}:${sig((v as Record<string, unknown>)[k])}`)
    .join(',')}}`;
}

let release: (() => void) | undefined;

const Box = defineActor<{ kept: unknown; stored: { list: unknown[] } | undefined }>({
  type: 'Box',
  // The adapter is the application's; v8 keeps the exotic values of this test's state across the move.
  relocation: preserveState({ capture: (s) => serialize(s), restore: (b) => deserialize(b) }),
  create: () => ({ kept: undefined, stored: undefined }),
  receive: (state, m: BoxMessage) => {
    switch (m.op) {
      case 'hold':
        return new Promise<void>((resolve) => (release = resolve));
      case 'echo':
        return { got: m.v, sig: sig(m.v) };
      case 'keep':
        state.kept = m.v; // keeps the received object itself: a later caller mutation must not reach it
        return undefined;
      case 'kept':
        return sig(state.kept);
      case 'put':
        state.stored = m.v;
        return state.stored; // the live state object: the caller must get a copy
      case 'mutate':
        state.stored!.list.push('actor');
        return undefined;
      case 'get':
        return state.stored;
    }
  },
});

interface Row {
  readonly name: string;
  readonly value: () => unknown;
}

const rows: Row[] = [
  { name: 'Buffer', value: () => ({ v: Buffer.from([1, 2, 255]) }) },
  { name: 'Uint8Array', value: () => ({ v: new Uint8Array([7, 8]) }) },
  { name: 'Date', value: () => ({ v: new Date(1_700_000_000_123) }) },
  { name: 'Map', value: () => ({ v: new Map<unknown, unknown>([[1, { a: 1 }], ['k', [2]]]) }) },
  { name: 'Set', value: () => ({ v: new Set<unknown>([1, 'x', 3n]) }) },
  { name: 'BigInt', value: () => ({ v: 1n, big: 2n ** 80n, neg: -7n }) },
  { name: 'nested undefined', value: () => ({ a: undefined, b: { c: undefined, d: [undefined, 1] } }) },
];

type Placement = 'local' | 'remote';

describe.each(STACKS)('value semantics on %s', (stackName) => {
  let stack: Stack;
  let caller: FrameworkRuntime;
  let owner: FrameworkRuntime;
  let next: FrameworkRuntime;
  /** The host whose call is local (the Actor's current host). */
  let home: FrameworkRuntime;
  const box = { actor: 'box' };
  const on = (p: Placement) => (p === 'local' ? home : caller);

  beforeAll(async () => {
    stack = await makeStack(stackName);
    caller = await stack.host({ nodeId: 'caller', applicationVersion: 1, types: [] });
    owner = await stack.host({ nodeId: 'owner', applicationVersion: 1, types: [Box] });
    next = await stack.host({ nodeId: 'next', applicationVersion: 1, types: [Box] });
    await owner.createActor('Box', 'box');
    home = owner;
  }, 30_000);

  afterAll(() => stack.close(), 30_000);

  /** Both ways in: a request (echo) and a one-way send (kept, read back). Type-exact on both sides. */
  async function checkRow(row: Row, p: Placement): Promise<void> {
    const host = on(p);
    const reply = (await host.request(box, { op: 'echo', v: row.value() })) as { got: unknown; sig: string };
    expect({ placement: p, seenByActor: reply.sig }).toEqual({ placement: p, seenByActor: sig(row.value()) });
    expect({ placement: p, reply: sig(reply.got) }).toEqual({ placement: p, reply: sig(row.value()) });
    expect(reply.got).toEqual(row.value());
    host.send(box, { op: 'keep', v: row.value() });
    expect({ placement: p, kept: await host.request(box, { op: 'kept' }) }).toEqual({ placement: p, kept: sig(row.value()) });
  }

  async function checkMutationAfterSend(p: Placement): Promise<void> {
    const host = on(p);
    const message = { list: [1] as unknown[] };
    host.send(box, { op: 'keep', v: message });
    message.list.push('caller after send');
    const viaRequest = { list: [2] as unknown[] };
    const pending = host.request(box, { op: 'echo', v: viaRequest });
    viaRequest.list.push('caller after request');
    expect({ p, kept: await host.request(box, { op: 'kept' }) }).toEqual({ p, kept: '{list:[1]}' });
    expect({ p, echoed: ((await pending) as { sig: string }).sig }).toEqual({ p, echoed: '{list:[2]}' });
  }

  async function checkReplyMutation(p: Placement): Promise<void> {
    const host = on(p);
    const reply = (await host.request(box, { op: 'put', v: { list: [1] } })) as { list: unknown[] };
    reply.list.push('caller');
    expect({ p, state: await host.request(box, { op: 'get' }) }).toEqual({ p, state: { list: [1] } });
    await host.request(box, { op: 'mutate' });
    expect({ p, earlierReply: reply }).toEqual({ p, earlierReply: { list: [1, 'caller'] } });
    expect({ p, state: await host.request(box, { op: 'get' }) }).toEqual({ p, state: { list: [1, 'actor'] } });
  }

  describe('before the move', () => {
    test.each(rows.map((r) => [r.name, r] as const))('%s round-trips the same locally and remotely', async (_n, row) => {
      await checkRow(row, 'local');
      await checkRow(row, 'remote');
    });
    test('mutation after send: the Actor never sees it (local and remote)', async () => {
      await checkMutationAfterSend('local');
      await checkMutationAfterSend('remote');
    });
    test('mutation of a returned reply: neither side sees the other (local and remote)', async () => {
      await checkReplyMutation('local');
      await checkReplyMutation('remote');
    });
  });

  describe('after the Actor moved to another host', () => {
    /** Work queued at the seal travels inside the relocation payload (§9): its values must arrive unchanged. */
    const queuedValue = () => ({ b: Buffer.from([9]), u: new Uint8Array([1]), d: new Date(5), m: new Map([[1n, new Set([undefined])]]), x: undefined });
    let queuedEcho: Promise<unknown>;
    let queuedRemoteEcho: Promise<unknown>;

    beforeAll(async () => {
      release = undefined;
      const held = owner.request(box, { op: 'hold' });
      owner.send(box, { op: 'keep', v: queuedValue() });
      queuedEcho = owner.request(box, { op: 'echo', v: queuedValue() });
      queuedRemoteEcho = caller.request(box, { op: 'echo', v: queuedValue() });
      await eventually(() => release !== undefined, 5000, 'the hold turn running');
      const relocation = owner.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 20_000 });
      await eventually(() => (owner.diagnostics().units.sourceByState['safePoint'] ?? 0) === 1, 5000, 'unit waiting for the turn to end');
      release!();
      await held;
      const result = await relocation;
      expect(result.outcome).toBe(RelocationOutcome.Relocated);
      // §11: the target's CAS may land shortly after the result.
      await eventually(async () => (await caller.locate(box))?.nodeId === 'next', 10_000, 'the Location Store names the target');
      home = next;
    }, 30_000);

    test('messages queued at the seal moved inside the payload and arrived with the same values', async () => {
      const expected = sig(queuedValue());
      expect(((await queuedEcho) as { sig: string }).sig).toBe(expected);
      expect(sig(((await queuedEcho) as { got: unknown }).got)).toBe(expected);
      expect(((await queuedRemoteEcho) as { sig: string }).sig).toBe(expected);
      // The one-way 'keep' queued before the echoes ran on the target first; later tests overwrite it.
      expect(await caller.request(box, { op: 'kept' })).toBe(expected);
    });
    test.each(rows.map((r) => [r.name, r] as const))('%s round-trips the same locally and remotely', async (_n, row) => {
      await checkRow(row, 'local');
      await checkRow(row, 'remote');
    });
    test('mutation after send: the Actor never sees it (local and remote)', async () => {
      await checkMutationAfterSend('local');
      await checkMutationAfterSend('remote');
    });
    test('mutation of a returned reply: neither side sees the other (local and remote)', async () => {
      await checkReplyMutation('local');
      await checkReplyMutation('remote');
    });
  });
});
