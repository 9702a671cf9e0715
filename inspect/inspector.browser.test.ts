/**
 * The inspector page in a real browser: headless Chromium (Debian's `chromium`, driven by playwright-core) opens the
 * page of an inspector shared by two hosts on the memory stack, a Relocate runs, and the page shows the source's
 * lifecycle Serving → Relocating → Relocated, the unit machines counted by state on both hosts, sampled units with
 * their §8 points, and the machines' diagrams with the current state lit. Screenshots go to artifacts/ (git-ignored).
 *
 * Chromium is required, not optional: without it the test fails and says how to install it (.ci/run installs it).
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { RelocationMode, RelocationOutcome, type FrameworkRuntime } from '../runtime';
import { ALL_TYPES } from '../spec-tests/support/workload';
import { FAST_TIMING, makeStack, type Stack } from '../spec-tests/support/stack';
import { createInspector, type Inspector } from '.';

const CHROMIUM = process.env.ZLINK_CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = path.join(__dirname, '..', 'artifacts');
const ACTORS = 1500;
const ROOM_MEMBERS = 20;
const SHARDS = 10;

describe('inspector page in headless Chromium', () => {
  let stack: Stack;
  let inspector: Inspector;
  let browser: Browser | undefined;

  beforeAll(() => {
    if (!existsSync(CHROMIUM))
      throw new Error(
        `Chromium not found at ${CHROMIUM}: the inspector's browser test needs it. Install it with ` +
          "'apt-get install -y chromium' (Debian; .ci/run does this), or point ZLINK_CHROMIUM at a Chromium binary.",
      );
  });

  afterAll(async () => {
    await browser?.close();
    await inspector?.close();
    await stack?.close();
  });

  test('during a relocation the page shows Serving → Relocating → Relocated, unit states, S0–S4 and lit diagrams', async () => {
    stack = await makeStack('memory+in-process');
    inspector = await createInspector({ port: 0, maxUpdatesPerSecond: 20 });
    const timing = { ...FAST_TIMING, messageFollowDurationMs: 300 };
    const host = async (nodeId: string): Promise<FrameworkRuntime> => {
      const h = await stack.host({ nodeId, applicationVersion: 1, types: ALL_TYPES, timing, inspect: inspector.inspect });
      inspector.watch(h);
      return h;
    };
    const source = await host('source');
    await host('target');
    for (let i = 0; i < ACTORS; i += 250) await Promise.all(Array.from({ length: 250 }, (_, j) => source.createActor('Counter', `c${i + j}`)));
    await source.createSpot('Room', 'room-1');
    for (let i = 0; i < ROOM_MEMBERS; i++) await source.createActor('Player', `p${i}`, { spot: 'room-1' });
    for (let i = 0; i < SHARDS; i++) await source.request({ spot: `shard-${i}` }, { op: 'where' });

    browser = await chromium.launch({ executablePath: CHROMIUM });
    const page = await browser.newPage({ viewport: { width: 1500, height: 1100 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(inspector.url);
    await page.waitForSelector('[data-node="source"] .lifecycle-state[data-state="Serving"]');
    await page.waitForSelector('[data-node="target"] .lifecycle-state[data-state="Serving"]');
    // Every lifecycle state the badge shows, as the page shows it (not only the server-side history).
    await page.evaluate(`(() => {
      window.badgeStates = [];
      const badge = document.querySelector('[data-node="source"] .lifecycle-state');
      const record = () => window.badgeStates[window.badgeStates.length - 1] !== badge.dataset.state && window.badgeStates.push(badge.dataset.state);
      record();
      new MutationObserver(record).observe(badge, { attributes: true, childList: true, characterData: true, subtree: true });
    })()`);

    mkdirSync(ARTIFACTS, { recursive: true });
    const relocation = source.relocate({ mode: RelocationMode.PlannedMaintenance, deadlineMs: 20_000 });
    const during = page
      .waitForSelector('[data-node="source"] .lifecycle-state[data-state="Relocating"]', { timeout: 5000 })
      .then(() => page.screenshot({ path: path.join(ARTIFACTS, 'inspector-relocating.png'), fullPage: true }))
      .then(
        () => true,
        () => false,
      );
    expect((await relocation).outcome).toBe(RelocationOutcome.Relocated);
    await during;

    await page.waitForSelector('[data-node="source"] .lifecycle-state[data-state="Relocated"]');
    const lifecycle = await dataOf(page, '[data-node="source"] .lifecycle-history li', 'state');
    expect(lifecycle).toEqual(['Preparing', 'Serving', 'Relocating', 'Relocated']);
    const badgeStates = await page.evaluate<string[]>('window.badgeStates');
    expect(badgeStates[0]).toBe('Serving');
    expect(badgeStates[badgeStates.length - 1]).toBe('Relocated');

    // Unit machines (whatever their ids) counted by state on both hosts; on the source every unit is counted.
    const unitCounts = (node: string) =>
      page.evaluate<[string, number][]>(
        `[...document.querySelectorAll('[data-node="${node}"] .units .machine .bar')].map((b) => [b.dataset.state, Number(b.querySelector('.count').textContent)])`,
      );
    const units = 1 /* room */ + ACTORS + SHARDS;
    await waitFor(page, async () => (await unitCounts('source')).reduce((n, [, c]) => n + c, 0) === units, 'every source unit counted');
    await waitFor(page, async () => (await unitCounts('target')).length > 0, 'target units counted');
    // S4 for the sampled units once the follow window ended (300 ms).
    await waitFor(page, async () => (await page.$$('#unit-samples tbody td[data-point="S4"]:not(:empty)')).length > 0, 'S0–S4 of a sampled unit');
    expect(await dataOf(page, '#unit-samples tbody tr', 'unit')).not.toHaveLength(0);
    // The source unit machine's sampled actors are those units: their rows carry S0–S4 as well.
    await waitFor(page, async () => (await page.$$('[data-node="source"] .units table.samples td[data-point="S4"]:not(:empty)')).length > 0, 'S0–S4 beside a sampled unit actor');

    // Diagrams drawn from the definitions, current state lit.
    expect(await dataOf(page, '[data-node="source"] figure[data-machine="hostLifecycle"] .state.lit', 'id')).toEqual(['hostLifecycle.Relocated']);
    expect(await dataOf(page, '[data-node="source"] figure[data-machine="relocationSupervisor"] .state.lit', 'id')).toEqual(['relocationSupervisor.relocated']);
    expect(await page.locator('[data-node="source"] figure[data-machine="relocationSupervisor"] svg.edges path').count()).toBeGreaterThan(5);

    await page.screenshot({ path: path.join(ARTIFACTS, 'inspector.png'), fullPage: true });
    expect(pageErrors).toEqual([]);
  }, 30_000);
});

/** `data-<key>` of every element matching `selector` (in-page code is a string: this project compiles without the DOM lib). */
function dataOf(page: Page, selector: string, key: string): Promise<string[]> {
  return page.evaluate<string[]>(`[...document.querySelectorAll(${JSON.stringify(selector)})].map((e) => e.dataset[${JSON.stringify(key)}])`);
}

async function waitFor(page: Page, check: () => Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`page never showed: ${what}`);
    await page.waitForTimeout(50);
  }
}
