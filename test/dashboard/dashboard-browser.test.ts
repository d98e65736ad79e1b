/**
 * The dashboard in a real browser (Debian's Chromium, driven by playwright-core) against a live
 * service: what a person sees and clicks. scripts/install-test-deps.sh installs Chromium;
 * SHARDKIT_CHROMIUM names another binary.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser, type Page } from 'playwright-core';
import { listeningApp } from '../http/http-fixture.js';

const CHROMIUM = process.env.SHARDKIT_CHROMIUM ?? '/usr/bin/chromium';
const HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>';

async function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    // No sandbox as root; no background traffic to hosts this machine cannot reach.
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** Page errors and CSP reports: any of them fails the test. Failed fetches (a 404 shown on purpose) are not errors of the page. */
function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !/Failed to load resource/.test(msg.text())) problems.push(`console: ${msg.text()}`);
  });
  return problems;
}

test('the dashboard shows the shard map and traffic, and explores objects, mappings and lookups in Chromium', async () => {
  const f = await listeningApp();
  const base = f.base;
  const browser = await launch();
  try {
    const board = await f.kit.objects.create('board', { name: 'Bread' });
    const pins = [];
    for (let i = 0; i < 25; i++) {
      const pin = await f.kit.objects.create('pin', { details: `pin ${i}` }, { near: board.id });
      await f.kit.mappings.add('board_has_pins', board.id, pin.id, { sequence: 1000 + i });
      pins.push(pin);
    }
    await f.kit.objects.delete(pins[0]!.id);
    const hostile = await f.kit.objects.create('pin', { details: HOSTILE, [HOSTILE]: 1 });
    await f.kit.lookups.put('username', 'ann <b>', board.id);
    // Keys a URL would mangle: slashes, ?, #, %, spaces, dots inside; and "..", which no URL path can carry.
    const awkward = ['a/b?c#d %e', '...', 'x.y'];
    for (const [i, key] of awkward.entries()) await f.kit.lookups.put('username', key, pins[i + 1]!.id);
    await f.kit.lookups.put('username', '..', board.id);

    const page = await browser.newPage();
    const problems = watch(page);
    await page.goto(`${base}/`);
    assert.equal(new URL(page.url()).pathname, '/dashboard/');
    await page.waitForSelector('#status[data-state="ok"]');
    const map = (await f.kit.shardMap()).toJSON();
    assert.equal(await page.locator('#topology tbody tr').count(), map.ranges.length);
    assert.match(await page.locator('#topology-summary').innerText(), new RegExp(`^${map.ranges.reduce((n, r) => n + r.range[1] - r.range[0] + 1, 0)} logical shards on \\d+ hosts`));
    assert.match(await page.locator('#service').innerText(), /sqlite backend · shard map version 1/);

    // An object: its ID decoded, its data shown as text, never as markup.
    await page.fill('#object-id', hostile.id.toString());
    await page.click('#object-form button');
    await page.waitForSelector('#object-json');
    assert.equal(new URL(page.url()).hash, `#object=${hostile.id}`);
    const shown = JSON.parse(await page.locator('#object-json').innerText()) as Record<string, unknown>;
    assert.deepEqual(shown, { details: HOSTILE, [HOSTILE]: 1 });
    assert.equal(await page.locator('#object-result img, #object-result script, #object-result b').count(), 0, 'no markup from data');
    assert.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined);
    assert.match(await page.locator('#object-result').innerText(), new RegExp(`type\\s+pin\\s+shard\\s+${hostile.shard}\\s+local id\\s+\\d+[\\s\\S]*ETag\\s+"`));

    // Bad and missing IDs say so.
    await page.fill('#object-id', 'abc');
    await page.click('#object-form button');
    await page.waitForSelector('#object-result .error[data-code="INVALID_ID"]');
    const missing = (BigInt(board.id) + 999n).toString();
    await page.goto(`${base}/dashboard/#object=${missing}`);
    await page.waitForSelector('#object-result .error[data-code="NOT_FOUND"]');

    // From the board to its pins: the link under the object, two pages, the deleted pin marked.
    await page.goto(`${base}/dashboard/#object=${board.id}`);
    await page.click('#object-result a:text("board_has_pins")');
    await page.waitForSelector('#mapping-items tbody tr');
    assert.equal(await page.locator('#mapping-items tbody tr').count(), 20);
    assert.match(await page.locator('#mapping-result p').first().innerText(), new RegExp(`^25 in board_has_pins of ${board.id}`));
    const firstRow = await page.locator('#mapping-items tbody tr').first().innerText();
    assert.match(firstRow, new RegExp(`${pins[24]!.id}\\s+1024\\s+\\{"details":"pin 24"\\}`));
    await page.click('#mapping-next');
    await page.waitForFunction(() => document.querySelectorAll('#mapping-items tbody tr').length === 5);
    // The second page is in the URL: a reload shows it again.
    assert.match(new URL(page.url()).hash, /&cursor=/);
    await page.reload();
    await page.waitForFunction(() => document.querySelectorAll('#mapping-items tbody tr').length === 5);
    const last = await page.locator('#mapping-items tbody tr').last().innerText();
    assert.match(last, new RegExp(`${pins[0]!.id}\\s+1000\\s+\\(deleted\\)`));
    assert.equal(await page.locator('#mapping-next').count(), 0, 'no page after the last');
    // A row's ID opens that object.
    await page.locator('#mapping-items tbody tr a').first().click();
    await page.waitForFunction((id) => document.getElementById('object-json')?.textContent?.includes('"pin 4"') && location.hash === `#object=${id}`, pins[4]!.id.toString());

    // A lookup with a key that looks like markup.
    await page.selectOption('#lookup-keyspace', 'username');
    await page.fill('#lookup-key', 'ann <b>');
    await page.click('#lookup-form button');
    await page.waitForSelector('#lookup-result dd a');
    assert.equal(await page.locator('#lookup-result dd a').innerText(), board.id.toString());
    assert.match(await page.locator('#lookup-result').innerText(), /ann <b>/);
    for (const [i, key] of awkward.entries()) {
      await page.fill('#lookup-key', key);
      await page.click('#lookup-form button');
      await page.waitForFunction((id) => document.querySelector('#lookup-result dd a')?.textContent === id, pins[i + 1]!.id.toString());
    }
    // ".." cannot travel in a URL path; the page asks with ?key= and finds it.
    await page.fill('#lookup-key', '..');
    await page.click('#lookup-form button');
    await page.waitForFunction((id) => document.querySelector('#lookup-result dd a')?.textContent === id, board.id.toString());
    await page.fill('#lookup-key', 'nobody');
    await page.click('#lookup-form button');
    await page.waitForSelector('#lookup-result .error[data-code="NOT_FOUND"]');

    // Traffic comes from /metrics: the object reads made above are counted, with their 4xx.
    await page.reload();
    await page.waitForSelector('#traffic tbody tr');
    const traffic = await page.locator('#traffic tbody tr', { hasText: 'GET /v1/objects/:id' }).innerText();
    const [, total, , clientErrors] = traffic.split('\t').map((c) => c.trim());
    assert.ok(Number(total!.replace(/,/g, '')) >= 4, traffic);
    assert.ok(Number(clientErrors) >= 1, traffic);
    assert.match(await page.locator('#counters').innerText(), /shard errors: 0/);
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await f.cleanup();
  }
});

test('the dashboard says so when the service hangs or stops answering, and recovers', { timeout: 60_000 }, async () => {
  const f = await listeningApp();
  const base = f.base;
  const browser = await launch();
  try {
    const page = await browser.newPage();
    await page.goto(`${base}/dashboard/`);
    await page.waitForSelector('#status[data-state="ok"]');
    // A hung service: calls are accepted and never answered. The page must not stay "up".
    await page.route('**/healthz', () => {});
    await page.waitForSelector('#status[data-state="down"]', { timeout: 15_000 });
    assert.match(await page.locator('#error').innerText(), /did not answer: no answer within 4 s/);
    // The service back: up again.
    await page.unroute('**/healthz');
    await page.waitForSelector('#status[data-state="ok"]', { timeout: 15_000 });
    assert.equal(await page.locator('#error').isHidden(), true);
    // A service that refuses: every API call from now on fails at once.
    await page.route('**/*', (route) => route.abort());
    await page.waitForSelector('#status[data-state="down"]', { timeout: 15_000 });
    assert.match(await page.locator('#error').innerText(), /did not answer/);
  } finally {
    await browser.close();
    await f.cleanup();
  }
});

test('with an auth file, the dashboard asks for a token and keeps it in session storage only', async () => {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { createToken, TokenSet } = await import('../../src/http/auth-tokens.js');
  const { buildApp } = await import('../../src/http/app.js');
  const { makeKit } = await import('../kit/kit-fixture.js');
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-dash-auth-'));
  const token = createToken(join(dir, 'tokens'), 'read');
  const f = makeKit();
  const app = await buildApp({ kit: f.kit, tokens: new TokenSet(join(dir, 'tokens')) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const browser = await launch();
  try {
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems = watch(page);
    await page.goto(`${base}/dashboard/`);
    await page.waitForSelector('#token-form:not([hidden])');
    // The form and the status are set by two updates: wait for the status rather than read it at
    // once (a fresh-clone CI run under load read 'unknown' in between).
    await page.waitForSelector('#status[data-state="down"]', { timeout: 15_000 });
    await page.fill('#token', token);
    await page.click('#token-form button');
    await page.waitForSelector('#status[data-state="ok"]');
    assert.ok(await page.locator('#token-form').isHidden());
    assert.ok((await page.locator('#topology tbody tr').count()) > 0);
    assert.ok((await page.locator('#mapping-name option').count()) > 0, 'the schema is read with the token');
    const stored = await page.evaluate(() => ({ session: sessionStorage.getItem('shardkit.token'), local: localStorage.length, cookie: document.cookie }));
    assert.deepEqual(stored, { session: token, local: 0, cookie: '' });
    // A new tab of the same browser context starts without it (session storage is per tab).
    const other = await context.newPage();
    await other.goto(`${base}/dashboard/`);
    await other.waitForSelector('#token-form:not([hidden])');
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await app.close();
    await f.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
});
