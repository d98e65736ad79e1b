/** The dashboard shows frozen ranges and the moves in progress, in a real browser (as test/dashboard does). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { listeningApp } from '../http/http-fixture.js';
import { addMove, advanceMove, casMoveState, freezeMove } from '../../src/moves/move-state.js';

const CHROMIUM = process.env.SHARDKIT_CHROMIUM ?? '/usr/bin/chromium';

test('the dashboard shows a frozen range and the move holding it (phase, whether writes are held)', async () => {
  const f = await listeningApp();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
  try {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    await page.goto(`${f.base}/dashboard/`);
    await page.waitForSelector('#status[data-state="ok"]');
    assert.equal(await page.locator('#moves-panel').isVisible(), false, 'no moves: no panel');

    await f.kit.ready();
    await casMoveState(f.topology, (m) => addMove(m, { id: 'move-dash', span: { first: 0, last: 3 }, target: { master: 'MySQL002A', slave: 'MySQL002B' }, holdMs: 60_000 }));
    await casMoveState(f.topology, (m) => advanceMove(m, 'move-dash', ['started'], 'copied'));
    await casMoveState(f.topology, (m) => freezeMove(m, 'move-dash'));
    const api = (await (await fetch(`${f.base}/v1/topology`)).json()) as { ranges: Array<{ frozen?: { id: string } }>; moves: Array<{ id: string; phase: string }> };
    assert.equal(api.ranges[0]!.frozen?.id, 'move-dash', 'GET /v1/topology carries the freeze');
    assert.deepEqual(api.moves.map((m) => [m.id, m.phase]), [['move-dash', 'frozen']]);

    await page.reload();
    await page.waitForSelector('#moves-panel:not([hidden])');
    const first = await page.locator('#topology tbody tr').first().innerText();
    assert.match(first, /0–3[\s\S]*MySQL001A[\s\S]*open · frozen by move-dash/);
    const row = await page.locator('#moves tbody tr').first().innerText();
    assert.match(row, /move-dash\s+0–3\s+MySQL001A\s+MySQL002A\s+frozen\s+held \(budget 60000 ms\)/);
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await f.cleanup();
  }
});
