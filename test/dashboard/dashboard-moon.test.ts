/**
 * The dashboard's shard map at moon size (#30) in Chromium: 65,536 shards on 1,000 pairs,
 * fragmented by moves (the service's GET /v1/topology answered with a generated map), is shown
 * one row per pair, with every shard counted, instead of one row per range.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { listeningApp } from '../http/http-fixture.js';

const CHROMIUM = process.env.SHARDKIT_CHROMIUM ?? '/usr/bin/chromium';

function moonMap() {
  const owner = (s: number) => (s % 97 === 0 ? (s % 1000) + 1 : Math.floor((s * 1000) / 65_536) + 1);
  const name = (i: number, r: string) => `db${String(i).padStart(4, '0')}${r}`;
  const ranges: Array<{ range: [number, number]; master: string; slave: string; open: boolean }> = [];
  for (let s = 0; s < 65_536;) {
    let e = s;
    while (e + 1 < 65_536 && owner(e + 1) === owner(s)) e++;
    ranges.push({ range: [s, e], master: name(owner(s), 'a'), slave: name(owner(s), 'b'), open: true });
    s = e + 1;
  }
  return { version: 9, ranges, modShards: { count: 4096, ranges: [{ range: [0, 4095], master: 'msdb001a' }] } };
}

test('the dashboard shows a 65,536-shard, 1,000-pair map one row per pair, every shard counted', { timeout: 120_000 }, async () => {
  const f = await listeningApp();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
  try {
    const map = moonMap();
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    await page.route('**/v1/topology', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(map) }));
    await page.goto(`${f.base}/dashboard/`);
    await page.waitForSelector('#status[data-state="ok"]');
    await page.waitForSelector('#topology tbody tr[data-master="db1000a"]');
    assert.equal(await page.locator('#topology tbody tr').count(), 1000, 'one row per pair, not one per range');
    assert.match(await page.locator('#topology-summary').innerText(), /^65,536 logical shards on 2000 hosts, 65,536 open for new objects \(version 9\)/);
    const shards = await page.locator('#topology tbody tr td:nth-child(2)').allInnerTexts();
    assert.equal(shards.reduce((n, t) => n + Number(t.replace(/,/g, '')), 0), 65_536);
    const first = await page.locator('#topology tbody tr').first().innerText();
    const own = map.ranges.filter((r) => r.master === 'db0001a');
    assert.match(first, new RegExp(`^${own.length} ranges in 0–\\d+\\s+[\\d,]+\\s+db0001a\\s+db0001b\\s+[\\d,]+ open$`));
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await f.cleanup();
  }
});
