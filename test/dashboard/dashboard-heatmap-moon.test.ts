/**
 * The dashboard's heat map at moon size (#30) in Chromium: GET /v1/admin/shards/stats for 65,536
 * shards on 1,000 pairs fragmented by moves (answered with generated numbers) is shown one square
 * per master host, each coloured and titled by its totals, and a click zooms into that host's
 * ranges and shards with each shard's own numbers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { listeningApp } from '../http/http-fixture.js';

const CHROMIUM = process.env.SHARDKIT_CHROMIUM ?? '/usr/bin/chromium';
const name = (i: number) => `db${String(i).padStart(4, '0')}a`;

/** Stats of 65,536 shards on 1,000 masters; shard s had s % 7 reads and s % 3 writes; db0042a is by far the busiest. */
function moonStats() {
  const owner = (s: number) => (s % 97 === 0 ? (s % 1000) + 1 : Math.floor((s * 1000) / 65_536) + 1);
  const ranges: Array<{ range: [number, number]; master: string; reads: number[]; writes: number[]; rates: null; objects: number[] }> = [];
  for (let s = 0; s < 65_536;) {
    let e = s;
    while (e + 1 < 65_536 && owner(e + 1) === owner(s)) e++;
    const shards = Array.from({ length: e - s + 1 }, (_, i) => s + i);
    const busy = owner(s) === 42 ? 1000 : 0;
    ranges.push({ range: [s, e], master: name(owner(s)), reads: shards.map((x) => (x % 7) + busy), writes: shards.map((x) => x % 3), rates: null, objects: shards.map(() => 10) });
    s = e + 1;
  }
  let reads = 0;
  let writes = 0;
  for (const r of ranges) for (let i = 0; i < r.reads.length; i++) (reads += r.reads[i]!), (writes += r.writes[i]!);
  const now = Date.now();
  return { version: 9, since: now - 60_000, now, rateSeconds: null, objectsAt: now, totals: { reads, writes, objects: 655_360 }, ranges };
}

test('the heat map of 65,536 shards on 1,000 pairs shows one square per host and zooms into one host\'s shards', { timeout: 180_000 }, async () => {
  const f = await listeningApp();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
  try {
    const stats = moonStats();
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    await page.route('**/v1/admin/shards/stats*', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(stats) }));
    await page.goto(`${f.base}/dashboard/`);
    await page.waitForSelector('#heatmap .heat-hosts [data-host="db1000a"]');
    assert.equal(await page.locator('#heatmap .heat-hosts [data-host]').count(), 1000, 'one square per master host');
    assert.equal(await page.locator('#heatmap [data-shard]').count(), 0, 'no shard squares until a host is opened');
    assert.match(await page.locator('#heatmap-zoom').innerText(), /^1,000 master hosts, 65,536 shards: one square per host/);
    assert.ok((await page.locator('#heatmap-summary').innerText()).startsWith(`${(stats.totals.reads + stats.totals.writes).toLocaleString('en-US')} requests`));
    // The busiest host is the darkest square; its title sums its shards.
    const hot = page.locator('#heatmap .heat-hosts [data-host="db0042a"]');
    assert.match((await hot.getAttribute('class'))!, /heat-5/);
    const own = stats.ranges.filter((r) => r.master === 'db0042a');
    const shards = own.reduce((n, r) => n + r.reads.length, 0);
    const calls = own.reduce((n, r) => n + r.reads.reduce((a, b) => a + b, 0) + r.writes.reduce((a, b) => a + b, 0), 0);
    assert.equal(await hot.getAttribute('title'), `db0042a: ${own.length} ranges, ${shards.toLocaleString('en-US')} shards, ${calls.toLocaleString('en-US')} requests, ${(shards * 10).toLocaleString('en-US')} objects`);
    // Zoom: that host's ranges and shards, each with its own numbers.
    await hot.click();
    await page.waitForSelector('#heatmap-detail .heat-host[data-host="db0042a"]');
    assert.equal(await page.locator('#heatmap-detail .heat-range').count(), own.length);
    const cells = page.locator('#heatmap-detail [data-shard]');
    assert.equal(await cells.count(), shards);
    const first = own[0]!.range[0];
    const cell = page.locator(`#heatmap-detail [data-shard="${first}"]`);
    assert.equal(await cell.getAttribute('data-reads'), String((first % 7) + 1000));
    assert.equal(await cell.getAttribute('data-writes'), String(first % 3));
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await f.cleanup();
  }
});
