import { SimulatedClock } from 'xstate';
import type { NodeRef, TypeCapability } from '../../stores/types';
import { batchFrameBytes, encodeMessage } from '../../transport/frames';
import type { RuntimeMessage, Transport } from '../../transport/types';
import { CONTROL_BATCH_BYTES, ControlBatcher, controlMessageBytes } from './control-batcher';
import { PrepareAssembly } from './prepare-assembly';
import { parseRelocationMessage, type PrepareKeysMessage, type PrepareMessage, type RelocationMessage } from './protocol';

const a: NodeRef = { nodeId: 'a', lifecycleGeneration: 1 };
const b: NodeRef = { nodeId: 'b', lifecycleGeneration: 1 };
const Counter: TypeCapability = { type: 'Counter', kind: 'actor', policy: 'preserve', adapter: 'json' };
const Lobby: TypeCapability = { type: 'Lobby', kind: 'user', policy: 'recreate', executionMode: 'SpotWide' };
const turn = () => new Promise((resolve) => setImmediate(resolve));

function recording(ok = true, maxFrameBytes?: number) {
  const sent: { peer: string; message: RuntimeMessage }[] = [];
  const transport = { maxFrameBytes, send: (peer: NodeRef, message: RuntimeMessage) => (sent.push({ peer: peer.nodeId, message }), ok) } as unknown as Transport;
  return { sent, transport };
}

describe('ControlBatcher', () => {
  test('the prepares of one turn go as one r.prepare per target, capabilities deduplicated and indexed per unit', async () => {
    const { sent, transport } = recording();
    const control = new ControlBatcher(() => transport);
    control.prepare(a, { u: 'u1', kind: 'actor', keys: ['a:1'] }, [Counter], () => undefined);
    control.prepare(a, { u: 'u2', kind: 'spotWide', keys: ['s:l', 'a:2'] }, [Lobby, Counter], () => undefined);
    control.prepare(b, { u: 'u3', kind: 'actor', keys: ['a:3'] }, [Counter], () => undefined);
    expect(sent).toEqual([]);
    await turn();
    expect(sent).toEqual([
      {
        peer: 'a',
        message: {
          t: 'r.prepare',
          units: [
            { u: 'u1', kind: 'actor', keys: ['a:1'], ty: [0] },
            { u: 'u2', kind: 'spotWide', keys: ['s:l', 'a:2'], ty: [1, 0] },
          ],
          types: [Counter, Lobby],
        },
      },
      { peer: 'b', message: { t: 'r.prepare', units: [{ u: 'u3', kind: 'actor', keys: ['a:3'], ty: [0] }], types: [Counter] } },
    ]);
    for (const { message } of sent) expect(parseRelocationMessage(message)).toBeDefined();
  });

  test('cutovers of one step go as one r.cutovers per target when flushed, after the prepares; each unit learns its submit', () => {
    const { sent, transport } = recording();
    const control = new ControlBatcher(() => transport);
    const submitted: [string, boolean][] = [];
    control.prepare(a, { u: 'u9', kind: 'actor', keys: ['a:9'] }, [Counter], () => undefined);
    control.cutover(a, 'u1', (ok) => submitted.push(['u1', ok]));
    control.cutover(a, 'u2'); // nobody listens for this unit's submit
    control.cutover(b, 'u3', (ok) => submitted.push(['u3', ok]));
    control.flush(a); // the step that cut them over ends: S1 is the submit (§8), no waiting for the turn's end
    expect(sent.map((s) => [s.peer, s.message.t])).toEqual([
      ['a', 'r.prepare'],
      ['a', 'r.cutovers'],
    ]);
    expect(sent[1]!.message).toEqual({ t: 'r.cutovers', us: ['u1', 'u2'] });
    expect(parseRelocationMessage(sent[1]!.message)).toBeDefined();
    expect(submitted).toEqual([['u1', true]]);
    control.flush(b);
    expect(submitted).toEqual([
      ['u1', true],
      ['u3', true],
    ]);
  });

  test('cutovers the transport did not take: each unit of that message learns it (its unit event), never a throw', () => {
    const { transport } = recording(false, 64 * 4);
    const control = new ControlBatcher(() => transport);
    const submitted: string[] = [];
    for (let i = 0; i < 40; i++) control.cutover(a, `unit-${i}`, (ok) => submitted.push(`${i}:${ok}`));
    control.flush(a);
    // split by the frame limit into several messages; each unit hears about the message that carried it
    expect(submitted).toEqual(Array.from({ length: 40 }, (_, i) => `${i}:false`));
  });

  test('replies of one turn go as one r.prepared and one r.ready per source, prepared first', async () => {
    const { sent, transport } = recording();
    const control = new ControlBatcher(() => transport);
    control.ready(a, 'u0');
    control.prepared(a, 'u1');
    control.prepared(a, 'u2');
    control.ready(a, 'u1');
    await turn();
    expect(sent.map((s) => s.message)).toEqual([
      { t: 'r.prepared', us: ['u1', 'u2'] },
      { t: 'r.ready', us: ['u0', 'u1'] },
    ]);
    await turn();
    expect(sent).toHaveLength(2); // nothing twice
  });

  test('flush(peer) sends that peer at once (a per-unit abort or fail never overtakes its batch); others wait for the turn', async () => {
    const { sent, transport } = recording();
    const control = new ControlBatcher(() => transport);
    control.prepare(a, { u: 'u1', kind: 'actor', keys: ['a:1'] }, [Counter], () => undefined);
    control.prepared(b, 'x');
    control.flush(a);
    expect(sent.map((s) => [s.peer, s.message.t])).toEqual([['a', 'r.prepare']]);
    control.flush(a); // nothing waiting: no message
    await turn();
    expect(sent.map((s) => [s.peer, s.message.t])).toEqual([
      ['a', 'r.prepare'],
      ['b', 'r.prepared'],
    ]);
  });

  test('a message the transport does not take fails each unit it carried', async () => {
    const { transport } = recording(false);
    const control = new ControlBatcher(() => transport);
    const failed: string[] = [];
    for (const u of ['u1', 'u2']) control.prepare(a, { u, kind: 'actor', keys: [`a:${u}`] }, [Counter], () => failed.push(u));
    await turn();
    expect(failed).toEqual(['u1', 'u2']);
    const none = new ControlBatcher(() => undefined);
    none.prepare(a, { u: 'u3', kind: 'actor', keys: ['a:u3'] }, [Counter], () => failed.push('u3'));
    await turn();
    expect(failed).toEqual(['u1', 'u2', 'u3']);
  });

  test('a turn larger than one message is split by size; each part carries only its units’ capabilities', async () => {
    const { sent, transport } = recording();
    const control = new ControlBatcher(() => transport);
    const key = 'x'.repeat(1000);
    const count = Math.ceil((CONTROL_BATCH_BYTES * 2.5) / 1000);
    for (let i = 0; i < count; i++) control.prepare(a, { u: `u${i}`, kind: 'actor', keys: [`a:${i}${key}`] }, [i < count - 1 ? Counter : Lobby], () => undefined);
    for (let i = 0; i < 100_000; i++) control.ready(a, `unit-${i}-${'y'.repeat(20)}`);
    await turn();
    const prepares = sent.filter((s) => s.message.t === 'r.prepare').map((s) => s.message as unknown as { units: { u: string; ty: number[] }[]; types: TypeCapability[] });
    expect(prepares.length).toBe(3);
    expect(prepares.flatMap((p) => p.units.map((u) => u.u))).toEqual(Array.from({ length: count }, (_, i) => `u${i}`));
    expect(prepares[0]!.types).toEqual([Counter]);
    const last = prepares[2]!;
    expect(last.types).toEqual([Counter, Lobby]);
    expect(last.units.at(-1)!.ty).toEqual([1]);
    for (const s of sent) expect(parseRelocationMessage(s.message)).toBeDefined();
    const ready = sent.filter((s) => s.message.t === 'r.ready').map((s) => (s.message as unknown as { us: string[] }).us);
    expect(ready.length).toBeGreaterThan(1);
    expect(ready.flat()).toHaveLength(100_000);
  });

  describe('one unit larger than a message (a SpotWide Spot with very many members)', () => {
    const FRAME = 16 * 1024;
    const keys = ['s:room', ...Array.from({ length: 3000 }, (_, i) => `a:member-${i}`)];

    test('the message size follows the transport frame limit: CONTROL_BATCH_BYTES, or a quarter of a lower limit', () => {
      expect(controlMessageBytes(undefined)).toBe(CONTROL_BATCH_BYTES);
      expect(controlMessageBytes(64 * 1024 * 1024)).toBe(CONTROL_BATCH_BYTES);
      expect(controlMessageBytes(FRAME)).toBe(FRAME / 4);
    });

    test('goes as r.prepareKeys parts that each fit a frame, beside the batch of the others; the target assembles the very same unit', async () => {
      const { sent, transport } = recording(true, FRAME);
      const control = new ControlBatcher(() => transport);
      control.prepare(a, { u: 'small', kind: 'actor', keys: ['a:1'] }, [Counter], () => undefined);
      control.prepare(a, { u: 'big', kind: 'spotWide', keys }, [Lobby, Counter], () => undefined);
      await turn();
      const messages = sent.map((s) => s.message);
      for (const m of messages) {
        expect(parseRelocationMessage(m)).toBeDefined();
        expect(batchFrameBytes(encodeMessage(m).length, 1)).toBeLessThanOrEqual(FRAME);
      }
      const partsSent = messages.filter((m) => m.t === 'r.prepareKeys') as unknown as PrepareKeysMessage[];
      expect(partsSent.length).toBeGreaterThan(3);
      expect(partsSent.map((p) => p.part)).toEqual(partsSent.map((_, i) => i));
      expect(partsSent[0]!.head).toEqual({ parts: partsSent.length, n: keys.length, kind: 'spotWide', ty: [0, 1], types: [Lobby, Counter] });
      // The batch holds the others only, with only their capabilities.
      expect(messages.filter((m) => m.t === 'r.prepare')).toEqual([{ t: 'r.prepare', units: [{ u: 'small', kind: 'actor', keys: ['a:1'], ty: [0] }], types: [Counter] }]);

      const sim = new SimulatedClock();
      const completed: PrepareMessage[] = [];
      const assembly = new PrepareAssembly({ now: () => sim.now(), setTimeout: (fn, ms) => sim.setTimeout(fn, ms), clearTimeout: (h) => sim.clearTimeout(h as number) }, 1000, () => 100_000, {
        complete: (_from, message) => completed.push(message),
        fail: (_from, u, _reason, error) => {
          throw new Error(`${u}: ${error}`);
        },
      });
      for (const m of messages) {
        const parsed = parseRelocationMessage(m) as RelocationMessage;
        if (parsed.t === 'r.prepareKeys') assembly.add(b, parsed);
      }
      expect(completed).toEqual([{ t: 'r.prepare', units: [{ u: 'big', kind: 'spotWide', keys, ty: [0, 1] }], types: [Lobby, Counter] }]);
    });

    test('parts go out in the same flush, before a per-unit message that must not overtake them', () => {
      const { sent, transport } = recording(true, FRAME);
      const control = new ControlBatcher(() => transport);
      control.prepare(a, { u: 'big', kind: 'spotWide', keys }, [Lobby], () => undefined);
      control.flush(a);
      expect(sent.length).toBeGreaterThan(3);
      expect(sent.every((s) => s.message.t === 'r.prepareKeys')).toBe(true);
    });

    test('a part the transport does not take fails the unit once and sends no later part', async () => {
      let taken = 0;
      const sent: RuntimeMessage[] = [];
      const transport = { maxFrameBytes: FRAME, send: (_: NodeRef, m: RuntimeMessage) => (sent.push(m), ++taken <= 2) } as unknown as Transport;
      const control = new ControlBatcher(() => transport);
      const failed: string[] = [];
      control.prepare(a, { u: 'big', kind: 'spotWide', keys }, [Lobby], () => failed.push('big'));
      await turn();
      expect(failed).toEqual(['big']);
      expect(sent).toHaveLength(3);
    });

    test('a message the transport throws on (larger than a frame after all) fails its units instead of throwing', async () => {
      const transport = {
        send: () => {
          throw new RangeError('send: message exceeds maxFrameBytes');
        },
      } as unknown as Transport;
      const control = new ControlBatcher(() => transport);
      const failed: string[] = [];
      control.prepare(a, { u: 'u1', kind: 'actor', keys: ['a:1'] }, [Counter], () => failed.push('u1'));
      control.prepared(a, 'u0');
      control.flush(a);
      expect(failed).toEqual(['u1']);
    });
  });
});
