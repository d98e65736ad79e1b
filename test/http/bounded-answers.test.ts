/**
 * Issue #34, findings 2 and 3: one request's work and answer are bounded (the join's too, found
 * by a review in session 12). Repeated IDs in a multi-get are answered once; repeated rows in a wide-column batchGet are refused; an answer past
 * MAX_ANSWER_BYTES is a clear 400 RESPONSE_TOO_LARGE, before the process holds much more than it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { bodyStrictValidator } from '../../src/http/app.js';
import { installErrorHandler } from '../../src/http/error-handler.js';
import { MAX_ANSWER_BYTES } from '../../src/http/limits.js';
import { widecolumnRoutes } from '../../src/http/routes/widecolumn-routes.js';
import { assertError, makeApp } from './http-fixture.js';
import { openStore, tempDir } from '../widecolumn/helpers.js';

test('GET /v1/objects?ids= refuses an answer past the byte budget, however it is reached (one big object repeated, or many)', async () => {
  const f = await makeApp();
  try {
    const big = 'x'.repeat(1024 * 1024);
    const one = await f.kit.objects.create('pin', { big }, { shard: 1 });
    assertError(await f.app.inject({ method: 'GET', url: `/v1/objects?ids=${Array(400).fill(one.id.toString()).join(',')}` }), 400, 'RESPONSE_TOO_LARGE');
    const twice = await f.app.inject({ method: 'GET', url: `/v1/objects?ids=${one.id},${one.id}` });
    assert.equal((twice.json() as { objects: unknown[] }).objects.length, 2, 'within the budget a repeated ID is answered each time, in request order');
    const ids = [one.id];
    for (let i = 0; i < Math.ceil(MAX_ANSWER_BYTES / big.length); i++) ids.push((await f.kit.objects.create('pin', { big }, { shard: 2 })).id);
    assertError(await f.app.inject({ method: 'GET', url: `/v1/objects?ids=${ids.join(',')}` }), 400, 'RESPONSE_TOO_LARGE');
    // Within the budget, the same objects still come back.
    const some = await f.app.inject({ method: 'GET', url: `/v1/objects?ids=${ids.slice(0, 3).join(',')}` });
    assert.equal((some.json() as { objects: unknown[] }).objects.length, 3);
  } finally {
    await f.cleanup();
  }
});

test('the join (GET /v1/mappings/{name}/{from}/objects) refuses a page past the byte budget as the multi-get does; a smaller page of the same objects comes back', async () => {
  const f = await makeApp();
  try {
    const big = 'x'.repeat(1024 * 1024);
    const board = await f.kit.objects.create('board', { name: 'big' }, { shard: 1 });
    for (let i = 0; i < Math.ceil(MAX_ANSWER_BYTES / big.length) + 1; i++) {
      const pin = await f.kit.objects.create('pin', { big, i }, { shard: 1 });
      await f.kit.mappings.add('board_has_pins', board.id, pin.id);
    }
    assertError(await f.app.inject({ method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}/objects?limit=100` }), 400, 'RESPONSE_TOO_LARGE');
    const some = await f.app.inject({ method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}/objects?limit=3` });
    assert.equal(some.statusCode, 200);
    assert.equal((some.json() as { objects: unknown[] }).objects.length, 3);
  } finally {
    await f.cleanup();
  }
});

test('rows:batchGet refuses a repeated row, and an answer past the byte budget, with a clear 400', async () => {
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  const app = Fastify({ bodyLimit: 1024 * 1024, ajv: { customOptions: { removeAdditional: false } }, schemaController: { compilersFactory: { buildValidator: bodyStrictValidator } } });
  installErrorHandler(app);
  await app.register(widecolumnRoutes(store));
  try {
    await store.putDataset('d', { maxVersions: 1 });
    // Rows of 4 columns of ~1 MB of text (the per-value limit), at least 4 MB each in JSON.
    const value = Buffer.alloc(1_000_000, 'a');
    const rows = Math.ceil(MAX_ANSWER_BYTES / (4 * value.length)) + 1;
    for (let i = 0; i < rows; i++) await store.putRow('d', `r${i}`, [0, 1, 2, 3].map((c) => ({ column: `c${c}`, value })));
    const twice = await app.inject({ method: 'POST', url: '/v1/datasets/d/rows:batchGet', payload: { requests: [{ row: 'r0' }, { row: 'r1' }, { row: 'r0' }] } });
    assertError(twice, 400, 'INVALID_ARGUMENT');
    assert.match(twice.body, /requests\[2\] repeats requests\[0\]/);
    const all = await app.inject({ method: 'POST', url: '/v1/datasets/d/rows:batchGet', payload: { requests: Array.from({ length: rows }, (_, i) => ({ row: `r${i}` })) } });
    assertError(all, 400, 'RESPONSE_TOO_LARGE');
    const ok = await app.inject({ method: 'POST', url: '/v1/datasets/d/rows:batchGet', payload: { requests: [{ row: 'r0' }, { row: 'r1' }] } });
    assert.equal(ok.statusCode, 200);
    assert.equal((ok.json() as { results: unknown[] }).results.length, 2);
  } finally {
    await app.close();
    await store.close();
    tmp.cleanup();
  }
});
