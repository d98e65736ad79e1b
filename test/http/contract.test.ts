/**
 * The contract defects of issue 16, on their answering side (the bad-input table checks the
 * error codes): what a request that is right gets, and that a refused one changed nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { assertError, createObject, makeApp } from './http-fixture.js';

test('contract: multi-get, ETags, DELETE If-Match, 405 with Allow, optional bodies, one delete rule, big numbers', async (t) => {
  const f = await makeApp();
  t.after(() => f.cleanup());
  const app = f.app;
  const board = await createObject(app, 'board', { name: 'b' });
  const pin = await createObject(app, 'pin', { name: 'p' }, { near: board.id });
  const user = await createObject(app, 'user', { name: 'u' });

  await t.test('defect 6: a well-formed ID naming no type or shard reads as missing; a malformed one is 400 naming it', async () => {
    const unknownType = pinterestId.encode({ shard: 3, type: 999, localId: 1 }).toString();
    const unknownShard = pinterestId.encode({ shard: 60000, type: 1, localId: 1 }).toString();
    const res = await app.inject({ method: 'GET', url: `/v1/objects?ids=${unknownType},${pin.id},${unknownShard}` });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual((res.json() as { objects: Array<{ id: string }> }).objects.map((o) => o.id), [pin.id]);
    const bad = await app.inject({ method: 'GET', url: `/v1/objects?ids=${pin.id},12x` });
    assertError(bad, 400, 'INVALID_ID');
    assert.match(bad.body, /ids\[1\]/);
  });

  await t.test('defect 4: If-None-Match uses the weak comparison', async () => {
    for (const header of [`W/${pin.etag}`, `"other", W/${pin.etag}`, '*']) {
      const res = await app.inject({ method: 'GET', url: `/v1/objects/${pin.id}`, headers: { 'if-none-match': header } });
      assert.equal(res.statusCode, 304, header);
    }
    assert.equal((await app.inject({ method: 'GET', url: `/v1/objects/${pin.id}`, headers: { 'if-none-match': 'W/"other"' } })).statusCode, 200);
  });

  await t.test('defect 3: DELETE honours If-Match; a stale tag deletes nothing', async () => {
    const victim = await createObject(app, 'pin', { name: 'v' }, { near: board.id });
    for (const hard of [false, true]) {
      const res = await app.inject({ method: 'DELETE', url: `/v1/objects/${victim.id}${hard ? '?hard=true' : ''}`, headers: { 'if-match': '"stale"' } });
      assertError(res, 412, 'PRECONDITION_FAILED');
      assert.equal((await app.inject({ method: 'GET', url: `/v1/objects/${victim.id}` })).statusCode, 200, 'still there');
    }
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/objects/${victim.id}?hard=true`, headers: { 'if-match': victim.etag } })).statusCode, 204);
    assertError(await app.inject({ method: 'GET', url: `/v1/objects/${victim.id}` }), 404, 'NOT_FOUND');
    const soft = await createObject(app, 'pin', { name: 's' }, { near: board.id });
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/objects/${soft.id}`, headers: { 'if-match': `"x", ${soft.etag}` } })).statusCode, 204);
    // No current representation: If-Match fails (RFC 9110 §13.1.1).
    assertError(await app.inject({ method: 'DELETE', url: `/v1/objects/${soft.id}`, headers: { 'if-match': '*' } }), 404, 'NOT_FOUND');
  });

  await t.test('If-Match is `*` alone or a list of tags: mixed, the write is refused (400) and nothing changes', async () => {
    const victim = await createObject(app, 'pin', { name: 'v' }, { near: board.id });
    // Two If-Match lines reach the service as one list, as Node joins them.
    for (const ifMatch of ['"zz", *', '*, "zz"', '*,*', ['"zz"', '*']]) {
      assertError(await app.inject({ method: 'PATCH', url: `/v1/objects/${victim.id}`, headers: { 'if-match': ifMatch }, payload: { name: 'lost' } }), 400, 'INVALID_ARGUMENT', String(ifMatch));
      for (const hard of [false, true]) {
        assertError(await app.inject({ method: 'DELETE', url: `/v1/objects/${victim.id}${hard ? '?hard=true' : ''}`, headers: { 'if-match': ifMatch } }), 400, 'INVALID_ARGUMENT', String(ifMatch));
      }
    }
    const after = await app.inject({ method: 'GET', url: `/v1/objects/${victim.id}` });
    assert.equal(after.statusCode, 200, after.body);
    assert.deepEqual((after.json() as { data: unknown }).data, { name: 'v' });
    assert.equal(after.headers.etag, victim.etag);
  });

  await t.test('If-None-Match on PATCH and DELETE: a match is 412 and changes nothing, a miss lets the write through', async () => {
    const o = await createObject(app, 'pin', { name: 'o' }, { near: board.id });
    for (const ifNoneMatch of ['*', o.etag, `W/${o.etag}`, `"other", ${o.etag}`]) {
      assertError(await app.inject({ method: 'PATCH', url: `/v1/objects/${o.id}`, headers: { 'if-none-match': ifNoneMatch }, payload: { name: 'x' } }), 412, 'PRECONDITION_FAILED', ifNoneMatch);
      for (const hard of [false, true]) {
        assertError(await app.inject({ method: 'DELETE', url: `/v1/objects/${o.id}${hard ? '?hard=true' : ''}`, headers: { 'if-none-match': ifNoneMatch } }), 412, 'PRECONDITION_FAILED', ifNoneMatch);
      }
    }
    const same = await app.inject({ method: 'GET', url: `/v1/objects/${o.id}` });
    assert.deepEqual((same.json() as { data: unknown }).data, { name: 'o' });
    assert.equal(same.headers.etag, o.etag);
    // A tag the object no longer has: the write goes through.
    const patched = await app.inject({ method: 'PATCH', url: `/v1/objects/${o.id}`, headers: { 'if-none-match': '"other"' }, payload: { name: 'p' } });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.deepEqual((patched.json() as { data: unknown }).data, { name: 'p' });
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/objects/${o.id}`, headers: { 'if-none-match': o.etag } })).statusCode, 204);
    assertError(await app.inject({ method: 'GET', url: `/v1/objects/${o.id}` }), 404, 'NOT_FOUND');
    // Soft-deleted, it has no current representation: `*` holds and a hard delete purges the row.
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/objects/${o.id}?hard=true`, headers: { 'if-none-match': '*' } })).statusCode, 204);
    assertError(await app.inject({ method: 'DELETE', url: `/v1/objects/${o.id}?hard=true`, headers: { 'if-none-match': '*' } }), 404, 'NOT_FOUND');
  });

  await t.test('defect 5: a wrong method on an existing path is 405 with Allow', async () => {
    const res = await app.inject({ method: 'PUT', url: `/v1/objects/${pin.id}`, payload: { data: {} } });
    assertError(res, 405, 'METHOD_NOT_ALLOWED');
    const allow = String(res.headers.allow).split(', ');
    for (const m of ['GET', 'PATCH', 'DELETE']) assert.ok(allow.includes(m), `${m} in ${res.headers.allow}`);
    assert.ok(!allow.includes('PUT'));
    const lookup = await app.inject({ method: 'POST', url: '/v1/lookups/email?key=a' });
    assertError(lookup, 405, 'METHOD_NOT_ALLOWED');
    assert.deepEqual(String(lookup.headers.allow).split(', ').sort(), ['DELETE', 'GET', 'HEAD', 'PUT']);
    assertError(await app.inject({ method: 'GET', url: '/v1/nothing/here' }), 404, 'NOT_FOUND');
  });

  await t.test('defect 8: a mapping PUT with a JSON content type and an empty body is a bare PUT', async () => {
    const res = await app.inject({ method: 'PUT', url: `/v1/mappings/user_likes_pins/${user.id}/${pin.id}`, headers: { 'content-type': 'application/json' }, payload: '' });
    assert.equal(res.statusCode, 204, res.body);
    assert.deepEqual((await app.inject({ method: 'GET', url: `/v1/mappings/user_likes_pins/${user.id}/count` })).json(), { count: 1 });
    // An empty body stays INVALID_JSON where a body is required.
    assertError(await app.inject({ method: 'PUT', url: '/v1/lookups/email/e', headers: { 'content-type': 'application/json' }, payload: '' }), 400, 'INVALID_JSON');
  });

  await t.test('defect 9: every DELETE is 204 when something was removed, 404 NOT_FOUND when nothing was there', async () => {
    const gone = await createObject(app, 'pin', { name: 'g' }, { near: board.id });
    const routes = [
      `/v1/objects/${gone.id}`,
      `/v1/mappings/user_likes_pins/${user.id}/${pin.id}`,
      '/v1/lookups/email/del-me',
      '/v1/lookups/email?key=del-me2',
    ];
    assert.equal((await app.inject({ method: 'PUT', url: '/v1/lookups/email/del-me', payload: { id: user.id } })).statusCode, 204);
    assert.equal((await app.inject({ method: 'PUT', url: '/v1/lookups/email/del-me2', payload: { id: user.id } })).statusCode, 204);
    for (const url of routes) {
      assert.equal((await app.inject({ method: 'DELETE', url })).statusCode, 204, url);
      assertError(await app.inject({ method: 'DELETE', url }), 404, 'NOT_FOUND', url);
    }
  });

  await t.test('defect 7: integers up to ±(2^53-1) are stored exactly; beyond, refused with a message that says to send a string', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/objects/pin', headers: { 'content-type': 'application/json' }, payload: '{"data":{"max":9007199254740991,"min":-9007199254740991,"f":1.5e300,"e":1e20,"big":"12345678901234567890","s":"\\"12345678901234567890"}}' });
    assert.equal(res.statusCode, 201, res.body);
    const id = (res.json() as { id: string }).id;
    const text = (await app.inject({ method: 'GET', url: `/v1/objects/${id}` })).body;
    assert.match(text, /"max":9007199254740991,"min":-9007199254740991,"f":1\.5e\+300,"e":100000000000000000000,"big":"12345678901234567890","s":"\\"12345678901234567890"/);
    const refused = await app.inject({ method: 'PATCH', url: `/v1/objects/${id}`, headers: { 'content-type': 'application/json' }, payload: '{"n":{"deep":[12345678901234567890]}}' });
    assertError(refused, 400, 'INVALID_ARGUMENT');
    assert.match(refused.body, /12345678901234567890.*send it as a string/);
    assert.doesNotMatch((await app.inject({ method: 'GET', url: `/v1/objects/${id}` })).body, /"n"/);
  });

  await t.test('defect 1: a path-form lookup with ?key= stores nothing under either key', async () => {
    assertError(await app.inject({ method: 'PUT', url: '/v1/lookups/email/a1?key=b1', payload: { id: user.id } }), 400, 'INVALID_ARGUMENT');
    assertError(await app.inject({ method: 'GET', url: '/v1/lookups/email/a1' }), 404, 'NOT_FOUND');
    assertError(await app.inject({ method: 'GET', url: '/v1/lookups/email/b1' }), 404, 'NOT_FOUND');
    assertError(await app.inject({ method: 'PATCH', url: `/v1/objects/${pin.id}?bogus=1`, payload: { x: 1 } }), 400, 'INVALID_ARGUMENT');
    assert.deepEqual((await app.inject({ method: 'GET', url: `/v1/objects/${pin.id}` })).json().data, { name: 'p' });
  });

  await t.test('defect 2: ?k%65y= is the key parameter, checked like ?key=', async () => {
    assert.equal((await app.inject({ method: 'PUT', url: '/v1/lookups/email?k%65y=spelled', payload: { id: user.id } })).statusCode, 204);
    assert.equal((await app.inject({ method: 'GET', url: '/v1/lookups/email?key=spelled' })).statusCode, 200);
    assertError(await app.inject({ method: 'PUT', url: '/v1/lookups/email?k%65y=%ED%A0%80', payload: { id: user.id } }), 400, 'INVALID_ARGUMENT');
    assertError(await app.inject({ method: 'GET', url: `/v1/lookups/email/${encodeURIComponent('%ED%A0%80')}` }), 404, 'NOT_FOUND');
  });
});
