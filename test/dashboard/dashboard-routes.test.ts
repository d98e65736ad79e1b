/**
 * The dashboard's routes: / and /dashboard redirect to /dashboard/, the files come with their
 * types and a strict CSP, nothing else under /dashboard/ is served (no path from a request ever
 * reaches the file system), and the routes stay out of the API document.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { buildApp } from '../../src/http/app.js';
import { DASHBOARD_CSP } from '../../src/http/routes/dashboard-routes.js';
import { makeKit } from '../kit/kit-fixture.js';
import { assertError, makeApp } from '../http/http-fixture.js';

test('/ and /dashboard redirect to /dashboard/, which serves the page and its files with their types and a strict CSP', async () => {
  const f = await makeApp();
  try {
    const root = await f.app.inject({ method: 'GET', url: '/' });
    assert.equal(root.statusCode, 302);
    assert.equal(root.headers.location, '/dashboard/');
    const noSlash = await f.app.inject({ method: 'GET', url: '/dashboard' });
    assert.equal(noSlash.statusCode, 301);
    assert.equal(noSlash.headers.location, '/dashboard/');
    const files: Array<[string, RegExp, string]> = [
      ['/dashboard/', /^text\/html/, 'dashboard/index.html'],
      ['/dashboard/dashboard.js', /^text\/javascript/, 'dashboard/dashboard.js'],
      ['/dashboard/dashboard-lib.js', /^text\/javascript/, 'dashboard/dashboard-lib.js'],
      ['/dashboard/dashboard.css', /^text\/css/, 'dashboard/dashboard.css'],
      ['/dashboard/favicon.svg', /^image\/svg\+xml/, 'dashboard/favicon.svg'],
    ];
    for (const [url, type, file] of files) {
      const res = await f.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, url);
      assert.match(String(res.headers['content-type']), type, url);
      assert.equal(res.body, readFileSync(file, 'utf8'), url);
      assert.equal(res.headers['content-security-policy'], DASHBOARD_CSP, url);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', url);
      assert.equal(res.headers['cache-control'], 'no-cache', url);
      assert.equal(res.headers['referrer-policy'], 'no-referrer', url);
      // Revalidation with the file's ETag is a 304 without the body; a stale ETag gets the file.
      const etag = String(res.headers.etag);
      assert.match(etag, /^"[A-Za-z0-9_-]{22}"$/, url);
      const again = await f.app.inject({ method: 'GET', url, headers: { 'if-none-match': etag } });
      assert.equal(again.statusCode, 304, url);
      assert.equal(again.body, '', url);
      assert.equal((await f.app.inject({ method: 'GET', url, headers: { 'if-none-match': '"stale"' } })).statusCode, 200, url);
    }
    assert.equal(new Set(await Promise.all(files.map(async ([url]) => (await f.app.inject({ method: 'GET', url })).headers.etag))).size, files.length, 'one ETag per file');
    assert.match(DASHBOARD_CSP, /script-src 'self';/);
    assert.doesNotMatch(DASHBOARD_CSP, /unsafe-inline|unsafe-eval|\*/);
    // Every script and style the page names is one the service serves; none is inline.
    const html = readFileSync('dashboard/index.html', 'utf8');
    for (const [, src] of html.matchAll(/(?:src|href)="(\/dashboard\/[^"]+)"/g)) assert.ok(files.some(([url]) => url === src), `${src} is served`);
    assert.doesNotMatch(html, /<script>|<script [^>]*>[^<]|<style|\son[a-z]+=/i, 'no inline script, style or handler');
  } finally {
    await f.cleanup();
  }
});

test('nothing else under /dashboard/ is served: unknown names and traversal attempts are 404 NOT_FOUND', async () => {
  const f = await makeApp();
  try {
    for (const url of ['/dashboard/package.json', '/dashboard/..%2Fpackage.json', '/dashboard/%2e%2e/package.json', '/dashboard/../package.json',
      '/dashboard/dashboard-lib.test.ts', '/dashboard/index.html/', '/dashboard//etc/passwd', '/dashboard/%00', '/dashboard/DASHBOARD.JS']) {
      const res = await f.app.inject({ method: 'GET', url });
      assertError(res, 404, 'NOT_FOUND', url);
      assert.doesNotMatch(res.body, /"name": *"shardkit"|root:/, `${url} leaks nothing`);
    }
    // A path that exists with other methods: 405 with Allow (docs/http-api.md).
    assertError(await f.app.inject({ method: 'POST', url: '/dashboard/', payload: {} }), 405, 'METHOD_NOT_ALLOWED', 'POST');
    // Not API routes: absent from the OpenAPI document.
    const spec = (await f.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, unknown> };
    assert.deepEqual(Object.keys(spec.paths).filter((p) => p === '/' || p.startsWith('/dashboard')), []);
  } finally {
    await f.cleanup();
  }
});

test('buildApp({ dashboard: false }) serves no dashboard', async () => {
  const k = makeKit();
  const app = await buildApp({ kit: k.kit, dashboard: false });
  try {
    assertError(await app.inject({ method: 'GET', url: '/' }), 404, 'NOT_FOUND', '/');
    assertError(await app.inject({ method: 'GET', url: '/dashboard/' }), 404, 'NOT_FOUND', '/dashboard/');
    assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  } finally {
    await app.close();
    await k.cleanup();
  }
});
