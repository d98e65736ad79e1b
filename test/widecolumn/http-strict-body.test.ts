import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Fastify from 'fastify';
import { bodyStrictValidator } from '../../src/http/app.js';
import { installErrorHandler } from '../../src/http/error-handler.js';
import { widecolumnRoutes } from '../../src/http/routes/widecolumn-routes.js';
import { openStore, tempDir } from './helpers.js';

test('wide-column bodies: values of the wrong JSON type get 400 INVALID_ARGUMENT instead of being coerced, and nothing is stored', async () => {
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  // Fastify's default Ajv options (coerceTypes: 'array'), as in buildApp (src/http/app.ts).
  const app = Fastify({ onProtoPoisoning: 'error', ajv: { customOptions: { removeAdditional: false } }, schemaController: { compilersFactory: { buildValidator: bodyStrictValidator } } });
  installErrorHandler(app);
  await app.register(widecolumnRoutes(store));
  try {
    await store.putDataset('d', { maxVersions: 5 });
    const cases: Array<[string, string, unknown, string]> = [
      ['PUT', '/v1/datasets/d/rows/r', { items: [{ column: 'c', value: 5 }] }, 'body/items/0/value must be string'],
      ['PUT', '/v1/datasets/d/rows/r', { items: [{ column: 'c', value: 0 }] }, 'body/items/0/value must be string'],
      ['PUT', '/v1/datasets/d/rows/r', { items: [{ column: 'c', value: true }] }, 'body/items/0/value must be string'],
      ['PUT', '/v1/datasets/d/rows/r', { items: [{ column: 'c', value: null }] }, 'body/items/0/value must be string'],
      ['PUT', '/v1/datasets/d/rows/r', { items: [{ column: 'ok', value: 'v' }, { column: 7, value: 'x' }] }, 'body/items/1/column must be string'],
      ['PUT', '/v1/datasets/d/rows/r', { items: [{ column: 'c', value: 'v', timestamp: '5' }] }, 'body/items/0/timestamp must be integer'],
      ['PUT', '/v1/datasets/d/rows/r', { items: { column: 'c', value: 'v' } }, 'body/items must be array'],
      ['POST', '/v1/datasets/d/rows:batchPut', { rows: [{ row: 'r', items: [{ column: 'c', value: 5 }] }] }, 'body/rows/0/items/0/value must be string'],
      ['POST', '/v1/datasets/d/rows:batchPut', { rows: [{ row: 42, items: [{ column: 'c', value: 'v' }] }] }, 'body/rows/0/row must be string'],
      ['POST', '/v1/datasets/d/rows:batchGet', { requests: [{ row: 42 }] }, 'body/requests/0/row must be string'],
      ['POST', '/v1/datasets/d/rows:batchGet', { requests: [{ row: 'r', versions: '2' }] }, 'body/requests/0/versions must be integer'],
      ['POST', '/v1/datasets/d/rows:batchGet', { requests: [{ row: 'r', columns: 'c' }] }, 'body/requests/0/columns must be array'],
      ['POST', '/v1/datasets/d/rows:batchGet', { requests: [{ row: 'r', columns: [1] }] }, 'body/requests/0/columns/0 must be string'],
      ['POST', '/v1/datasets/d/rows:batchGet', { requests: [{ row: 'r', marker: 0 }] }, 'body/requests/0/marker must be string,null'],
      ['POST', '/v1/datasets/d/rows:batchDelete', { rows: [{ row: 1 }] }, 'body/rows/0/row must be string'],
      ['PUT', '/v1/datasets/d', { maxVersions: '1' }, 'body/maxVersions must be integer'],
      ['PUT', '/v1/datasets/d', { ttlSeconds: true }, 'body/ttlSeconds must be integer'],
      ['PUT', '/v1/datasets/e', { latestIndex: 'false' }, 'body/latestIndex must be boolean'],
      ['POST', '/v1/admin/widecolumn/backup', { name: 5 }, 'body/name must be string'],
      ['POST', '/v1/admin/widecolumn/export', { dataset: 'd', name: 'x.parquet', overwrite: 1 }, 'body/overwrite must be boolean'],
      ['POST', '/v1/admin/widecolumn/export', { dataset: 5, name: 'x.parquet' }, 'body/dataset must be string'],
    ];
    for (const [method, url, payload, message] of cases) {
      const res = await app.inject({ method: method as 'PUT', url, payload: payload as object });
      assert.equal(res.statusCode, 400, `${method} ${url} ${JSON.stringify(payload)}: ${res.body}`);
      assert.deepEqual(res.json(), { error: { code: 'INVALID_ARGUMENT', message } });
    }
    assert.deepEqual((await store.getRow('d', 'r')).columns, [], 'nothing stored in row r');
    assert.deepEqual((await store.getRow('d', '42')).columns, []);
    assert.deepEqual((await store.listDatasets()).map((d) => [d.name, d.maxVersions, d.ttlSeconds]), [['d', 5, 0]], 'no dataset created or changed');
    assert.equal(existsSync(join(tmp.dir, 'widecolumn-exports')), false);

    // The right types still work, and query strings are still coerced as they must be.
    let res = await app.inject({ method: 'PUT', url: '/v1/datasets/d/rows/r', payload: { items: [{ column: 'c', value: '5', timestamp: 10 }] } });
    assert.equal(res.statusCode, 200, res.body);
    res = await app.inject({ method: 'POST', url: '/v1/datasets/d/rows:batchPut', payload: { rows: [{ row: 's', items: [{ column: 'c', value: '' }] }] } });
    assert.equal(res.statusCode, 200, res.body);
    res = await app.inject({ method: 'GET', url: '/v1/datasets/d/rows/r?versions=2&limit=10' });
    assert.deepEqual(res.json().columns, [{ column: 'c', cells: [{ timestamp: 10, value: '5' }] }]);
    res = await app.inject({ method: 'POST', url: '/v1/datasets/d/rows:batchGet', payload: { requests: [{ row: 'r', columns: ['c'], marker: null }] } });
    assert.equal(res.statusCode, 200, res.body);
    res = await app.inject({ method: 'PUT', url: '/v1/datasets/d', payload: { maxVersions: 3, ttlSeconds: 0 } });
    assert.equal(res.statusCode, 200, res.body);
  } finally {
    await app.close();
    await store.close();
    tmp.cleanup();
  }
});
