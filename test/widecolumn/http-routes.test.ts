import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { bodyStrictValidator } from '../../src/http/app.js';
import { installErrorHandler } from '../../src/http/error-handler.js';
import { widecolumnRoutes } from '../../src/http/routes/widecolumn-routes.js';
import type { WideColumnStore } from '../../src/widecolumn/index.js';
import { openStore, tempDir, TestClock } from './helpers.js';

/** Column names of a JSON row, in the order the answer lists them. */
function names(body: { columns: Array<{ column: string }> }): string[] {
  return body.columns.map((c) => c.column);
}

async function setup(): Promise<{ app: FastifyInstance; store: WideColumnStore; clock: TestClock; dir: string; close(): Promise<void> }> {
  const tmp = tempDir();
  const clock = new TestClock();
  const store = await openStore(tmp.dir, { clock: clock.now });
  // The same parser settings as buildApp (src/http/app.ts): unknown fields are refused, not dropped.
  const app = Fastify({ onProtoPoisoning: 'error', ajv: { customOptions: { removeAdditional: false } }, schemaController: { compilersFactory: { buildValidator: bodyStrictValidator } } });
  installErrorHandler(app);
  await app.register(widecolumnRoutes(store));
  await app.ready();
  return {
    app,
    store,
    clock,
    dir: tmp.dir,
    async close() {
      await app.close();
      await store.close();
      tmp.cleanup();
    },
  };
}

const rowUrl = (ds: string, row: string): string => `/v1/datasets/${ds}/rows/${encodeURIComponent(row)}`;

test('HTTP: datasets, put row, get row (UTF-8 and base64 values), delete row', async () => {
  const s = await setup();
  try {
    let res = await s.app.inject({ method: 'PUT', url: '/v1/datasets/events', payload: { maxVersions: 3 } });
    assert.equal(res.statusCode, 201);
    assert.deepEqual({ ...res.json(), createdAt: 0, updatedAt: 0 }, { name: 'events', maxVersions: 3, ttlSeconds: 0, latestIndex: true, createdAt: 0, updatedAt: 0 });
    res = await s.app.inject({ method: 'PUT', url: '/v1/datasets/events', payload: { ttlSeconds: 86400 } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().ttlSeconds, 86400);
    res = await s.app.inject({ method: 'GET', url: '/v1/datasets' });
    assert.deepEqual(res.json().datasets.map((d: { name: string; maxVersions: number }) => [d.name, d.maxVersions]), [['events', 3]]);
    assert.equal((await s.app.inject({ method: 'GET', url: '/v1/datasets/events' })).json().name, 'events');

    const row = 'user/42 é😀';
    res = await s.app.inject({ method: 'PUT', url: rowUrl('events', row), payload: { items: [
      { column: 'click', value: 'pin1' },
      { column: 'bin', value: Buffer.from([0, 0xff, 0x80]).toString('base64'), encoding: 'base64' },
      { column: '__proto__', value: 'data' },
      { column: 'click', value: 'old', timestamp: s.clock.t - 1000 },
    ] } });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { row, timestamp: s.clock.t });
    res = await s.app.inject({ method: 'GET', url: rowUrl('events', row) });
    assert.equal(res.statusCode, 200);
    const body = JSON.parse(res.body);
    assert.equal(body.row, row);
    assert.equal(body.marker, null);
    assert.deepEqual(body.columns, [
      { column: '__proto__', cells: [{ timestamp: s.clock.t, value: 'data' }] },
      { column: 'bin', cells: [{ timestamp: s.clock.t, value: 'AP+A', encoding: 'base64' }] },
      { column: 'click', cells: [{ timestamp: s.clock.t, value: 'pin1' }] },
    ], 'bytes that are not UTF-8 come back as base64, flagged');
    res = await s.app.inject({ method: 'GET', url: `${rowUrl('events', row)}?columns=click&versions=5&encoding=base64` });
    assert.deepEqual(res.json().columns[0].cells, [{ timestamp: s.clock.t, value: Buffer.from('pin1').toString('base64'), encoding: 'base64' }, { timestamp: s.clock.t - 1000, value: Buffer.from('old').toString('base64'), encoding: 'base64' }]);
    res = await s.app.inject({ method: 'GET', url: `${rowUrl('events', row)}?versions=5&start=0&end=${s.clock.t}` });
    assert.deepEqual(res.json().columns, [{ column: 'click', cells: [{ timestamp: s.clock.t - 1000, value: 'old' }] }]);
    // Long row keys travel in the path too.
    const long = 'k'.repeat(3000);
    assert.equal((await s.app.inject({ method: 'PUT', url: rowUrl('events', long), payload: { items: [{ column: 'c', value: 'v' }] } })).statusCode, 200);
    assert.deepEqual(names((await s.app.inject({ method: 'GET', url: rowUrl('events', long) })).json()), ['c']);

    res = await s.app.inject({ method: 'DELETE', url: `${rowUrl('events', row)}?columns=click,bin` });
    assert.deepEqual(res.json(), { row, deleted: 'columns' });
    assert.deepEqual(names((await s.app.inject({ method: 'GET', url: rowUrl('events', row) })).json()), ['__proto__']);
    res = await s.app.inject({ method: 'DELETE', url: rowUrl('events', row) });
    assert.deepEqual(res.json(), { row, deleted: 'row' });
    assert.deepEqual((await s.app.inject({ method: 'GET', url: rowUrl('events', row) })).json(), { row, columns: [], marker: null });
  } finally {
    await s.close();
  }
});

test('HTTP: pagination with limit and marker', async () => {
  const s = await setup();
  try {
    await s.store.putDataset('wide');
    await s.store.putRow('wide', 'r', Array.from({ length: 25 }, (_, i) => ({ column: `c${String(i).padStart(2, '0')}`, value: String(i) })));
    const seen: string[] = [];
    let marker: string | null = null;
    do {
      const q: string = marker ? `?limit=10&marker=${encodeURIComponent(marker)}` : '?limit=10';
      const res = await s.app.inject({ method: 'GET', url: rowUrl('wide', 'r') + q });
      assert.equal(res.statusCode, 200);
      const body = res.json() as { columns: Array<{ column: string }>; marker: string | null };
      seen.push(...names(body));
      marker = body.marker;
    } while (marker);
    assert.equal(seen.length, 25);
    assert.deepEqual(seen, [...seen].sort());
    const def = await s.app.inject({ method: 'GET', url: rowUrl('wide', 'r') });
    assert.equal(def.json().columns.length, 25);
  } finally {
    await s.close();
  }
});

test('HTTP: batchGet, batchPut (atomic), batchDelete', async () => {
  const s = await setup();
  try {
    await s.store.putDataset('b', { maxVersions: 2 });
    let res = await s.app.inject({ method: 'POST', url: '/v1/datasets/b/rows:batchPut', payload: { rows: [
      { row: 'r1', items: [{ column: 'a', value: '1' }] },
      { row: 'r2', items: [{ column: 'a', value: 'Mg==', encoding: 'base64' }, { column: 'b', value: 'x', timestamp: 5 }] },
    ] } });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json().results.map((r: { row: string }) => r.row), ['r1', 'r2']);
    res = await s.app.inject({ method: 'POST', url: '/v1/datasets/b/rows:batchGet', payload: { requests: [{ row: 'r1' }, { row: 'r2', columns: ['a', 'b'], versions: 2 }, { row: 'none' }] } });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json().results, [
      { row: 'r1', columns: [{ column: 'a', cells: [{ timestamp: s.clock.t, value: '1' }] }], marker: null },
      { row: 'r2', columns: [{ column: 'a', cells: [{ timestamp: s.clock.t, value: '2' }] }, { column: 'b', cells: [{ timestamp: 5, value: 'x' }] }], marker: null },
      { row: 'none', columns: [], marker: null },
    ]);
    // One bad row: nothing of the batch is written.
    res = await s.app.inject({ method: 'POST', url: '/v1/datasets/b/rows:batchPut', payload: { rows: [{ row: 'r3', items: [{ column: 'a', value: 'ok' }] }, { row: 'r4', items: [{ column: '', value: 'bad' }] }] } });
    assert.equal(res.statusCode, 400);
    assert.deepEqual((await s.store.getRow('b', 'r3')).columns, []);
    res = await s.app.inject({ method: 'POST', url: '/v1/datasets/b/rows:batchDelete', payload: { rows: [{ row: 'r1' }, { row: 'r2', columns: ['b'] }] } });
    assert.deepEqual(res.json(), { deleted: 2 });
    const after = await s.store.batchGetRows('b', [{ row: 'r1' }, { row: 'r2' }]);
    assert.deepEqual(after.map((r) => r.columns.map((c) => c.column)), [[], ['a']]);
  } finally {
    await s.close();
  }
});

test('HTTP: bad input is 4xx with a stable code, never 500, and changes nothing', async () => {
  const s = await setup();
  try {
    await s.store.putDataset('d', { maxVersions: 2 });
    await s.store.putRow('d', 'keep', [{ column: 'c', value: 'v', timestamp: 1 }]);
    const cases: Array<[string, string, unknown, number, string]> = [
      ['PUT', '/v1/datasets/Bad-Name', {}, 400, 'INVALID_ARGUMENT'],
      ['PUT', '/v1/datasets/d', { maxVersions: 0 }, 400, 'INVALID_ARGUMENT'],
      ['PUT', '/v1/datasets/d', { maxVersions: 'many' }, 400, 'INVALID_ARGUMENT'],
      ['PUT', '/v1/datasets/d', { unknown: 1 }, 400, 'INVALID_ARGUMENT'],
      ['GET', '/v1/datasets/nope', undefined, 404, 'UNKNOWN_DATASET'],
      ['GET', '/v1/datasets/nope/rows/r', undefined, 404, 'UNKNOWN_DATASET'],
      ['GET', '/v1/datasets/d/rows/', undefined, 400, 'INVALID_ARGUMENT'],
      ['GET', '/v1/datasets/d/rows/r?versions=0', undefined, 400, 'INVALID_ARGUMENT'],
      ['GET', '/v1/datasets/d/rows/r?versions=x', undefined, 400, 'INVALID_ARGUMENT'],
      ['GET', '/v1/datasets/d/rows/r?limit=100000', undefined, 400, 'INVALID_ARGUMENT'],
      ['GET', '/v1/datasets/d/rows/r?start=10&end=5', undefined, 400, 'INVALID_ARGUMENT'],
      ['GET', '/v1/datasets/d/rows/r?marker=***', undefined, 400, 'INVALID_ARGUMENT'],
      ['GET', '/v1/datasets/d/rows/r?columns=a,,b', undefined, 400, 'INVALID_ARGUMENT'],
      ['GET', '/v1/datasets/d/rows/r?encoding=hex', undefined, 400, 'INVALID_ARGUMENT'],
      ['GET', '/v1/datasets/d/rows/r?what=1', undefined, 400, 'INVALID_ARGUMENT'],
      ['GET', `/v1/datasets/d/rows/${'k'.repeat(5000)}`, undefined, 413, 'PAYLOAD_TOO_LARGE'],
      ['PUT', '/v1/datasets/d/rows/keep', { items: [] }, 400, 'INVALID_ARGUMENT'],
      ['PUT', '/v1/datasets/d/rows/keep', {}, 400, 'INVALID_ARGUMENT'],
      ['PUT', '/v1/datasets/d/rows/keep', { items: [{ column: 'c' }] }, 400, 'INVALID_ARGUMENT'],
      ['PUT', '/v1/datasets/d/rows/keep', { items: [{ column: 'c', value: { a: 1 } }] }, 400, 'INVALID_ARGUMENT'],
      ['PUT', '/v1/datasets/d/rows/keep', { items: [{ column: 'c', value: 'v', timestamp: -5 }] }, 400, 'INVALID_ARGUMENT'],
      ['PUT', '/v1/datasets/d/rows/keep', { items: [{ column: 'c', value: 'v', timestamp: 1.5 }] }, 400, 'INVALID_ARGUMENT'],
      ['PUT', '/v1/datasets/d/rows/keep', { items: [{ column: 'c', value: 'v', timestamp: 9e15 }] }, 400, 'INVALID_ARGUMENT'],
      ['PUT', '/v1/datasets/d/rows/keep', { items: [{ column: 'c', value: 'v', encoding: 'hex' }] }, 400, 'INVALID_ARGUMENT'],
      ['PUT', '/v1/datasets/d/rows/keep', { items: [{ column: 'c', value: '@@@', encoding: 'base64' }] }, 400, 'INVALID_ARGUMENT'],
      ['PUT', '/v1/datasets/d/rows/keep', { items: [{ column: 'c', value: 'x'.repeat(1024 * 1024 + 1) }] }, 413, 'PAYLOAD_TOO_LARGE'],
      ['PUT', '/v1/datasets/d/rows/keep', { items: [{ column: 'c'.repeat(2000), value: 'v' }] }, 413, 'PAYLOAD_TOO_LARGE'],
      ['PUT', '/v1/datasets/d/rows/keep', '{"items": [', 400, 'INVALID_JSON'],
      ['POST', '/v1/datasets/d/rows:batchGet', { requests: [{}] }, 400, 'INVALID_ARGUMENT'],
      ['POST', '/v1/datasets/d/rows:batchGet', { requests: [] }, 400, 'INVALID_ARGUMENT'],
      ['POST', '/v1/datasets/d/rows:batchPut', { rows: [{ row: 'keep', items: [{ column: 'c', value: 'v' }] }, { row: 'keep', items: [{ column: 'c', value: 'v' }] }] }, 400, 'INVALID_ARGUMENT'],
      ['POST', '/v1/datasets/d/rows:batchDelete', { rows: [{ row: 'keep', columns: [] }] }, 400, 'INVALID_ARGUMENT'],
      ['POST', '/v1/datasets/d/rows:batchDelete', { rows: 'keep' }, 400, 'INVALID_ARGUMENT'],
      ['DELETE', '/v1/datasets/d/rows/keep?columns=', undefined, 400, 'INVALID_ARGUMENT'],
      ['POST', '/v1/admin/widecolumn/export', { dataset: 'nope', name: 'x.parquet' }, 404, 'UNKNOWN_DATASET'],
      ['POST', '/v1/admin/widecolumn/backup', {}, 400, 'INVALID_ARGUMENT'],
    ];
    for (const [method, url, payload, status, code] of cases) {
      const res = await s.app.inject({ method: method as 'GET', url, ...(payload === undefined ? {} : typeof payload === 'string' ? { payload, headers: { 'content-type': 'application/json' } } : { payload: payload as object }) });
      assert.equal(res.statusCode, status, `${method} ${url.slice(0, 80)} ${JSON.stringify(payload)?.slice(0, 80)}: ${res.body.slice(0, 200)}`);
      assert.equal(res.json().error.code, code, `${method} ${url.slice(0, 80)}`);
    }
    // A timestamp past 2^53-1 is refused as sent, not as the number the query's coercion rounded it to.
    const huge = await s.app.inject({ method: 'GET', url: '/v1/datasets/d/rows/keep?end=99999999999999999999' });
    assert.equal(huge.statusCode, 400);
    assert.doesNotMatch(huge.body, /100000000000000000000/);
    assert.match(huge.body, /end must be <= 9007199254740991/);
    assert.deepEqual((await s.store.getRow('d', 'keep', { versions: 2 })).columns.map((c) => c.cells.length), [1], 'nothing changed');
    assert.equal(existsSync(join(s.dir, 'widecolumn-exports')), false, 'a refused export creates nothing');
  } finally {
    await s.close();
  }
});

test('HTTP admin: compact, backup and export through the service', async () => {
  const s = await setup();
  try {
    await s.store.putDataset('a', { maxVersions: 1 });
    await s.store.putRow('a', 'r', [{ column: 'c', value: 'v1', timestamp: 1 }]);
    await s.store.putRow('a', 'r', [{ column: 'c', value: 'v2', timestamp: 2 }]);
    let res = await s.app.inject({ method: 'POST', url: '/v1/admin/widecolumn/compact' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().removedExcessVersions, 1);
    res = await s.app.inject({ method: 'POST', url: '/v1/admin/widecolumn/backup', payload: { name: 'bk' } });
    assert.equal(res.statusCode, 200);
    assert.ok(res.json().records >= 3);
    assert.equal(res.json().dir, join(s.dir, 'widecolumn-exports', 'bk'));
    assert.ok(existsSync(join(s.dir, 'widecolumn-exports', 'bk', 'manifest.json')));
    res = await s.app.inject({ method: 'POST', url: '/v1/admin/widecolumn/backup', payload: { name: 'bk' } });
    assert.equal(res.statusCode, 409);
    assert.equal(res.json().error.code, 'ALREADY_EXISTS');
    res = await s.app.inject({ method: 'POST', url: '/v1/admin/widecolumn/export', payload: { dataset: 'a', name: 'a.parquet' } });
    assert.equal(res.statusCode, 200);
    assert.deepEqual([res.json().rows, res.json().cells], [1, 1]);
    assert.equal(res.json().file, join(s.dir, 'widecolumn-exports', 'a.parquet'));
  } finally {
    await s.close();
  }
});

test('defect 4: the HTTP answer loses the documented column order (integer-like names); pages agree with it', async () => {
  const s = await setup();
  try {
    await s.store.putDataset('o');
    await s.app.inject({ method: 'PUT', url: rowUrl('o', 'r'), payload: { items: [' ', '10', '7', 'a'].map((column) => ({ column, value: column })) } });
    const all = (await s.app.inject({ method: 'GET', url: rowUrl('o', 'r') })).json();
    assert.deepEqual(names(all), [' ', '10', '7', 'a'], 'UTF-8 byte order, as documented');
    const seen: string[] = [];
    let marker: string | null = null;
    do {
      const page = (await s.app.inject({ method: 'GET', url: rowUrl('o', 'r') + (marker ? `?limit=1&marker=${marker}` : '?limit=1') })).json() as { columns: Array<{ column: string }>; marker: string | null };
      seen.push(...names(page));
      marker = page.marker;
    } while (marker);
    assert.deepEqual(seen, [' ', '10', '7', 'a'], 'pages in the same order');
    const batch = (await s.app.inject({ method: 'POST', url: '/v1/datasets/o/rows:batchGet', payload: { requests: [{ row: 'r', columns: ['a', '7', '10'] }] } })).json();
    assert.deepEqual(names(batch.results[0]), ['10', '7', 'a']);
  } finally {
    await s.close();
  }
});

test('a row key with a slash reads the same encoded (a%2Fb) or not (a/b): everything after /rows/ is the key', async () => {
  const s = await setup();
  try {
    await s.store.putDataset('d');
    const put = await s.app.inject({ method: 'PUT', url: '/v1/datasets/d/rows/a%2Fb', payload: { items: [{ column: 'c', value: 'slash' }] } });
    assert.equal(put.statusCode, 200, put.body);
    for (const url of ['/v1/datasets/d/rows/a%2Fb', '/v1/datasets/d/rows/a/b']) {
      const res = await s.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, url);
      const body = res.json() as { row: string; columns: Array<{ column: string; cells: Array<{ value: string }> }> };
      assert.deepEqual([body.row, body.columns[0]?.cells[0]?.value], ['a/b', 'slash'], url);
    }
    assert.deepEqual((await s.store.getRow('d', 'a')).columns, [], 'no row "a" was touched');
  } finally {
    await s.close();
  }
});
