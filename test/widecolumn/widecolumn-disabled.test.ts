/**
 * A service without the wide-column store (`serve --no-widecolumn`) still has the wide-column
 * routes, and they say why they cannot serve: 501 WIDECOLUMN_DISABLED, not 404 "no route".
 * (Over HTTP from a real `serve --no-widecolumn` process: test/tickets/tickets-not-configured.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { widecolumnDisabledRoutes } from '../../src/http/routes/widecolumn-routes.js';
import { assertError, makeApp } from '../http/http-fixture.js';
import { buildApp } from '../../src/http/app.js';
import { makeKit } from '../kit/kit-fixture.js';

type Spec = { paths: Record<string, Record<string, { tags?: string[] }>> };

test('without a store, every wide-column route answers 501 WIDECOLUMN_DISABLED, even to bad input', async () => {
  const f = await makeApp({ plugins: [widecolumnDisabledRoutes()] });
  try {
    const spec = (await f.app.inject({ method: 'GET', url: '/openapi.json' })).json() as Spec;
    const calls: Array<[string, string]> = [];
    for (const [path, methods] of Object.entries(spec.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        if (op.tags?.some((t) => t.startsWith('widecolumn'))) calls.push([method.toUpperCase(), path.replace(/\{[^}]+\}/g, 'x')]);
      }
    }
    // Every route of the live plugin: datasets, rows, batches, admin compaction/backup/export.
    assert.ok(calls.length >= 10, `wide-column routes in the document: ${calls.length}`);
    for (const [method, url] of calls) {
      for (const payload of [undefined, '{"items":[{"column":"c","value":5}]}', '{']) {
        const res = await f.app.inject({ method, url, ...(payload !== undefined && method !== 'GET' && method !== 'DELETE' ? { payload, headers: { 'content-type': 'application/json' } } : {}) });
        assertError(res, 501, 'WIDECOLUMN_DISABLED', `${method} ${url} ${payload ?? ''}`);
        assert.match((res.json() as { error: { message: string } }).error.message, /--no-widecolumn/);
      }
    }
    // Routes of other modules are untouched by the disabled plugin's hook.
    assert.equal((await f.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
    assertError(await f.app.inject({ method: 'GET', url: '/v1/datasetz' }), 404, 'NOT_FOUND', 'an unknown route');
  } finally {
    await f.cleanup();
  }
});

test('with an admin token, the disabled admin routes ask for the token first (401), then say 501', async () => {
  const k = makeKit();
  const app = await buildApp({ kit: k.kit, plugins: [widecolumnDisabledRoutes()], admin: { kind: 'token', token: 'a'.repeat(32) } });
  try {
    const url = '/v1/admin/widecolumn/compact';
    assertError(await app.inject({ method: 'POST', url, payload: {} }), 401, 'UNAUTHORIZED', 'no token');
    assertError(await app.inject({ method: 'POST', url, payload: {}, headers: { authorization: `Bearer ${'b'.repeat(32)}` } }), 401, 'UNAUTHORIZED', 'wrong token');
    assertError(await app.inject({ method: 'POST', url, payload: {}, headers: { authorization: `Bearer ${'a'.repeat(32)}` } }), 501, 'WIDECOLUMN_DISABLED', 'right token');
    // Data routes have no token check: 501 straight away.
    assertError(await app.inject({ method: 'GET', url: '/v1/datasets' }), 501, 'WIDECOLUMN_DISABLED', 'data route');
  } finally {
    await app.close();
    await k.cleanup();
  }
});
