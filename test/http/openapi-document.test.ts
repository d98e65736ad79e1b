/**
 * Issue #33, the OpenAPI document: valid for a well-kept validator (@readme/openapi-parser: the
 * OpenAPI 3.0 schema plus the checks a schema cannot make, such as duplicate operationIds or path
 * parameters missing from a path), both as the service builds it and as docs/openapi.json ships;
 * and it documents exactly the routes the service registers, method by method.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { compileErrors, validate } from '@readme/openapi-parser';
import { openapiDocument } from '../../src/cli/actions/openapi.js';
import { buildApp } from '../../src/http/app.js';
import { ticketsRoutes } from '../../src/http/routes/tickets-routes.js';
import { widecolumnDisabledRoutes } from '../../src/http/routes/widecolumn-routes.js';
import { makeKit } from '../kit/kit-fixture.js';

type Doc = { paths: Record<string, Record<string, unknown>> };

async function assertValid(doc: unknown, what: string): Promise<void> {
  // validate() dereferences in place: give it a copy.
  const result = await validate(structuredClone(doc) as never);
  assert.ok(result.valid, `${what}:\n${result.valid ? '' : compileErrors(result)}`);
}

test('the OpenAPI document passes @readme/openapi-parser, as built and as shipped in docs/openapi.json', async () => {
  await assertValid(await openapiDocument(), 'openapiDocument()');
  await assertValid(JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8')), 'docs/openapi.json');
});

test('no path parameter is named `*` (generators cannot name it): the rows wildcard is {row}', async () => {
  const doc = (await openapiDocument()) as { paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string }> }>> };
  for (const [path, operations] of Object.entries(doc.paths)) {
    assert.doesNotMatch(path, /\{\*\}/, path);
    for (const [method, op] of Object.entries(operations)) {
      const names = (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name).sort();
      assert.deepEqual(names, [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort(), `${method} ${path}`);
    }
  }
  assert.ok(doc.paths['/v1/datasets/{ds}/rows/{row}']?.get);
});

test('the validator is not a rubber stamp: a path parameter the path lacks, or a repeated operationId, is refused', async () => {
  const doc = structuredClone(await openapiDocument()) as Doc;
  const broken = structuredClone(doc);
  const get = broken.paths['/v1/objects/{id}']!.get as { parameters: Array<{ name: string }> };
  get.parameters = get.parameters.map((p) => (p.name === 'id' ? { ...p, name: 'ident' } : p));
  assert.equal((await validate(broken as never)).valid, false);
  const twice = structuredClone(doc);
  (twice.paths['/v1/topology']!.get as { operationId: string }).operationId = 'getObjectsById';
  assert.equal((await validate(twice as never)).valid, false);
});

/** A fastify route pattern as an OpenAPI path: `:name(regex)` -> `{name}`, `::` -> `:`, the rows wildcard -> `{row}`. */
function openapiPath(route: string): string {
  return route
    .replace(/::/g, '\u0000')
    .replace(/:([A-Za-z0-9_]+)(\([^)]*\))?/g, '{$1}')
    .replace(/\/rows\/\*$/, '/rows/{row}')
    .replace(/\u0000/g, ':');
}

/** Routes for people, not API clients: the docs UI, the dashboard, the document itself. */
const UNDOCUMENTED = /^(\/|\/docs(\/.*)?|\/dashboard(\/.*)?|\/openapi\.json)$/;

test('every route the service registers is in the document, method by method, and the document has no other', async () => {
  const f = makeKit();
  // The routes `shardkit serve` mounts (as src/cli/actions/openapi.ts builds the document).
  const app = await buildApp({ kit: f.kit, plugins: [ticketsRoutes(), widecolumnDisabledRoutes()] });
  try {
    // /metrics lists every registered route (its latency series exist from registration on).
    const scrape = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    const registered = new Set<string>();
    for (const m of scrape.matchAll(/^shardkit_http_request_duration_seconds_count\{method="(\w+)",route="([^"]*)"\}/gm)) {
      // HEAD is answered for every GET (fastify's exposeHeadRoutes) and not documented apart.
      if (m[1] === 'HEAD' || UNDOCUMENTED.test(m[2]!)) continue;
      registered.add(`${m[1]} ${openapiPath(m[2]!)}`);
    }
    const doc = (await openapiDocument()) as Doc;
    const documented = new Set(Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`)));
    assert.ok(registered.size >= 36, `${registered.size} routes`);
    assert.deepEqual([...registered].filter((r) => !documented.has(r)), [], 'registered but not documented');
    assert.deepEqual([...documented].filter((r) => !registered.has(r)), [], 'documented but not registered');
  } finally {
    await app.close();
    await f.cleanup();
  }
});

test('every operation lists the statuses any route answers (bad query 400, 405, 408, 421, 431), a route with a body 413 and 415, the wide-column routes 501; and what a service answers is listed', async () => {
  type Op = { responses: Record<string, unknown> };
  const doc = (await openapiDocument()) as { paths: Record<string, Record<string, Op>> };
  const missing: string[] = [];
  for (const [path, operations] of Object.entries(doc.paths)) {
    if (!path.startsWith('/v1/')) continue;
    for (const [method, op] of Object.entries(operations)) {
      const want = ['400', '405', '408', '421', '431', ...(['post', 'put', 'patch'].includes(method) ? ['413', '415'] : []), ...(path.startsWith('/v1/datasets') ? ['501'] : [])];
      for (const s of want) if (!(s in op.responses)) missing.push(`${method.toUpperCase()} ${path}: ${s}`);
    }
  }
  assert.deepEqual(missing, []);
  // The answers themselves, on paths without parameters: an unknown query parameter, another method.
  const kit = makeKit();
  // As `serve` mounts them: tickets unconfigured (501) and the wide-column store off (501).
  const app = await buildApp({ kit: kit.kit, plugins: [ticketsRoutes(), widecolumnDisabledRoutes()] });
  try {
    const unlisted: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      if (!path.startsWith('/v1/') || path.includes('{')) continue;
      for (const [method, op] of Object.entries(operations)) {
        const res = await app.inject({ method: method.toUpperCase() as 'GET', url: `${path}?zz=1`, ...(method === 'get' ? {} : { payload: {} }) });
        if (!(String(res.statusCode) in op.responses)) unlisted.push(`${method.toUpperCase()} ${path}?zz=1: ${res.statusCode}`);
        const other = method === 'delete' ? 'TRACE' : 'DELETE';
        const res405 = await app.inject({ method: other as 'DELETE', url: path });
        if (res405.statusCode === 405 && !('405' in op.responses)) unlisted.push(`${other} ${path}: 405`);
      }
    }
    assert.deepEqual(unlisted, []);
  } finally {
    await app.close();
    await kit.cleanup();
  }
});
