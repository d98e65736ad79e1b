/**
 * Values of the wrong JSON type in request bodies. Fastify's Ajv coerces types (query strings
 * need it), so without the non-coercing body validator (bodyStrictValidator in src/http/app.ts) `{"shard":"1"}` would place an object on shard 1 and
 * `{"sequence":null}` would store sequence 0. Each must be 400 with a stable code and write
 * nothing; the right types, and a merge patch's arbitrary values, still work.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InjectOptions } from 'fastify';
import { snapshot } from '../kit/kit-fixture.js';
import { assertError, createObject, failedCases, makeApp, type BadCase } from './http-fixture.js';

type Case = BadCase;

const json = (method: InjectOptions['method'], url: string, payload: string, headers: Record<string, string> = {}): InjectOptions =>
  ({ method, url, payload, headers: { 'content-type': 'application/json', ...headers } });

/** JSON texts Ajv would turn into an integer, or that are no integer at all. */
const NOT_INTEGERS = ['"1"', '"0"', '" 1"', '"1e3"', 'true', 'false', 'null', '[1]', '["1"]', '{}', '1.5'];

test('a body value of the wrong JSON type is 400 INVALID_ARGUMENT (or INVALID_ID for IDs) and writes nothing', async () => {
  const f = await makeApp();
  try {
    const board = await createObject(f.app, 'board', { name: 'b' });
    const pin = await createObject(f.app, 'pin', { name: 'p' }, { near: board.id });
    const before = snapshot(f.root);
    const cases: Case[] = [];
    const mapping = `/v1/mappings/board_has_pins/${board.id}/${pin.id}`;
    for (const v of NOT_INTEGERS) {
      cases.push(
        [`POST object shard ${v}`, json('POST', '/v1/objects/pin', `{"data":{},"shard":${v}}`), 400, 'INVALID_ARGUMENT'],
        [`PUT mapping sequence ${v}`, json('PUT', mapping, `{"sequence":${v}}`), 400, 'INVALID_ARGUMENT'],
      );
    }
    for (const v of ['[{}]', '"x"', '5', 'true']) {
      cases.push(
        [`POST object data ${v}`, json('POST', '/v1/objects/pin', `{"data":${v}}`), 400, 'INVALID_ARGUMENT'],
        [`PATCH body ${v}`, json('PATCH', `/v1/objects/${pin.id}`, v, { 'content-type': 'application/merge-patch+json' }), 400, 'INVALID_ARGUMENT'],
        [`PUT mapping body ${v}`, json('PUT', mapping, v), 400, 'INVALID_ARGUMENT'],
        [`PUT lookup body ${v}`, json('PUT', '/v1/lookups/email/k', v), 400, 'INVALID_ARGUMENT'],
        [`POST object body ${v}`, json('POST', '/v1/objects/pin', v), 400, 'INVALID_ARGUMENT'],
      );
    }
    cases.push(['PUT mapping body null', json('PUT', mapping, 'null'), 400, 'INVALID_ARGUMENT']);
    // IDs carry no JSON type in the schemas: anything but a string is INVALID_ID, as before.
    for (const v of [`[${JSON.stringify(board.id)}]`, 'true', '{}', '5']) {
      cases.push(
        [`POST object near ${v}`, json('POST', '/v1/objects/pin', `{"data":{},"near":${v}}`), 400, 'INVALID_ID'],
        [`PUT lookup id ${v}`, json('PUT', '/v1/lookups/email/k', `{"id":${v}}`), 400, 'INVALID_ID'],
      );
    }

    assert.deepEqual(await failedCases(f.app, cases), []);
    assert.equal(snapshot(f.root), before, 'a body of the wrong types must not write anything');
  } finally {
    await f.cleanup();
  }
});

test('the message names the field and the type it must have', async () => {
  const f = await makeApp();
  try {
    const res = await f.app.inject(json('POST', '/v1/objects/pin', '{"data":{},"shard":"1"}'));
    assertError(res, 400, 'INVALID_ARGUMENT');
    assert.match((res.json() as { error: { message: string } }).error.message, /body\/shard must be integer/);
  } finally {
    await f.cleanup();
  }
});

test('bodies of the right types still work; a merge patch keeps values of any JSON type', async () => {
  const f = await makeApp();
  try {
    const created = await f.app.inject(json('POST', '/v1/objects/pin', '{"data":{"n":1},"shard":1}'));
    assert.equal(created.statusCode, 201, created.body);
    const pin = created.json() as { id: string; shard: number };
    assert.equal(pin.shard, 1);
    const board = await createObject(f.app, 'board', { name: 'b' });
    const mapping = `/v1/mappings/board_has_pins/${board.id}/${pin.id}`;
    assert.equal((await f.app.inject({ method: 'PUT', url: mapping })).statusCode, 204);
    assert.equal((await f.app.inject(json('PUT', mapping, '{}'))).statusCode, 204);
    assert.equal((await f.app.inject(json('PUT', mapping, '{"sequence":-7}'))).statusCode, 204);
    const listed = (await f.app.inject({ method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}` })).json() as { items: Array<{ id: string; sequence: number }> };
    assert.deepEqual(listed.items, [{ id: pin.id, sequence: -7 }]);
    assert.equal((await f.app.inject(json('PUT', '/v1/lookups/email/k', JSON.stringify({ id: pin.id })))).statusCode, 204);
    const patch = { n: '5', b: true, list: [1, 'x', null], nested: { deep: [{}] }, gone: null, num: 2.5 };
    const patched = await f.app.inject(json('PATCH', `/v1/objects/${pin.id}`, JSON.stringify(patch), { 'content-type': 'application/merge-patch+json' }));
    assert.equal(patched.statusCode, 200, patched.body);
    assert.deepEqual((patched.json() as { data: unknown }).data, { n: '5', b: true, list: [1, 'x', null], nested: { deep: [{}] }, num: 2.5 });
  } finally {
    await f.cleanup();
  }
});

test('an ID sent as a JSON number is INVALID_ID in every ID field of a body, safe or beyond 2^53, and writes nothing (docs/http-api.md)', async () => {
  const f = await makeApp();
  try {
    const board = await createObject(f.app, 'board', { name: 'b' }, { shard: 3 });
    const big = '188729040603971586';
    const cases: Array<[string, Parameters<typeof f.app.inject>[0]]> = [
      ['lookup put, an unsafe number', { method: 'PUT', url: '/v1/lookups/username/ann', headers: { 'content-type': 'application/json' }, payload: `{"id": ${big}}` }],
      ['lookup put, a safe number', { method: 'PUT', url: '/v1/lookups/username/ann', headers: { 'content-type': 'application/json' }, payload: '{"id": 12}' }],
      ['create near, an unsafe number', { method: 'POST', url: '/v1/objects/pin', headers: { 'content-type': 'application/json' }, payload: `{"data": {}, "near": ${big}}` }],
      ['create near, a safe number', { method: 'POST', url: '/v1/objects/pin', headers: { 'content-type': 'application/json' }, payload: '{"data": {}, "near": 7}' }],
      ['batch create near, an unsafe number', { method: 'POST', url: '/v1/objects/pin:batchCreate', headers: { 'content-type': 'application/json' }, payload: `{"items": [{"data": {}, "near": ${big}}]}` }],
    ];
    for (const [what, req] of cases) assertError(await f.app.inject(req), 400, 'INVALID_ID', what);
    assert.equal((await f.app.inject({ method: 'GET', url: '/v1/lookups/username/ann' })).statusCode, 404, 'no lookup written');
    // A big number elsewhere in the data is still the unsafe-number refusal.
    assertError(await f.app.inject({ method: 'POST', url: '/v1/objects/pin', headers: { 'content-type': 'application/json' }, payload: `{"data": {"n": ${big}}, "near": "${board.id}"}` }), 400, 'INVALID_ARGUMENT', 'a big number in the data');
  } finally {
    await f.cleanup();
  }
});
