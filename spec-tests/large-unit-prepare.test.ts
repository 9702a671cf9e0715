/**
 * One SpotWide unit whose key list alone exceeds the transport's frame limit (issue [6/10], Relocation at scale:
 * a Spot with ~250k members at the default 4 MiB) still relocates: its prepare travels as `r.prepareKeys` parts
 * and the target assembles them (runtime/relocation/prepare-assembly.ts). The frame limit is lowered here so a
 * few thousand members are enough; on both stacks.
 */
import {
  defineActor,
  defineSpot,
  preserveState,
  RelocationMode,
  RelocationOutcome,
  RelocationReason,
  UNIT_CHANGED,
  type FrameworkRuntime,
  type UnitEvent,
} from '../runtime';
import { RELOCATION_MESSAGE } from '../runtime/relocation/protocol';
import { createTransport, type RuntimeMessage, type TransportOptions } from '../transport';
import { batchFrameBytes, encodeMessage } from '../transport/frames';
import { eventually, makeStack, STACKS, type Stack } from './support/stack';

/** Frames of at most 16 KiB (chunks of 8 KiB): 1,500 member keys (~20 KiB) do not fit one. */
const FRAME = 16 * 1024;
const CHUNK = 8 * 1024;
const MEMBERS = 1500;

const json = <S>() => preserveState<S>({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString('utf8')) as S });
type State = { n: number };
const receive = (state: State, message: { op: 'add' | 'where' }, ctx: { nodeId: string }) => (message.op === 'add' ? ++state.n : ctx.nodeId);
const Member = defineActor<State>({ type: 'WideMember', relocation: json<State>(), create: () => ({ n: 0 }), receive });
const Wide = defineSpot<State>({ type: 'Wide', kind: 'user', executionMode: 'SpotWide', relocation: json<State>(), create: () => ({ n: 0 }), receive: receive as never });

describe.each(STACKS)('a SpotWide unit whose keys exceed one frame, on %s', (stackName) => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await makeStack(stackName);
  });
  afterEach(async () => {
    await stack.close();
  });

  /** A host whose transport has the small frame limit; `seen` records the relocation message types it receives. */
  const host = (nodeId: string, seen: string[] = []): Promise<FrameworkRuntime> =>
    stack.host({
      nodeId,
      applicationVersion: 1,
      types: [Member, Wide],
      transport: (options: TransportOptions) =>
        createTransport({
          ...options,
          maxFrameBytes: FRAME,
          chunkBytes: CHUNK,
          handlers: {
            ...options.handlers,
            onMessage: (from, message: RuntimeMessage) => {
              if (message.t.startsWith('r.')) seen.push(message.t);
              options.handlers.onMessage(from, message);
            },
          },
        }),
    });

  test('its prepare goes in parts, the target assembles it, and the Spot with every member relocates', async () => {
    const source = await host('source');
    const targetSeen: string[] = [];
    const target = await host('target', targetSeen);
    const targetEvents: UnitEvent[] = [];
    target.on(UNIT_CHANGED, (e) => targetEvents.push(e));

    await source.createSpot('Wide', 'wide');
    const ids = Array.from({ length: MEMBERS }, (_, i) => `wide-member-${i}`);
    for (let i = 0; i < MEMBERS; i += 250) await Promise.all(ids.slice(i, i + 250).map((id) => source.createActor('WideMember', id, { spot: 'wide' })));
    await source.request({ spot: 'wide' }, { op: 'add' });
    await source.request({ actor: ids[MEMBERS - 1]! }, { op: 'add' });

    // As one r.prepare, this unit would not fit a frame: without parts, it could never leave.
    const keys = ['s:wide', ...ids.map((id) => `a:${id}`)];
    const whole = { t: RELOCATION_MESSAGE.prepare, units: [{ u: 'unit-id-of-this-length', kind: 'spotWide', keys, ty: [0, 1] }], types: [] };
    expect(batchFrameBytes(encodeMessage(whole).length, 1)).toBeGreaterThan(FRAME);

    const result = await source.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 30_000 });
    expect(result).toEqual({ mode: RelocationMode.PlannedMaintenance, targetApplicationVersion: 1, outcome: RelocationOutcome.Relocated, reason: RelocationReason.None });

    const parts = targetSeen.filter((t) => t === RELOCATION_MESSAGE.prepareKeys).length;
    expect(parts).toBeGreaterThanOrEqual(3);
    expect(targetSeen).not.toContain(RELOCATION_MESSAGE.prepare); // the only unit went in parts
    await eventually(() => targetEvents.some((e) => e.state === 'opened'), 15_000, 'target opened the unit');
    const committed = targetEvents.filter((e) => e.state === 'committed');
    expect(committed).toHaveLength(1);
    expect(committed[0]!.kind).toBe('spotWide');
    expect(new Set(committed[0]!.objects)).toEqual(new Set(keys));

    // Every object is owned and served by the target, state included.
    for (const i of [0, 749, MEMBERS - 1]) expect((await source.locate({ actor: ids[i]! }))?.nodeId).toBe('target');
    expect(await target.request({ spot: 'wide' }, { op: 'where' })).toBe('target');
    expect(await target.request({ spot: 'wide' }, { op: 'add' })).toBe(2);
    expect(await target.request({ actor: ids[MEMBERS - 1]! }, { op: 'add' })).toBe(2);
    expect(await target.request({ actor: ids[0]! }, { op: 'add' })).toBe(1);
  }, 60_000);
});
