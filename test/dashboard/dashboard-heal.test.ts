/**
 * What `shardkit heal` sees, on GET /v1/heal and the dashboard (#31): the live supervisors'
 * records beside the map, each pair's verdict and why, in a real browser (Chromium); a record
 * whose supervisor is gone (its ttl ran out) is not shown, and a reason is text, never markup.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { buildApp } from '../../src/http/app.js';
import { MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import type { HealStatus } from '../../src/topology/heal-records.js';
import { makeKit } from '../kit/kit-fixture.js';

const CHROMIUM = process.env.SHARDKIT_CHROMIUM ?? '/usr/bin/chromium';
const HOSTILE = '<img src=x onerror="window.pwned=1">';

test('GET /v1/heal and the dashboard show the live supervisors\' pair states; a gone supervisor is left out; reasons are text', async () => {
  const store = new MemoryTopologyStore();
  const k = makeKit({ topology: store });
  const app = await buildApp({ kit: k.kit });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
  try {
    await k.kit.ready();
    // Before any supervisor runs: an empty list, and no panel.
    assert.deepEqual(await (await fetch(`${base}/v1/heal`)).json(), { supervisors: [] });
    const now = Date.now();
    const acting: HealStatus = {
      at: now, ttlMs: 60_000, mode: 'act', acting: true, hostname: 'ops-1', pid: 4242,
      suspects: [{ host: 'MySQL001A', since: now - 3_000 }],
      pairs: [
        { master: 'MySQL001A', slave: 'MySQL001B', verdict: 'suspect', reason: `MySQL001A unreachable from here and from its slave, but 1 of 2 live service(s) still reach it ${HOSTILE}`, since: now - 3_000 },
        { master: 'MySQL002A', slave: 'MySQL002B', verdict: 'healthy', since: now - 600_000 },
      ],
    };
    await store.heal.put('heal.ops-1.4242', acting);
    await store.heal.put('heal.ops-2.77', { ...acting, at: now - 120_000, hostname: 'ops-2', pid: 77, acting: false });
    const body = (await (await fetch(`${base}/v1/heal`)).json()) as { supervisors: Array<{ id: string; acting: boolean; pairs: unknown[] }> };
    assert.deepEqual(body.supervisors.map((s) => [s.id, s.acting, s.pairs.length]), [['heal.ops-1.4242', true, 2]]);

    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    await page.goto(`${base}/dashboard/`);
    await page.waitForSelector('#heal-panel:not([hidden]) #heal tbody tr');
    assert.match(await page.locator('#heal-summary').innerText(), /^heal\.ops-1\.4242 \(acting, pid 4242 on ops-1\)$/);
    const rows = await page.locator('#heal tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    assert.deepEqual(rows.map((r) => [r[0], r[1], r[2]]), [['MySQL001A', 'MySQL001B', 'suspect'], ['MySQL002A', 'MySQL002B', 'healthy']]);
    assert.ok(rows[0]![4]!.endsWith(HOSTILE), 'the reason is shown as text');
    assert.equal(await page.locator('#heal img').count(), 0, 'no markup from a reason');
    assert.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined);
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await app.close();
    await k.cleanup();
  }
});
