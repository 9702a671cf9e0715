import { createRuntime, defineActor, memoryStores, preserveState } from '../../runtime';
import { connectSession } from '../../client';

const Echo = defineActor<{ seen: number[] }>({
  type: 'Echo',
  relocation: preserveState({ capture: (s) => Buffer.from(JSON.stringify(s)), restore: (b) => JSON.parse(b.toString()) }),
  create: () => ({ seen: [] }),
  receive: (s) => s.seen,
  onSession: (s, e, ctx) => {
    if (e.type === 'frame') {
      s.seen.push((e.frame as { n: number }).n);
      e.session.send({ echo: (e.frame as { n: number }).n, at: ctx.nodeId });
    }
  },
});

test('smoke', async () => {
  const stores = memoryStores();
  const a = await createRuntime({ nodeId: 'a', applicationVersion: 1, stores, types: [Echo], sessions: { listen: { host: '127.0.0.1', port: 0 } }, timing: { discoveryIntervalMs: 20 } });
  try {
    await a.createActor('Echo', 'e1');
    const s = await connectSession({ url: a.sessionEndpoint!, actor: 'e1' });
    const got: unknown[] = [];
    s.on('frame', (f) => got.push(f));
    for (let i = 1; i <= 5; i++) s.send({ n: i });
    const until = Date.now() + 3000;
    while (got.length < 5 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    expect(got).toEqual([1, 2, 3, 4, 5].map((n) => ({ echo: n, at: 'a' })));
    await s.close();
    expect(await a.request({ actor: 'e1' }, 'x')).toEqual([1, 2, 3, 4, 5]);
  } finally {
    await a.shutdown({ deadlineMs: 3000 });
    await stores.close();
  }
});
