import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { defaultShardMapJson, ShardMap } from '../../src/topology/shard-map.js';
import { assertError, createObject, makeApp } from './http-fixture.js';

test('POST creates (201, Location, ETag); GET returns the same object with IDs as strings', async () => {
  const f = await makeApp();
  try {
    const res = await f.app.inject({ method: 'POST', url: '/v1/objects/pin', payload: { data: { details: 'New Star Wars character', n: 1.5, tags: ['a'] }, shard: 7 } });
    assert.equal(res.statusCode, 201);
    const body = res.json() as { id: string; type: string; shard: number; data: unknown; createdAt: string };
    assert.equal(typeof body.id, 'string');
    assert.deepEqual(pinterestId.decode(body.id), { shard: 7, type: 1, localId: 1 });
    assert.equal(body.type, 'pin');
    assert.equal(body.shard, 7);
    assert.deepEqual(body.data, { details: 'New Star Wars character', n: 1.5, tags: ['a'] });
    assert.ok(!Number.isNaN(Date.parse(body.createdAt)));
    assert.equal(res.headers.location, `/v1/objects/${body.id}`);
    assert.match(String(res.headers.etag), /^"[A-Za-z0-9_-]+"$/);
    const got = await f.app.inject({ method: 'GET', url: `/v1/objects/${body.id}` });
    assert.equal(got.statusCode, 200);
    assert.match(String(got.headers['content-type']), /^application\/json/);
    assert.deepEqual(got.json(), body);
    assert.equal(got.headers.etag, res.headers.etag);
    const notModified = await f.app.inject({ method: 'GET', url: `/v1/objects/${body.id}`, headers: { 'if-none-match': String(res.headers.etag) } });
    assert.equal(notModified.statusCode, 304);
    assert.equal(notModified.body, '');
  } finally {
    await f.cleanup();
  }
});

test('IDs above 2^53 round-trip exactly through HTTP', async () => {
  const f = await makeApp({ shardMap: ShardMap.fromJSON(defaultShardMapJson({ shards: 4096, pairs: 2 })) });
  try {
    const board = await createObject(f.app, 'board', { name: 'b' }, { shard: 3429 });
    assert.ok(BigInt(board.id) > 2n ** 53n);
    assert.equal(pinterestId.decode(board.id).shard, 3429);
    const pin = await createObject(f.app, 'pin', { board_id: board.id }, { near: board.id });
    assert.equal(pin.shard, 3429);
    assert.equal((await f.app.inject({ method: 'PUT', url: `/v1/mappings/board_has_pins/${board.id}/${pin.id}`, payload: { sequence: 9007199254740991 } })).statusCode, 204);
    const list = await f.app.inject({ method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}` });
    // Compare the raw text: a JSON number would already have been rounded by JSON.parse.
    assert.ok(list.body.includes(`"id":"${pin.id}"`), list.body);
    assert.ok(list.body.includes('"sequence":9007199254740991'), list.body);
    assert.equal((await f.app.inject({ method: 'PUT', url: '/v1/lookups/username/big', payload: { id: pin.id } })).statusCode, 204);
    const lookup = await f.app.inject({ method: 'GET', url: '/v1/lookups/username/big' });
    assert.ok(lookup.body.includes(`"id":"${pin.id}"`));
    const got = await f.app.inject({ method: 'GET', url: `/v1/objects/${pin.id}` });
    assert.ok(got.body.includes(`"id":"${pin.id}"`) && got.body.includes(`"board_id":"${board.id}"`));
    const many = await f.app.inject({ method: 'GET', url: `/v1/objects?ids=${pin.id},${board.id}` });
    assert.deepEqual((many.json() as { objects: Array<{ id: string }> }).objects.map((o) => o.id), [pin.id, board.id]);
    // 241294492511762325 (the seed's pin) is served exactly when it exists: here it is on shard 3429 with local id 7075733.
    assert.equal(pinterestId.encode({ shard: 3429, type: 1, localId: 7075733 }), 241294492511762325n);
    assertError(await f.app.inject({ method: 'GET', url: '/v1/objects/241294492511762325' }), 404, 'NOT_FOUND');
  } finally {
    await f.cleanup();
  }
});

test('GET /v1/objects?ids= returns objects in request order and leaves out missing and deleted ones', async () => {
  const f = await makeApp();
  try {
    const a = await createObject(f.app, 'pin', { n: 'a' }, { shard: 1 });
    const b = await createObject(f.app, 'board', { n: 'b' }, { shard: 9 });
    const c = await createObject(f.app, 'pin', { n: 'c' }, { shard: 1 });
    assert.equal((await f.app.inject({ method: 'DELETE', url: `/v1/objects/${c.id}` })).statusCode, 204);
    const missing = pinterestId.encode({ shard: 2, type: 1, localId: 77 }).toString();
    const res = await f.app.inject({ method: 'GET', url: `/v1/objects?ids=${b.id},${missing},${c.id},${a.id},${b.id}` });
    assert.equal(res.statusCode, 200);
    assert.deepEqual((res.json() as { objects: Array<{ data: { n: string } }> }).objects.map((o) => o.data.n), ['b', 'a', 'b']);
  } finally {
    await f.cleanup();
  }
});

test('PATCH applies an RFC 7396 merge patch with either content type; If-Match mismatch is 412 and changes nothing', async () => {
  const f = await makeApp();
  try {
    const o = await createObject(f.app, 'pin', { title: 't', meta: { a: 1, b: 2 }, tags: ['x'] });
    const p1 = await f.app.inject({
      method: 'PATCH', url: `/v1/objects/${o.id}`,
      headers: { 'content-type': 'application/merge-patch+json', 'if-match': o.etag },
      payload: JSON.stringify({ title: null, meta: { b: null, c: 3 }, tags: ['y', 'z'] }),
    });
    assert.equal(p1.statusCode, 200, p1.body);
    assert.deepEqual((p1.json() as { data: unknown }).data, { meta: { a: 1, c: 3 }, tags: ['y', 'z'] });
    assert.notEqual(p1.headers.etag, o.etag);
    const stale = await f.app.inject({ method: 'PATCH', url: `/v1/objects/${o.id}`, headers: { 'if-match': o.etag }, payload: { x: 1 } });
    assertError(stale, 412, 'PRECONDITION_FAILED');
    const weak = await f.app.inject({ method: 'PATCH', url: `/v1/objects/${o.id}`, headers: { 'if-match': `W/${String(p1.headers.etag)}` }, payload: { x: 1 } });
    assertError(weak, 412, 'PRECONDITION_FAILED');
    const p2 = await f.app.inject({ method: 'PATCH', url: `/v1/objects/${o.id}`, headers: { 'content-type': 'application/json', 'if-match': `"nope", ${String(p1.headers.etag)}` }, payload: { x: 1 } });
    assert.equal(p2.statusCode, 200);
    const p3 = await f.app.inject({ method: 'PATCH', url: `/v1/objects/${o.id}`, headers: { 'if-match': '*' }, payload: { y: 2 } });
    assert.equal(p3.statusCode, 200);
    const got = await f.app.inject({ method: 'GET', url: `/v1/objects/${o.id}` });
    assert.deepEqual((got.json() as { data: unknown }).data, { meta: { a: 1, c: 3 }, tags: ['y', 'z'], x: 1, y: 2 });
    assert.equal(got.headers.etag, p3.headers.etag);
  } finally {
    await f.cleanup();
  }
});

test('DELETE is soft by default (then 404 everywhere), ?hard=true removes the row, a second delete is 404', async () => {
  const f = await makeApp();
  try {
    const o = await createObject(f.app, 'comment', { text: 'hi' });
    assert.equal((await f.app.inject({ method: 'DELETE', url: `/v1/objects/${o.id}` })).statusCode, 204);
    assertError(await f.app.inject({ method: 'GET', url: `/v1/objects/${o.id}` }), 404, 'NOT_FOUND');
    assertError(await f.app.inject({ method: 'PATCH', url: `/v1/objects/${o.id}`, payload: { a: 1 } }), 404, 'NOT_FOUND');
    assertError(await f.app.inject({ method: 'DELETE', url: `/v1/objects/${o.id}` }), 404, 'NOT_FOUND');
    assert.equal((await f.app.inject({ method: 'DELETE', url: `/v1/objects/${o.id}?hard=true` })).statusCode, 204);
    assertError(await f.app.inject({ method: 'DELETE', url: `/v1/objects/${o.id}?hard=true` }), 404, 'NOT_FOUND');
  } finally {
    await f.cleanup();
  }
});

test('concurrent PATCH with If-Match and retry on 412 loses no update', async () => {
  const f = await makeApp();
  try {
    const o = await createObject(f.app, 'pin', { count: 0 });
    const clients = 20;
    let conflicts = 0;
    const increment = async (etag?: string) => {
      for (;;) {
        let tag = etag;
        etag = undefined;
        let count: number;
        if (tag === undefined) {
          const cur = await f.app.inject({ method: 'GET', url: `/v1/objects/${o.id}` });
          tag = String(cur.headers.etag);
          count = (cur.json() as { data: { count: number } }).data.count;
        } else {
          count = 0;
        }
        const res = await f.app.inject({ method: 'PATCH', url: `/v1/objects/${o.id}`, headers: { 'if-match': tag, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ count: count + 1 }) });
        if (res.statusCode === 200) return;
        assertError(res, 412, 'PRECONDITION_FAILED');
        conflicts++;
      }
    };
    // Every client first read the same version, so all but one of the first writes must conflict.
    await Promise.all(Array.from({ length: clients }, () => increment(o.etag)));
    const final = await f.app.inject({ method: 'GET', url: `/v1/objects/${o.id}` });
    assert.equal((final.json() as { data: { count: number } }).data.count, clients);
    assert.ok(conflicts >= clients - 1, `expected at least ${clients - 1} conflicts, saw ${conflicts}`);
  } finally {
    await f.cleanup();
  }
});

test('POST /v1/objects/{type}:batchCreate: 201 with the objects in request order, each readable; bad items are 400 and write nothing', async () => {
  const f = await makeApp();
  try {
    const board = await createObject(f.app, 'board', { name: 'b' }, { shard: 5 });
    const res = await f.app.inject({ method: 'POST', url: '/v1/objects/pin:batchCreate', payload: { items: [{ data: { n: 0 }, near: board.id }, { data: { n: 1 }, shard: 7 }, { data: { n: 2 }, shard: 8 }] } });
    assert.equal(res.statusCode, 201, res.body);
    const objects = (res.json() as { objects: Array<{ id: string; type: string; shard: number; data: unknown }> }).objects;
    assert.deepEqual(objects.map((o) => [o.type, o.data]), [['pin', { n: 0 }], ['pin', { n: 1 }], ['pin', { n: 2 }]]);
    assert.deepEqual([objects[0]!.shard, objects[1]!.shard], [5, 7]);
    for (const o of objects) {
      const got = await f.app.inject({ method: 'GET', url: `/v1/objects/${o.id}` });
      assert.deepEqual(got.json(), o);
    }
    // A bad item anywhere: 400 naming it, nothing written (the next local id on shard 7 is 2).
    assertError(await f.app.inject({ method: 'POST', url: '/v1/objects/pin:batchCreate', payload: { items: [{ data: { ok: 1 }, shard: 7 }, { data: {}, near: 12 }] } }), 400, 'INVALID_ID');
    assertError(await f.app.inject({ method: 'POST', url: '/v1/objects/pin:batchCreate', payload: { items: [{ data: { ok: 1 }, shard: 7, extra: 1 }] } }), 400, 'INVALID_ARGUMENT');
    assertError(await f.app.inject({ method: 'POST', url: '/v1/objects/pin:batchCreate', payload: { items: [] } }), 400, 'INVALID_ARGUMENT');
    assertError(await f.app.inject({ method: 'POST', url: '/v1/objects/pin:batchCreate', payload: { items: Array.from({ length: 1001 }, () => ({ data: {} })) } }), 400, 'INVALID_ARGUMENT');
    assertError(await f.app.inject({ method: 'POST', url: '/v1/objects/nope:batchCreate', payload: { items: [{ data: {} }] } }), 404, 'UNKNOWN_TYPE');
    const next = await createObject(f.app, 'pin', {}, { shard: 7 });
    assert.equal(pinterestId.decode(next.id).localId, 2);
  } finally {
    await f.cleanup();
  }
});
