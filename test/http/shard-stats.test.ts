/** GET /v1/admin/shards/stats: requests and objects per shard over HTTP, its bad input, its auth. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildApp } from '../../src/http/app.js';
import { makeKit } from '../kit/kit-fixture.js';
import { assertError, createObject, failedCases, makeApp, type BadCase } from './http-fixture.js';

interface Stats {
  version: number;
  since: number;
  now: number;
  rateSeconds: number | null;
  objectsAt: number | null;
  totals: { reads: number; writes: number; objects: number | null };
  ranges: Array<{ range: [number, number]; master: string; slave?: string; open: boolean; frozenBy?: string; reads: number[]; writes: number[]; rates: number[] | null; objects: Array<number | null> }>;
}

test('the counts of each shard equal the HTTP requests made, and objects the objects created', async () => {
  const f = await makeApp();
  try {
    const url = '/v1/admin/shards/stats';
    const empty = (await f.app.inject({ method: 'GET', url })).json() as Stats;
    assert.deepEqual(empty.totals, { reads: 0, writes: 0, objects: null });
    assert.equal(empty.rates, undefined);
    assert.deepEqual(empty.ranges.map((r) => [r.range, r.master, r.open]), [[[0, 7], 'MySQL001A', true], [[8, 15], 'MySQL002A', true]]);
    assert.deepEqual(empty.ranges[0]!.rates, null, 'no rate on the first read');

    // Three objects on shard 2, one on shard 9; reads and writes through the HTTP API.
    const a = await createObject(f.app, 'pin', { n: 1 }, { shard: 2 });
    await createObject(f.app, 'pin', { n: 2 }, { shard: 2 });
    await createObject(f.app, 'board', { n: 3 }, { shard: 2 });
    const b = await createObject(f.app, 'board', { n: 4 }, { shard: 9 });
    for (let i = 0; i < 5; i++) assert.equal((await f.app.inject({ method: 'GET', url: `/v1/objects/${a.id}` })).statusCode, 200);
    assert.equal((await f.app.inject({ method: 'PATCH', url: `/v1/objects/${b.id}`, payload: { n: 5 } })).statusCode, 200);
    assert.equal((await f.app.inject({ method: 'PUT', url: `/v1/mappings/board_has_pins/${b.id}/${a.id}` })).statusCode, 204);
    assert.equal((await f.app.inject({ method: 'GET', url: `/v1/mappings/board_has_pins/${b.id}` })).statusCode, 200);
    // A 404 read still asked the shard; a malformed id never reached one.
    assert.equal((await f.app.inject({ method: 'GET', url: `/v1/objects/${BigInt(a.id) + 100n}` })).statusCode, 404);
    assert.equal((await f.app.inject({ method: 'GET', url: '/v1/objects/abc' })).statusCode, 400);

    const s = (await f.app.inject({ method: 'GET', url: `${url}?refresh=true` })).json() as Stats;
    const at = (shard: number) => {
      const r = s.ranges.find((x) => x.range[0] <= shard && shard <= x.range[1])!;
      const i = shard - r.range[0];
      return { reads: r.reads[i], writes: r.writes[i], objects: r.objects[i] };
    };
    assert.deepEqual(at(2), { reads: 6, writes: 3, objects: 3 });
    assert.deepEqual(at(9), { reads: 1, writes: 3, objects: 1 }); // create, patch, mapping put; the list
    assert.deepEqual(at(0), { reads: 0, writes: 0, objects: 0 });
    assert.deepEqual(s.totals, { reads: 7, writes: 6, objects: 4 });
    assert.ok(s.objectsAt !== null && s.objectsAt >= s.since && s.objectsAt <= s.now);
    // The endpoint itself is no shard traffic.
    assert.deepEqual(((await f.app.inject({ method: 'GET', url })).json() as Stats).totals, s.totals);

    const part = (await f.app.inject({ method: 'GET', url: `${url}?first=7&last=8` })).json() as Stats;
    assert.deepEqual(part.ranges.map((r) => [r.range, r.master]), [[[7, 7], 'MySQL001A'], [[8, 8], 'MySQL002A']]);
  } finally {
    await f.cleanup();
  }
});

test('bad parameters get 4xx with a stable code', async () => {
  const f = await makeApp();
  try {
    const get = (q: string) => ({ method: 'GET' as const, url: `/v1/admin/shards/stats?${q}` });
    const cases: BadCase[] = [
      ['first not a number', get('first=abc'), 400, 'INVALID_ARGUMENT'],
      ['negative first', get('first=-1'), 400, 'INVALID_ARGUMENT'],
      ['fractional last', get('last=1.5'), 400, 'INVALID_ARGUMENT'],
      ['past the 16-bit shard field', get('last=65536'), 400, 'INVALID_ARGUMENT'],
      ['first after last', get('first=5&last=2'), 400, 'INVALID_ARGUMENT'],
      ['past the map', get('last=16'), 404, 'UNKNOWN_SHARD'],
      ['past the map, first', get('first=20&last=30'), 404, 'UNKNOWN_SHARD'],
      ['past the map, first alone (last defaults to the map\'s end)', get('first=20'), 404, 'UNKNOWN_SHARD'],
      ['past the map, first after last', get('first=20&last=3'), 404, 'UNKNOWN_SHARD'],
      ['refresh not a boolean', get('refresh=maybe'), 400, 'INVALID_ARGUMENT'],
      ['unknown parameter', get('shards=1'), 400, 'INVALID_ARGUMENT'],
      ['not a GET', { method: 'POST', url: '/v1/admin/shards/stats', payload: {} }, 405, 'METHOD_NOT_ALLOWED'],
    ];
    assert.deepEqual(await failedCases(f.app, cases), []);
  } finally {
    await f.cleanup();
  }
});

test('it is an admin route: 401 without the admin token, 200 with it; documented in OpenAPI', async () => {
  const token = 'e3b0c44298fc1c149afbf4c8996fb924';
  const k = makeKit();
  const app = await buildApp({ kit: k.kit, admin: { kind: 'token', token } });
  try {
    assertError(await app.inject({ method: 'GET', url: '/v1/admin/shards/stats' }), 401, 'UNAUTHORIZED');
    const ok = await app.inject({ method: 'GET', url: '/v1/admin/shards/stats', headers: { authorization: `Bearer ${token}` } });
    assert.equal(ok.statusCode, 200, ok.body);
    const spec = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { security?: unknown; parameters?: Array<{ name: string }>; responses: Record<string, unknown> }>> };
    const op = spec.paths['/v1/admin/shards/stats']?.get;
    assert.ok(op !== undefined, 'in the OpenAPI document');
    assert.ok(JSON.stringify(op.security).includes('"adminToken"'), JSON.stringify(op.security));
    assert.deepEqual(op.parameters?.map((p) => p.name).sort(), ['first', 'last', 'refresh']);
    for (const status of ['200', '400', '401', '403', '404']) assert.ok(status in op.responses, `documents ${status}`);
  } finally {
    await app.close();
    await k.cleanup();
  }
});
