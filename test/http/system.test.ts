import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { defaultConfig } from '../../src/config/config.js';
import { ShardKitError } from '../../src/errors.js';
import { buildApp } from '../../src/http/app.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { ticketsRoutes } from '../../src/http/routes/tickets-routes.js';
import { widecolumnRoutes } from '../../src/http/routes/widecolumn-routes.js';
import { createTicketClient } from '../../src/tickets/ticket-client.js';
import { WideColumnStore } from '../../src/widecolumn/wide-column-store.js';
import { testConfig } from '../kit/kit-fixture.js';
import { assertError, createObject, makeApp } from './http-fixture.js';

test('GET /v1/schema lists the types with their type ids, the mappings and the keyspaces, with their tables', async () => {
  const f = await makeApp();
  try {
    const res = await f.app.inject({ method: 'GET', url: '/v1/schema' });
    assert.equal(res.statusCode, 200);
    const body = res.json() as { types: Array<{ name: string; id: number; table: string }>; mappings: Array<{ name: string; from: string; to: string; table: string }>; keyspaces: Array<{ name: string; table: string }> };
    assert.deepEqual(body.types.find((t) => t.name === 'pin'), { name: 'pin', id: 1, table: 'pins' });
    assert.deepEqual(body.mappings.find((m) => m.name === 'board_has_pins'), { name: 'board_has_pins', from: 'board', to: 'pin', table: 'board_has_pins' });
    assert.deepEqual(body.keyspaces.find((k) => k.name === 'email'), { name: 'email', table: 'lookup_email' });
    assert.deepEqual(body.types.map((t) => t.name), f.kit.schema.types.map((t) => t.name));
    assert.deepEqual(body.mappings.map((m) => m.name), f.kit.schema.mappings.map((m) => m.name));
    assert.deepEqual(body.keyspaces.map((k) => k.name), f.kit.schema.keyspaces.map((k) => k.name));
  } finally {
    await f.cleanup();
  }
});

test('GET /v1/topology is the shard map in force; /healthz answers', async () => {
  const f = await makeApp();
  try {
    const topo = await f.app.inject({ method: 'GET', url: '/v1/topology' });
    assert.equal(topo.statusCode, 200);
    assert.deepEqual(topo.json(), { ...testConfig.shardMap, version: 1 });
    assert.deepEqual((await f.app.inject({ method: 'GET', url: '/healthz' })).json(), { status: 'ok', backend: 'sqlite', topologyVersion: 1 });
  } finally {
    await f.cleanup();
  }
});

test('/metrics counts requests by route pattern and shard errors by host', async () => {
  const f = await makeApp();
  try {
    const o = await createObject(f.app, 'pin', {}, { shard: 1 });
    await f.app.inject({ method: 'GET', url: `/v1/objects/${o.id}` });
    await f.app.inject({ method: 'GET', url: '/v1/objects/abc' });
    await f.app.inject({ method: 'HEAD', url: `/v1/objects/${o.id}` });
    await f.app.inject({ method: 'DELETE', url: '/no/such/route' });
    await f.app.inject({ method: 'GET', url: '/openapi.json' });
    // A shard file that is not a database: the read fails as SHARD_UNAVAILABLE (503), counted per host.
    mkdirSync(join(f.root, 'MySQL001A'), { recursive: true });
    writeFileSync(join(f.root, 'MySQL001A', 'db00002.sqlite'), 'this is not a database, just some text that is long enough to have a header'.repeat(20));
    const broken = await f.app.inject({ method: 'GET', url: `/v1/objects/${pinterestId.encode({ shard: 2, type: 1, localId: 1 })}` });
    assertError(broken, 503, 'SHARD_UNAVAILABLE');
    const res = await f.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    assert.match(res.body, /shardkit_http_requests_total\{method="GET",route="\/v1\/objects\/:id",status="200"\} 1/);
    assert.match(res.body, /shardkit_http_requests_total\{method="GET",route="\/v1\/objects\/:id",status="400"\} 1/);
    assert.match(res.body, /shardkit_http_requests_total\{method="POST",route="\/v1\/objects\/:type",status="201"\} 1/);
    // Each route counts its own requests (including automatic HEAD routes and the docs routes,
    // which are registered first); requests that match no route count as "unmatched".
    assert.match(res.body, /shardkit_http_requests_total\{method="HEAD",route="\/v1\/objects\/:id",status="200"\} 1/);
    assert.match(res.body, /shardkit_http_requests_total\{method="DELETE",route="unmatched",status="404"\} 1/);
    assert.match(res.body, /shardkit_http_requests_total\{method="GET",route="\/openapi.json",status="200"\} 1/);
    assert.match(res.body, /shardkit_http_request_duration_seconds_bucket\{le="[0-9.]+",method="GET",route="\/v1\/objects\/:id"\}/);
    assert.match(res.body, /shardkit_shard_errors_total\{host="MySQL001A",fleet="objects",op="get"\} 1/);
    assert.match(res.body, /shardkit_topology_version 1/);
    // Process metrics under the names Node dashboards expect (#33: they were shardkit_process_*).
    assert.match(res.body, /^process_cpu_seconds_total \d/m);
    assert.match(res.body, /^nodejs_heap_size_used_bytes \d/m);
    assert.doesNotMatch(res.body, /shardkit_process_|shardkit_nodejs_/);
    assert.doesNotMatch(res.body, new RegExp(o.id), 'IDs never become label values');
  } finally {
    await f.cleanup();
  }
});

test('/openapi.json documents every route with its schemas; /docs serves the UI', async () => {
  const f = await makeApp();
  try {
    const spec = (await f.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { openapi: string; paths: Record<string, Record<string, { responses: Record<string, unknown>; parameters?: unknown[]; requestBody?: unknown }>> };
    assert.match(spec.openapi, /^3\./);
    const routes = Object.entries(spec.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)).sort();
    assert.deepEqual(routes, [
      'DELETE /v1/lookups/{keyspace}',
      'DELETE /v1/lookups/{keyspace}/{key}',
      'DELETE /v1/mappings/{name}/{from}/{to}',
      'DELETE /v1/objects/{id}',
      'GET /healthz',
      'GET /metrics',
      'GET /v1/admin/shards/stats',
      'GET /v1/heal',
      'GET /v1/lookups/{keyspace}',
      'GET /v1/lookups/{keyspace}/{key}',
      'GET /v1/mappings/{name}/{from}',
      'GET /v1/mappings/{name}/{from}/count',
      'GET /v1/mappings/{name}/{from}/objects',
      'GET /v1/objects',
      'GET /v1/objects/{id}',
      'GET /v1/schema',
      'GET /v1/topology',
      'PATCH /v1/objects/{id}',
      'POST /v1/objects/{type}',
      'POST /v1/objects/{type}:batchCreate',
      'PUT /v1/lookups/{keyspace}',
      'PUT /v1/lookups/{keyspace}/{key}',
      'PUT /v1/mappings/{name}/{from}/{to}',
    ]);
    for (const [path, ops] of Object.entries(spec.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        assert.ok(Object.keys(op.responses).length > 0, `${method} ${path} documents its responses`);
        if (path.includes('{')) assert.ok((op.parameters ?? []).length > 0, `${method} ${path} documents its parameters`);
        if (['post', 'put', 'patch'].includes(method)) assert.ok(op.requestBody, `${method} ${path} documents its body`);
      }
    }
    const docs = await f.app.inject({ method: 'GET', url: '/docs/' });
    assert.equal(docs.statusCode, 200);
    assert.match(docs.body, /swagger/i);
  } finally {
    await f.cleanup();
  }
});

test('route plugins of other modules plug in and share the error format; unexpected errors are a bare 500', async () => {
  const plugin = async (app: FastifyInstance) => {
    app.get('/v1/extra/ok', async () => ({ kit: typeof app.kit.objects.get }));
    app.get('/v1/extra/missing', async () => {
      throw new ShardKitError('UNKNOWN_DATASET', 'no dataset x');
    });
    app.get('/v1/extra/bug', async () => {
      throw new TypeError('secret internals at /srv/app.js:10:5');
    });
  };
  const f = await makeApp({ plugins: [plugin] });
  try {
    assert.deepEqual((await f.app.inject({ method: 'GET', url: '/v1/extra/ok' })).json(), { kit: 'function' });
    assertError(await f.app.inject({ method: 'GET', url: '/v1/extra/missing' }), 404, 'UNKNOWN_DATASET');
    const bug = await f.app.inject({ method: 'GET', url: '/v1/extra/bug' });
    assert.equal(bug.statusCode, 500);
    assert.deepEqual(bug.json(), { error: { code: 'INTERNAL', message: 'internal error' } });
    const spec = (await f.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, unknown> };
    assert.ok('/v1/extra/ok' in spec.paths);
  } finally {
    await f.cleanup();
  }
});

test('every OpenAPI tag a route uses, tickets and wide-column plugins included, is declared with a description', async () => {
  // Pools are created without connecting: building the routes needs no ticket server.
  const tickets = createTicketClient({ servers: [{ name: 't1', host: '127.0.0.1', port: 1 }], sequences: ['photos'] });
  const wcDir = mkdtempSync(join(tmpdir(), 'shardkit-openapi-wc-'));
  const store = await WideColumnStore.open(wcDir);
  const f = await makeApp({ plugins: [ticketsRoutes(tickets), widecolumnRoutes(store)] });
  try {
    const spec = (await f.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { tags: Array<{ name: string; description?: string }>; paths: Record<string, Record<string, { tags?: string[] }>> };
    const used = new Set(Object.values(spec.paths).flatMap((ops) => Object.values(ops).flatMap((op) => op.tags ?? [])));
    assert.ok(used.has('tickets') && used.has('widecolumn'), `tags used: ${[...used].join(', ')}`);
    const declared = new Map(spec.tags.map((t) => [t.name, t.description]));
    for (const tag of used) assert.ok((declared.get(tag) ?? '').length > 0, `tag ${tag} is declared with a description`);
    for (const [name, description] of declared) assert.ok((description ?? '').length > 0, `tag ${name} has a description`);
    // The generated document (stub dependencies) has exactly the routes of this fully mounted app.
    const { openapiDocument } = await import('../../src/cli/actions/openapi.js');
    const generated = (await openapiDocument()) as { paths: Record<string, Record<string, unknown>> };
    const routes = (paths: Record<string, Record<string, unknown>>) => Object.entries(paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`)).sort();
    assert.deepEqual(routes(generated.paths), routes(spec.paths));
  } finally {
    await f.cleanup();
    await store.close();
    await tickets.close();
    rmSync(wcDir, { recursive: true, force: true });
  }
});

test('docs/openapi.json is the document the service serves (regenerate: shardkit openapi --out docs/openapi.json)', async () => {
  const { openapiDocument } = await import('../../src/cli/actions/openapi.js');
  const committed = JSON.parse(readFileSync('docs/openapi.json', 'utf8')) as { paths: Record<string, Record<string, unknown>> };
  assert.deepEqual(committed, JSON.parse(JSON.stringify(await openapiDocument())));
  // The whole API a user can call, the tickets and wide-column (admin included) plugins too.
  const expected: Array<[string, string]> = [
    ['/v1/objects/{type}', 'post'], ['/v1/objects/{id}', 'patch'], ['/v1/mappings/{name}/{from}/{to}', 'put'], ['/v1/lookups/{keyspace}/{key}', 'put'], ['/healthz', 'get'],
    ['/v1/tickets/{sequence}', 'post'], ['/v1/tickets', 'get'],
    ['/v1/datasets', 'get'], ['/v1/datasets/{ds}', 'put'], ['/v1/datasets/{ds}/rows/{row}', 'get'], ['/v1/datasets/{ds}/rows/{row}', 'put'], ['/v1/datasets/{ds}/rows/{row}', 'delete'],
    ['/v1/datasets/{ds}/rows:batchGet', 'post'], ['/v1/datasets/{ds}/rows:batchPut', 'post'], ['/v1/datasets/{ds}/rows:batchDelete', 'post'],
    ['/v1/admin/widecolumn/compact', 'post'], ['/v1/admin/widecolumn/backup', 'post'], ['/v1/admin/widecolumn/export', 'post'],
    ['/v1/admin/shards/stats', 'get'],
  ];
  const missing = expected.filter(([path, method]) => committed.paths[path]?.[method] === undefined).map(([path, method]) => `${method.toUpperCase()} ${path}`);
  assert.deepEqual(missing, [], 'routes missing from docs/openapi.json');
});

test('/metrics publishes the cache counters of a kit with a cache (and none without)', async () => {
  const root = mkdtempSync(join(tmpdir(), 'shardkit-metrics-cache-'));
  const kit = await ShardKit.open({ config: { ...defaultConfig({ shards: 4, pairs: 1 }), cache: { kind: 'memory' } }, dataDir: root });
  const app = await buildApp({ kit });
  try {
    const o = await createObject(app, 'pin', { n: 1 });
    for (let i = 0; i < 3; i++) assert.equal((await app.inject({ method: 'GET', url: `/v1/objects/${o.id}` })).statusCode, 200);
    assert.equal((await app.inject({ method: 'PATCH', url: `/v1/objects/${o.id}`, payload: { n: 2 } })).statusCode, 200);
    const body = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(body, /^shardkit_cache_misses_total 1$/m);
    assert.match(body, /^shardkit_cache_hits_total 2$/m);
    assert.match(body, /^shardkit_cache_fills_total 1$/m);
    assert.match(body, /^shardkit_cache_invalidations_total 1$/m);
    assert.match(body, /^shardkit_cache_errors_total 0$/m);
    assert.match(body, /^# TYPE shardkit_cache_skipped_fills_total counter$/m);
  } finally {
    await app.close();
    await kit.close();
    rmSync(root, { recursive: true, force: true });
  }
  const f = await makeApp();
  try {
    assert.doesNotMatch((await f.app.inject({ method: 'GET', url: '/metrics' })).body, /shardkit_cache_/);
  } finally {
    await f.cleanup();
  }
});
