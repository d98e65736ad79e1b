/**
 * Issue #34, finding 6: a page on another origin ran `POST /v1/admin/widecolumn/compact` on an
 * open loopback service with a bodiless `fetch` (a "simple" request: no CORS preflight), and
 * compact took any body (`{"x":1}`). A POST now needs a JSON content type (415 otherwise, nothing
 * run), routes without options take an empty or `{}` JSON body, and compact refuses fields.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { assertError, makeApp } from './http-fixture.js';
import { widecolumnRoutes } from '../../src/http/routes/widecolumn-routes.js';
import type { WideColumnEngine } from '../../src/widecolumn/engine.js';

/** Only what the compact route calls; counts the compactions run. */
function countingEngine(): { engine: WideColumnEngine; runs: () => number } {
  let runs = 0;
  const engine = {
    kind: 'counting',
    limits: { maxBatchBytes: 1024 * 1024 },
    compact: async () => {
      runs++;
      return { removedExcessVersions: 0 };
    },
  } as unknown as WideColumnEngine;
  return { engine, runs: () => runs };
}

test('a bodiless cross-site POST (no content type) is 415 and runs nothing; a JSON one runs; compact refuses fields', async () => {
  const { engine, runs } = countingEngine();
  const f = await makeApp({ plugins: [widecolumnRoutes(engine, { exportDir: tmpdir() })] });
  try {
    // What Chromium sent for `fetch(url, { method: 'POST', mode: 'no-cors' })` from another origin.
    const crossSite = { origin: 'http://attacker.example', 'sec-fetch-site': 'cross-site', 'content-length': '0' };
    assertError(await f.app.inject({ method: 'POST', url: '/v1/admin/widecolumn/compact', headers: crossSite }), 415, 'UNSUPPORTED_MEDIA_TYPE', 'bodiless compact');
    assertError(await f.app.inject({ method: 'POST', url: '/v1/objects/user', headers: crossSite }), 415, 'UNSUPPORTED_MEDIA_TYPE', 'bodiless create');
    // The other simple content types never reached a route either.
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      assertError(await f.app.inject({ method: 'POST', url: '/v1/admin/widecolumn/compact', headers: { ...crossSite, 'content-type': type }, payload: 'x=1' }), 415, 'UNSUPPORTED_MEDIA_TYPE', type);
    }
    assert.equal(runs(), 0, 'no compaction ran');
    // Unknown options are refused rather than ignored.
    assertError(await f.app.inject({ method: 'POST', url: '/v1/admin/widecolumn/compact', payload: { x: 1 } }), 400, 'INVALID_ARGUMENT', 'compact {"x":1}');
    assert.equal(runs(), 0, 'no compaction ran');
    // What clients send: an empty JSON body or {}.
    const empty = await f.app.inject({ method: 'POST', url: '/v1/admin/widecolumn/compact', headers: { 'content-type': 'application/json' } });
    assert.equal(empty.statusCode, 200, empty.body);
    const braces = await f.app.inject({ method: 'POST', url: '/v1/admin/widecolumn/compact', payload: {} });
    assert.equal(braces.statusCode, 200, braces.body);
    assert.equal(runs(), 2);
  } finally {
    await f.cleanup();
  }
});
