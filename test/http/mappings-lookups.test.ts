import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HOSTILE_STRINGS } from '../conformance/storage-suite.js';
import { assertError, createObject, makeApp } from './http-fixture.js';

interface ListBody {
  items: Array<{ id: string; sequence: number }>;
  next: string | null;
}

test('mappings: PUT upserts, GET pages with cursors, the join returns objects, count, DELETE', async () => {
  const f = await makeApp();
  try {
    const board = await createObject(f.app, 'board', { name: 'b' });
    const pins = [];
    for (let i = 0; i < 7; i++) pins.push(await createObject(f.app, 'pin', { i }, { near: board.id }));
    for (const [i, p] of pins.entries()) {
      const res = await f.app.inject({ method: 'PUT', url: `/v1/mappings/board_has_pins/${board.id}/${p.id}`, payload: { sequence: 10 + i } });
      assert.equal(res.statusCode, 204, res.body);
    }
    // Again without a body: moves the pair to "now", still one row.
    assert.equal((await f.app.inject({ method: 'PUT', url: `/v1/mappings/board_has_pins/${board.id}/${pins[0]!.id}` })).statusCode, 204);
    assert.deepEqual((await f.app.inject({ method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}/count` })).json(), { count: 7 });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `/v1/mappings/board_has_pins/${board.id}?limit=3${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await f.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json() as ListBody;
      seen.push(...body.items.map((x) => x.id));
      cursor = body.next;
    } while (cursor !== null);
    assert.deepEqual(seen, [pins[0]!.id, ...pins.slice(1).reverse().map((p) => p.id)]);
    const asc = (await f.app.inject({ method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?order=asc&limit=2` })).json() as ListBody;
    assert.deepEqual(asc.items, [{ id: pins[1]!.id, sequence: 11 }, { id: pins[2]!.id, sequence: 12 }]);
    assert.equal(typeof asc.next, 'string');
    // The join: a page of the mapping, then the objects; deleted ones are skipped.
    await f.app.inject({ method: 'DELETE', url: `/v1/objects/${pins[6]!.id}` });
    const join = await f.app.inject({ method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}/objects?limit=3` });
    assert.equal(join.statusCode, 200);
    const jb = join.json() as { objects: Array<{ id: string; data: { i: number } }>; next: string | null };
    assert.deepEqual(jb.objects.map((o) => o.data.i), [0, 5]);
    assert.equal(typeof jb.next, 'string');
    const join2 = (await f.app.inject({ method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}/objects?limit=10&cursor=${jb.next}` })).json() as typeof jb;
    assert.deepEqual(join2.objects.map((o) => o.data.i), [4, 3, 2, 1]);
    assert.equal(join2.next, null);
    assert.equal((await f.app.inject({ method: 'DELETE', url: `/v1/mappings/board_has_pins/${board.id}/${pins[3]!.id}` })).statusCode, 204);
    // Every DELETE answers 404 when nothing was there (docs/http-api.md).
    assertError(await f.app.inject({ method: 'DELETE', url: `/v1/mappings/board_has_pins/${board.id}/${pins[3]!.id}` }), 404, 'NOT_FOUND');
    assert.deepEqual((await f.app.inject({ method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}/count` })).json(), { count: 6 });
  } finally {
    await f.cleanup();
  }
});

test('lookups: PUT/GET/DELETE with hostile keys percent-encoded in the path', async () => {
  const f = await makeApp();
  try {
    const u = await createObject(f.app, 'user', { name: 'ann' });
    const keys = [...HOSTILE_STRINGS, 'a/b', 'q?x=1&y', '#frag', '%41', 'plus+space here'];
    for (const key of keys) {
      const res = await f.app.inject({ method: 'PUT', url: `/v1/lookups/email/${encodeURIComponent(key)}`, payload: { id: u.id } });
      assert.equal(res.statusCode, 204, `${JSON.stringify(key.slice(0, 20))}: ${res.body}`);
    }
    for (const key of keys) {
      const res = await f.app.inject({ method: 'GET', url: `/v1/lookups/email/${encodeURIComponent(key)}` });
      assert.equal(res.statusCode, 200, JSON.stringify(key.slice(0, 20)));
      assert.deepEqual(res.json(), { key, id: u.id });
    }
    assertError(await f.app.inject({ method: 'GET', url: '/v1/lookups/email/A%20' }), 404, 'NOT_FOUND');
    assert.equal((await f.app.inject({ method: 'DELETE', url: `/v1/lookups/email/${encodeURIComponent('a ')}` })).statusCode, 204);
    assertError(await f.app.inject({ method: 'GET', url: `/v1/lookups/email/${encodeURIComponent('a ')}` }), 404, 'NOT_FOUND');
    assert.equal((await f.app.inject({ method: 'GET', url: '/v1/lookups/email/a' })).statusCode, 200);
    assertError(await f.app.inject({ method: 'DELETE', url: '/v1/lookups/email/never-there' }), 404, 'NOT_FOUND');
  } finally {
    await f.cleanup();
  }
});
