/**
 * The shard heat map of the dashboard in a real browser (Chromium, as dashboard-browser.test.ts):
 * after some traffic, each shard's cell shows the numbers of GET /v1/admin/shards/stats, and
 * those are the requests made and the objects created.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser } from 'playwright-core';
import { buildApp } from '../../src/http/app.js';
import { makeKit } from '../kit/kit-fixture.js';
import { listeningApp } from '../http/http-fixture.js';

const CHROMIUM = process.env.SHARDKIT_CHROMIUM ?? '/usr/bin/chromium';

async function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

interface Stats {
  totals: { reads: number; writes: number; objects: number | null };
  ranges: Array<{ range: [number, number]; master: string; reads: number[]; writes: number[]; objects: Array<number | null> }>;
}

test('the heat map shows requests and objects per shard, grouped by host and range, equal to the API and to the calls made', async () => {
  const f = await listeningApp();
  const browser = await launch();
  try {
    // Known traffic through the HTTP API: shard 3 hot (objects and reads), shard 12 lukewarm.
    const made = { 3: { reads: 0, writes: 0, objects: 0 }, 12: { reads: 0, writes: 0, objects: 0 } } as Record<number, { reads: number; writes: number; objects: number }>;
    const ids: Record<number, string[]> = { 3: [], 12: [] };
    for (const [shard, n] of [[3, 4], [12, 1]] as const) {
      for (let i = 0; i < n; i++) {
        const res = await fetch(`${f.base}/v1/objects/pin`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: { i }, shard }) });
        assert.equal(res.status, 201);
        ids[shard]!.push(((await res.json()) as { id: string }).id);
        made[shard]!.writes++;
        made[shard]!.objects++;
      }
    }
    for (let i = 0; i < 9; i++) {
      assert.equal((await fetch(`${f.base}/v1/objects/${ids[3]![i % 4]}`)).status, 200);
      made[3]!.reads++;
    }
    assert.equal((await fetch(`${f.base}/v1/objects/${ids[12]![0]}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{"x":1}' })).status, 200);
    made[12]!.writes++;
    // Count the objects now, so the page (which shows counts up to 30 s old) has them.
    const api = (await (await fetch(`${f.base}/v1/admin/shards/stats?refresh=true`)).json()) as Stats;
    const fromApi = (shard: number) => {
      const r = api.ranges.find((x) => x.range[0] <= shard && shard <= x.range[1])!;
      const i = shard - r.range[0];
      return { reads: r.reads[i]!, writes: r.writes[i]!, objects: r.objects[i]! };
    };
    assert.deepEqual(fromApi(3), made[3]);
    assert.deepEqual(fromApi(12), made[12]);
    assert.deepEqual(fromApi(0), { reads: 0, writes: 0, objects: 0 });

    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    await page.goto(`${f.base}/dashboard/`);
    await page.waitForSelector('#heatmap .heat-cell[data-shard="3"]');
    // Grouped by host, then by the map's ranges.
    assert.deepEqual(await page.locator('#heatmap .heat-host').evaluateAll((els) => els.map((e) => e.getAttribute('data-host'))), ['MySQL001A', 'MySQL002A']);
    assert.deepEqual(await page.locator('#heatmap .heat-range').evaluateAll((els) => els.map((e) => e.getAttribute('data-range'))), ['0-7', '8-15']);
    assert.equal(await page.locator('#heatmap .heat-cell[data-shard]').count(), 16);
    // Each shard's cell: the numbers of the API, shown as text.
    for (const shard of [0, 3, 12]) {
      const want = fromApi(shard);
      const cell = page.locator(`#heatmap .heat-cell[data-shard="${shard}"]`);
      const text = (await cell.innerText()).split('\n').map((l) => l.trim());
      assert.deepEqual(text, [String(shard), `${want.reads + want.writes} req`, `${want.objects} obj`], `shard ${shard}`);
      assert.match(String(await cell.getAttribute('title')), new RegExp(`^shard ${shard} on MySQL00\\dA: ${want.reads} reads, ${want.writes} writes, .*${want.objects} objects$`));
    }
    // The hottest shard is the reddest cell and tops the busiest-shards table; idle shards are pale.
    assert.match(String(await page.locator('#heatmap .heat-cell[data-shard="3"]').getAttribute('class')), /heat-5/);
    assert.match(String(await page.locator('#heatmap .heat-cell[data-shard="0"]').getAttribute('class')), /heat-0/);
    const top = (await page.locator('#hottest tbody tr').first().innerText()).split('\t').map((c) => c.trim());
    assert.deepEqual([top[0], top[1], top[2], top[3], top[5]], ['3', 'MySQL001A', String(made[3]!.reads), String(made[3]!.writes), String(made[3]!.objects)]);
    // Ranges and hosts sum their shards.
    assert.match(await page.locator('#heatmap .heat-range[data-range="0-7"] .heat-range-label').innerText(), new RegExp(`^0–7 ${made[3]!.reads + made[3]!.writes} req .*· ${made[3]!.objects} obj$`));
    assert.match(await page.locator('#heatmap-summary').innerText(), new RegExp(`^${api.totals.reads + api.totals.writes} requests \\(${api.totals.reads} reads, ${api.totals.writes} writes\\) since .* UTC; ${api.totals.objects} objects`));
    // The page's own calls (health, topology, stats) are not shard traffic.
    const after = (await (await fetch(`${f.base}/v1/admin/shards/stats`)).json()) as Stats;
    assert.deepEqual(after.totals, api.totals);
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await f.cleanup();
  }
});

test('with an admin token set and none given, the heat map says it needs one and the rest of the page works', async () => {
  const k = makeKit();
  const app = await buildApp({ kit: k.kit, admin: { kind: 'token', token: 'e3b0c44298fc1c149afbf4c8996fb924' } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const browser = await launch();
  try {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    await page.goto(`${base}/dashboard/`);
    await page.waitForSelector('#status[data-state="ok"]');
    assert.match(await page.locator('#heatmap-summary').innerText(), /admin route: it needs the admin token/);
    assert.equal(await page.locator('#heatmap .heat-cell').count(), 0);
    assert.ok((await page.locator('#topology tbody tr').count()) > 0);
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await app.close();
    await k.cleanup();
  }
});
