/**
 * Lookups with the key in `?key=`: the same store as the path form, and the one way for clients
 * whose URL parser drops dot segments (browsers, fetch) to reach the keys "." and "..".
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { snapshot } from '../kit/kit-fixture.js';
import { assertError, listeningApp } from './http-fixture.js';

const json = { 'content-type': 'application/json' };

test('?key= reads and writes the same lookups as the path form, "." and ".." included, through fetch', async () => {
  const f = await listeningApp();
  try {
    const user = await f.kit.objects.create('user', {});
    const other = await f.kit.objects.create('user', {});
    for (const [i, key] of ['..', '.', 'a/b?c#d', 'plus+and space', 'é🦄', ''.padEnd(1024, 'k')].entries()) {
      const id = (i % 2 === 0 ? user : other).id.toString();
      const put = await fetch(`${f.base}/v1/lookups/username?key=${encodeURIComponent(key)}`, { method: 'PUT', headers: json, body: JSON.stringify({ id }) });
      assert.equal(put.status, 204, key);
      // The library sees exactly that key, and the query form reads it back.
      assert.equal(await f.kit.lookups.get('username', key), BigInt(id), key);
      const got = await fetch(`${f.base}/v1/lookups/username?key=${encodeURIComponent(key)}`);
      assert.deepEqual(await got.json(), { key, id }, key);
    }
    // A key written through the path form is the same key in the query form.
    await fetch(`${f.base}/v1/lookups/email/ann%40example.com`, { method: 'PUT', headers: json, body: JSON.stringify({ id: user.id.toString() }) });
    assert.equal(((await (await fetch(`${f.base}/v1/lookups/email?key=ann%40example.com`)).json()) as { id: string }).id, user.id.toString());
    const del = await fetch(`${f.base}/v1/lookups/username?key=..`, { method: 'DELETE' });
    assert.equal(del.status, 204);
    assert.equal(await f.kit.lookups.get('username', '..'), undefined);
    assert.equal(await f.kit.lookups.get('username', '.'), other.id, 'only that key went');
  } finally {
    await f.cleanup();
  }
});

test('?key= refuses what the path form refuses, and writes nothing', async () => {
  const f = await listeningApp();
  try {
    const user = await f.kit.objects.create('user', {});
    const body = JSON.stringify({ id: user.id.toString() });
    const before = snapshot(f.root);
    for (const [what, url, status, code] of [
      ['no key', '/v1/lookups/email', 400, 'INVALID_ARGUMENT'],
      ['empty key', '/v1/lookups/email?key=', 400, 'INVALID_ARGUMENT'],
      ['two keys', '/v1/lookups/email?key=a&key=b', 400, 'INVALID_ARGUMENT'],
      ['another parameter', '/v1/lookups/email?key=a&ttl=5', 400, 'INVALID_ARGUMENT'],
      ['a lone surrogate', '/v1/lookups/email?key=%ED%A0%80', 400, 'INVALID_ARGUMENT'],
      ['broken percent-encoding', '/v1/lookups/email?key=%E0%A4%A', 400, 'INVALID_ARGUMENT'],
      ['over 1024 bytes', `/v1/lookups/email?key=${'é'.repeat(513)}`, 400, 'INVALID_ARGUMENT'],
      ['an unknown keyspace', '/v1/lookups/phone?key=a', 404, 'UNKNOWN_KEYSPACE'],
    ] as const) {
      for (const method of ['PUT', 'GET', 'DELETE'] as const) {
        const res = await f.app.inject({ method, url, ...(method === 'PUT' ? { payload: body, headers: json } : {}) });
        assertError(res, status, code, `${method} ${what}`);
      }
    }
    assertError(await f.app.inject({ method: 'PUT', url: '/v1/lookups/email?key=a', payload: '{"id":5}', headers: json }), 400, 'INVALID_ID', 'id as a number');
    assert.equal(snapshot(f.root), before, 'bad input writes nothing');
  } finally {
    await f.cleanup();
  }
});
