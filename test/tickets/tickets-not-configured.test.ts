/**
 * A service without a `tickets` section (the embedded default `npm start`) still has the ticket
 * routes, and they say why they cannot serve: 501 TICKETS_NOT_CONFIGURED, not 404 "no route".
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ticketsRoutes } from '../../src/http/routes/tickets-routes.js';
import { assertError, makeApp } from '../http/http-fixture.js';
import { CLI, ensureBuilt } from '../cli/cli-harness.js';
ensureBuilt();

test('without a client, every ticket route answers 501 TICKETS_NOT_CONFIGURED, whatever the count', async () => {
  const f = await makeApp({ plugins: [ticketsRoutes()] });
  try {
    for (const [method, url] of [['POST', '/v1/tickets/photos?count=2'], ['POST', '/v1/tickets/photos'], ['POST', '/v1/tickets/photos?count=0'], ['POST', '/v1/tickets/photos?count=abc'], ['GET', '/v1/tickets']] as const) {
      const res = await f.app.inject({ method, url, ...(method === 'POST' ? { payload: {} } : {}) });
      assertError(res, 501, 'TICKETS_NOT_CONFIGURED', `${method} ${url}`);
      assert.match((res.json() as { error: { message: string } }).error.message, /no ticket servers configured.*"tickets" section.*docs\/tickets\.md/);
    }
  } finally {
    await f.cleanup();
  }
});

test('`shardkit serve --no-widecolumn --no-dashboard` on the embedded default config answers the ticket routes with TICKETS_NOT_CONFIGURED, the wide-column routes with WIDECOLUMN_DISABLED, and serves no dashboard', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-notickets-'));
  const proc = spawn(process.execPath, [CLI, 'serve', '--data', dir, '--port', '0', '--no-widecolumn', '--no-dashboard'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      proc.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
        if (m) resolve(m[1]!);
      });
      proc.stderr.on('data', (c: Buffer) => (out += c.toString()));
      void exited.then((code) => reject(new Error(`serve exited with ${code}: ${out}`)));
    });
    assert.equal((JSON.parse(readFileSync(join(dir, 'shardkit.json'), 'utf8')) as { tickets?: unknown }).tickets, undefined, 'the default config has no tickets section');
    const post = await fetch(`${url}/v1/tickets/photos?count=2`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    assert.equal(post.status, 501);
    const body = (await post.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'TICKETS_NOT_CONFIGURED');
    assert.match(body.error.message, /"tickets" section/);
    const status = await fetch(`${url}/v1/tickets`);
    assert.equal(status.status, 501);
    assert.equal(((await status.json()) as { error: { code: string } }).error.code, 'TICKETS_NOT_CONFIGURED');
    // Started with --no-widecolumn: the wide-column routes say so the same way.
    const ds = await fetch(`${url}/v1/datasets/user_sequences/rows/1001`);
    assert.equal(ds.status, 501);
    assert.equal(((await ds.json()) as { error: { code: string } }).error.code, 'WIDECOLUMN_DISABLED');
    // --no-dashboard: no dashboard, and / is an unknown route.
    for (const path of ['/', '/dashboard/']) {
      const res = await fetch(`${url}${path}`, { redirect: 'manual' });
      assert.equal(res.status, 404, path);
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'NOT_FOUND');
    }
    // Other unknown routes are still 404 NOT_FOUND.
    const other = await fetch(`${url}/v1/ticketz/photos`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(other.status, 404);
    assert.equal(((await other.json()) as { error: { code: string } }).error.code, 'NOT_FOUND');
    assert.doesNotMatch(out, /"level":50/, 'a 501 is not logged as an error');
  } finally {
    proc.kill('SIGTERM');
    assert.equal(await exited, 0, out.slice(-2000));
    rmSync(dir, { recursive: true, force: true });
  }
});
