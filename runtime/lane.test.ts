import { Lane, type WorkItem } from './lane';

const item = (name: string): WorkItem => ({ k: 'tick', to: 'a:x', name, seq: 0 });
const nameOf = (w: WorkItem) => (w.k === 'tick' ? w.name : w.k);
const flush = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

/** A deferred promise the test resolves by hand. */
function deferred() {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

test('sync handlers run one at a time in push order', () => {
  const log: string[] = [];
  const lane = new Lane((w) => void log.push(nameOf(w)));
  for (const n of ['a', 'b', 'c']) lane.push(item(n));
  expect(log).toEqual(['a', 'b', 'c']);
  expect(lane.length).toBe(0);
  expect(lane.busy).toBe(false);
});

test('a push from inside a sync turn is queued, not run nested', () => {
  const log: string[] = [];
  let lane!: Lane;
  lane = new Lane((w) => {
    log.push(`start ${nameOf(w)}`);
    if (nameOf(w) === 'a') {
      lane.push(item('b'));
      expect(lane.length).toBe(1); // still queued: the turn of 'a' is running
      expect(lane.busy).toBe(true);
    }
    log.push(`end ${nameOf(w)}`);
  });
  lane.push(item('a'));
  lane.push(item('c'));
  expect(log).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
});

test('an async turn holds the lane until its promise settles; pushes meanwhile (also re-entrant) wait in order', async () => {
  const log: string[] = [];
  const turns = new Map<string, ReturnType<typeof deferred>>();
  let lane!: Lane;
  lane = new Lane((w) => {
    const n = nameOf(w);
    log.push(`start ${n}`);
    if (n === 'a') lane.push(item('b'));
    const d = deferred();
    turns.set(n, d);
    return d.promise.then(() => void log.push(`end ${n}`));
  });
  lane.push(item('a'));
  lane.push(item('c'));
  await flush();
  expect(log).toEqual(['start a']);
  expect(lane.busy).toBe(true);
  expect(lane.length).toBe(2);
  turns.get('a')!.resolve();
  await flush();
  expect(log).toEqual(['start a', 'end a', 'start b']);
  turns.get('b')!.resolve();
  await flush();
  turns.get('c')!.resolve();
  await flush();
  expect(log).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  expect(lane.busy).toBe(false);
});

test('a throwing or rejecting handler does not stop the lane', async () => {
  const log: string[] = [];
  const lane = new Lane((w) => {
    log.push(nameOf(w));
    if (nameOf(w) === 'throws') throw new Error('handler failed');
    if (nameOf(w) === 'rejects') return Promise.reject(new Error('async handler failed'));
    return undefined;
  });
  lane.push(item('throws'));
  lane.push(item('rejects'));
  lane.push(item('after'));
  await flush();
  expect(log).toEqual(['throws', 'rejects', 'after']);
});

test('pause on an idle lane resolves at once and holds later pushes; resume runs them in order', async () => {
  const log: string[] = [];
  const lane = new Lane((w) => void log.push(nameOf(w)));
  await lane.pause();
  expect(lane.paused).toBe(true);
  lane.push(item('a'));
  lane.push(item('b'));
  expect(log).toEqual([]);
  expect(lane.length).toBe(2);
  lane.resume();
  expect(log).toEqual(['a', 'b']);
  expect(lane.paused).toBe(false);
});

test('pauseThen: on an idle lane the boundary callback runs at once; during a turn, in a microtask after it ends', async () => {
  const log: string[] = [];
  const turn = deferred();
  const lane = new Lane((w) => {
    log.push(`start ${nameOf(w)}`);
    return nameOf(w) === 'a' ? turn.promise.then(() => void log.push('end a')) : undefined;
  });
  lane.pauseThen(() => log.push('idle boundary'));
  expect(log).toEqual(['idle boundary']); // synchronously: no turn was running
  lane.resume();
  lane.push(item('a'));
  lane.push(item('b'));
  lane.pauseThen(() => log.push('turn boundary'));
  await flush();
  expect(log).toEqual(['idle boundary', 'start a']);
  turn.resolve();
  await flush();
  expect(log).toEqual(['idle boundary', 'start a', 'end a', 'turn boundary']);
  expect(lane.length).toBe(1); // b waits while paused
  lane.resume();
  expect(log.at(-1)).toBe('start b');
});

test('pause during an async turn resolves only at the turn boundary, and the next item does not start', async () => {
  const log: string[] = [];
  const turn = deferred();
  const lane = new Lane((w) => {
    log.push(`start ${nameOf(w)}`);
    return nameOf(w) === 'a' ? turn.promise.then(() => void log.push('end a')) : undefined;
  });
  lane.push(item('a'));
  lane.push(item('b'));
  let paused = false;
  const p = lane.pause().then(() => {
    paused = true;
    log.push('paused');
  });
  await flush();
  expect(paused).toBe(false);
  turn.resolve();
  await p;
  expect(log).toEqual(['start a', 'end a', 'paused']);
  expect(lane.length).toBe(1);
  lane.resume();
  expect(log).toEqual(['start a', 'end a', 'paused', 'start b']);
});

test('pause called from inside a sync turn resolves at that turn’s end and stops dispatch after it', async () => {
  const log: string[] = [];
  let pauseDone: Promise<void> | undefined;
  let lane!: Lane;
  lane = new Lane((w) => {
    log.push(`start ${nameOf(w)}`);
    if (nameOf(w) === 'a') pauseDone = lane.pause().then(() => void log.push('paused'));
    log.push(`end ${nameOf(w)}`);
  });
  lane.push(item('a'));
  lane.push(item('b'));
  await pauseDone;
  expect(log).toEqual(['start a', 'end a', 'paused']);
  expect(lane.length).toBe(1);
  lane.resume();
  expect(log.at(-1)).toBe('end b');
});

test('pause called from inside an async turn resolves when that turn settles', async () => {
  const log: string[] = [];
  const turn = deferred();
  let pauseDone: Promise<void> | undefined;
  let lane!: Lane;
  lane = new Lane((w) => {
    log.push(`start ${nameOf(w)}`);
    if (nameOf(w) !== 'a') return undefined;
    pauseDone = lane.pause().then(() => void log.push('paused'));
    return turn.promise.then(() => void log.push('end a'));
  });
  lane.push(item('a'));
  lane.push(item('b'));
  await flush();
  expect(log).toEqual(['start a']);
  turn.resolve();
  await pauseDone;
  expect(log).toEqual(['start a', 'end a', 'paused']);
  lane.resume();
  expect(log.at(-1)).toBe('start b');
});

test('pauses nest: two pauses need two resumes; a resume without a pause is ignored', async () => {
  const log: string[] = [];
  const lane = new Lane((w) => void log.push(nameOf(w)));
  lane.resume(); // no pause: no effect, and does not bank a resume
  await lane.pause();
  await lane.pause();
  lane.push(item('a'));
  lane.resume();
  expect(lane.paused).toBe(true);
  expect(log).toEqual([]);
  lane.resume();
  expect(lane.paused).toBe(false);
  expect(log).toEqual(['a']);
  await lane.pause();
  lane.push(item('b'));
  expect(log).toEqual(['a']);
});

test('take() removes the selected items in order and keeps the others in order', async () => {
  const log: string[] = [];
  const lane = new Lane((w) => void log.push(nameOf(w)));
  await lane.pause();
  for (const n of ['x1', 'y1', 'x2', 'y2', 'x3']) lane.push(item(n));
  const taken = lane.take((w) => nameOf(w).startsWith('x'));
  expect(taken.map(nameOf)).toEqual(['x1', 'x2', 'x3']);
  expect(lane.length).toBe(2);
  lane.resume();
  expect(log).toEqual(['y1', 'y2']);
});

test('take() with no selector takes everything unexecuted, not the items already run', async () => {
  const log: string[] = [];
  const lane = new Lane((w) => void log.push(nameOf(w)));
  lane.push(item('ran'));
  await lane.pause();
  lane.push(item('a'));
  lane.push(item('b'));
  expect(lane.take().map(nameOf)).toEqual(['a', 'b']);
  expect(lane.length).toBe(0);
});

test('unshift() puts items back in front, in their order (§11 restore), then dispatch continues', async () => {
  const log: string[] = [];
  const lane = new Lane((w) => void log.push(nameOf(w)));
  await lane.pause();
  for (const n of ['a', 'b', 'c', 'd']) lane.push(item(n));
  const captured = lane.take((w) => nameOf(w) === 'a' || nameOf(w) === 'b');
  lane.push(item('e')); // arrived while the unit was sealed
  lane.unshift(captured);
  lane.unshift([]); // no-op
  expect(lane.length).toBe(5);
  lane.resume();
  expect(log).toEqual(['a', 'b', 'c', 'd', 'e']);
});

test('unshift() on an idle, unpaused lane dispatches the restored items at once', () => {
  const log: string[] = [];
  const lane = new Lane((w) => void log.push(nameOf(w)));
  lane.unshift([item('r1'), item('r2')]);
  expect(log).toEqual(['r1', 'r2']);
});

test('whenIdle: at once when idle; after the running turn and the queue drain; a paused lane with work is not idle', async () => {
  const turn = deferred();
  const log: string[] = [];
  const lane = new Lane((w) => {
    log.push(nameOf(w));
    return nameOf(w) === 'a' ? turn.promise : undefined;
  });
  let idle = false;
  await lane.whenIdle();

  lane.push(item('a'));
  lane.push(item('b'));
  void lane.whenIdle().then(() => (idle = true));
  await flush();
  expect(idle).toBe(false);
  turn.resolve();
  await flush();
  expect(idle).toBe(true);
  expect(log).toEqual(['a', 'b']);

  await lane.pause();
  lane.push(item('c'));
  let idle2 = false;
  void lane.whenIdle().then(() => (idle2 = true));
  await flush();
  expect(idle2).toBe(false);
  lane.resume();
  await flush();
  expect(idle2).toBe(true);
  expect(log).toEqual(['a', 'b', 'c']);
});

test('thousands of items queued from inside one turn keep their order across internal compaction', () => {
  const seen: number[] = [];
  let lane!: Lane;
  lane = new Lane((w) => {
    if (nameOf(w) === 'fill') for (let i = 0; i < 5000; i++) lane.push(item(String(i)));
    else seen.push(Number(nameOf(w)));
    // Mid-run, put two taken items back in front: they run next, in their order.
    if (nameOf(w) === '2000') lane.unshift(lane.take((x) => nameOf(x) === '4998' || nameOf(x) === '4999'));
  });
  lane.push(item('fill'));
  lane.push(item('5000'));
  const expected = [...Array.from({ length: 2001 }, (_, i) => i), 4998, 4999, ...Array.from({ length: 2997 }, (_, i) => 2001 + i), 5000];
  expect(seen).toEqual(expected);
});

test('post enqueues without running: the turn starts later, never inside the caller (local delivery is async)', async () => {
  const log: string[] = [];
  const lane = new Lane((w) => void log.push(nameOf(w)));
  lane.post(item('a'));
  lane.post(item('b'));
  expect(log).toEqual([]);
  expect(lane.length).toBe(2);
  lane.push(item('c')); // a push pumps at once, in queue order
  expect(log).toEqual(['a', 'b', 'c']);
  lane.post(item('d'));
  expect(log).toEqual(['a', 'b', 'c']);
  await Promise.resolve();
  expect(log).toEqual(['a', 'b', 'c', 'd']);
});

test('a post from inside another lane\'s turn runs after that turn ended', async () => {
  const log: string[] = [];
  const other = new Lane((w) => void log.push(`other ${nameOf(w)}`));
  const lane = new Lane((w) => {
    log.push(`start ${nameOf(w)}`);
    other.post(item('x'));
    log.push(`end ${nameOf(w)}`);
  });
  lane.push(item('a'));
  expect(log).toEqual(['start a', 'end a']);
  await other.whenIdle();
  expect(log).toEqual(['start a', 'end a', 'other x']);
});
