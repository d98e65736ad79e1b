/**
 * shardkitRoutes (issue 33 item 5): shardkit's data API mounted into a Fastify server the user
 * owns, beside the user's routes, under the user's hooks, with shardkit's error body, JSON rules
 * and ID checks on its routes and the host's own behaviour left alone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { shardkitRoutes } from '../../src/http/routes-plugin.js';
import { isShardKitError } from '../../src/errors.js';
import { makeKit } from '../kit/kit-fixture.js';
import { assertError } from './http-fixture.js';

async function hostApp() {
  const f = makeKit();
  const app = Fastify({ routerOptions: { maxParamLength: 16 * 1024 } });
  // The host's own auth: a hook of the root context reaches the plugin's routes.
  app.addHook('onRequest', async (request, reply) => {
    if (request.headers['x-user'] === undefined) return reply.code(401).send({ message: 'who are you' });
  });
  app.get('/hello', async () => ({ hello: 'world' }));
  app.get('/boom', async () => {
    throw new Error('host failure');
  });
  await app.register(shardkitRoutes, { kit: f.kit });
  await app.register(shardkitRoutes, { kit: f.kit, prefix: '/api' });
  await app.ready();
  return { app, cleanup: async () => { await app.close(); await f.cleanup(); } };
}

const as = { 'x-user': 'ada' };

test('objects, mappings and lookups are served from the host server, IDs as decimal strings, under the host\'s hooks', async () => {
  const { app, cleanup } = await hostApp();
  try {
    const created = await app.inject({ method: 'POST', url: '/v1/objects/pin', headers: as, payload: { data: { title: 'plugin' } } });
    assert.equal(created.statusCode, 201, created.body);
    const { id } = created.json() as { id: string };
    assert.match(id, /^[1-9][0-9]*$/);
    const read = await app.inject({ method: 'GET', url: `/v1/objects/${id}`, headers: as });
    assert.equal(read.statusCode, 200);
    assert.deepEqual((read.json() as { data: unknown }).data, { title: 'plugin' });
    const prefixed = await app.inject({ method: 'GET', url: `/api/v1/objects/${id}`, headers: as });
    assert.equal(prefixed.statusCode, 200, 'the same kit under a prefix');
    const put = await app.inject({ method: 'PUT', url: '/v1/lookups/username/ada', headers: as, payload: { id } });
    assert.ok(put.statusCode < 300, put.body);
    const found = await app.inject({ method: 'GET', url: '/v1/lookups/username/ada', headers: as });
    assert.equal((found.json() as { id: string }).id, id);
    assert.equal((await app.inject({ method: 'GET', url: `/v1/objects/${id}` })).statusCode, 401, 'the host\'s auth hook guards our routes');
    assert.deepEqual((await app.inject({ method: 'GET', url: '/hello', headers: as })).json(), { hello: 'world' });
  } finally {
    await cleanup();
  }
});

test('bad input on our routes gets shardkit\'s error body and code; the host\'s own errors keep Fastify\'s shape', async () => {
  const { app, cleanup } = await hostApp();
  try {
    assertError(await app.inject({ method: 'GET', url: '/v1/objects/12x', headers: as }), 400, 'INVALID_ID', 'a malformed ID');
    const absent = String((1n << 46n) | (1n << 36n) | 999_999n); // shard 1, type 1: never created
    assertError(await app.inject({ method: 'GET', url: `/v1/objects/${absent}`, headers: as }), 404, 'NOT_FOUND', 'no such object');
    assertError(await app.inject({ method: 'POST', url: '/v1/objects/pin', headers: { ...as, 'content-type': 'application/json' }, payload: '{"data": {"n": 12345678901234567890}}' }), 400, 'INVALID_ARGUMENT', 'an integer JSON.parse would round');
    assertError(await app.inject({ method: 'POST', url: '/v1/objects/pin', headers: as, payload: { data: { n: 1 }, shard: '7' } }), 400, 'INVALID_ARGUMENT', 'a shard as a string is not coerced');
    assertError(await app.inject({ method: 'GET', url: `/v1/objects/${absent}?nope=1`, headers: as }), 400, 'INVALID_ARGUMENT', 'an undeclared query parameter');
    const host = await app.inject({ method: 'GET', url: '/boom', headers: as });
    assert.equal(host.statusCode, 500);
    assert.equal((host.json() as { message?: string }).message, 'host failure', 'the host\'s error handler is its own');
  } finally {
    await cleanup();
  }
});

test('registering without a kit is refused with a clear error', async () => {
  const app = Fastify();
  await assert.rejects(async () => {
    await app.register(shardkitRoutes, {} as never);
    await app.ready();
  }, (err: unknown) => isShardKitError(err, 'INVALID_ARGUMENT') && /needs \{ kit \}/.test((err as Error).message));
  await app.close();
});
