/**
 * Issue #34, finding 10 (the small things): with an auth file, 404/405 were answered before
 * authentication (telling anyone which paths exist); unknown paths skipped the rate limit; /docs
 * could be framed by any page; the access log kept full URLs, lookup keys (emails) included.
 * (The CLI's `modshard ''` is in test/cli/id-cli.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { hashToken, TokenSet } from '../../src/http/auth-tokens.js';
import { assertError, createObject, makeApp } from './http-fixture.js';

const TOKEN = 'sk_small-things-test-token-0123456789';

test('with an auth file, unknown paths and wrong methods under /v1/ are 401 without a token, 404/405 with one', async () => {
  const f = await makeApp({ app: { tokens: new TokenSet(undefined, [{ digest: hashToken(TOKEN), scope: 'read' }]) } });
  try {
    assertError(await f.app.inject({ method: 'GET', url: '/v1/nothing/here' }), 401, 'UNAUTHORIZED', 'unknown path');
    assertError(await f.app.inject({ method: 'POST', url: '/v1/lookups/email?key=a', payload: {} }), 401, 'UNAUTHORIZED', 'wrong method');
    const auth = { authorization: `Bearer ${TOKEN}` };
    assertError(await f.app.inject({ method: 'GET', url: '/v1/nothing/here', headers: auth }), 404, 'NOT_FOUND', 'unknown path with a token');
    assertError(await f.app.inject({ method: 'POST', url: '/v1/lookups/email?key=a', headers: auth, payload: {} }), 405, 'METHOD_NOT_ALLOWED', 'wrong method with a token');
    // Outside /v1/ nothing needs a token: probes and the docs.
    assertError(await f.app.inject({ method: 'GET', url: '/nothing' }), 404, 'NOT_FOUND', 'unknown path outside /v1/');
  } finally {
    await f.cleanup();
  }
});

test('unknown paths count against the rate limit like any other', async () => {
  const f = await makeApp({ limits: { rateLimit: { max: 3, windowMs: 60_000 } } });
  try {
    for (let i = 0; i < 3; i++) assertError(await f.app.inject({ method: 'GET', url: `/v1/nothing/${i}` }), 404, 'NOT_FOUND', `unknown path ${i}`);
    const limited = await f.app.inject({ method: 'GET', url: '/v1/nothing/3' });
    assertError(limited, 429, 'RATE_LIMITED', 'fourth unknown path');
    assert.ok(limited.headers['retry-after'] !== undefined);
    assertError(await f.app.inject({ method: 'GET', url: '/v1/topology' }), 429, 'RATE_LIMITED', 'a real route after them');
  } finally {
    await f.cleanup();
  }
});

test('no page may frame /docs or any answer; /docs has a CSP', async () => {
  const f = await makeApp();
  try {
    for (const url of ['/docs/', '/docs/static/index.html', '/v1/topology', '/openapi.json']) {
      const res = await f.app.inject({ method: 'GET', url });
      assert.ok(res.statusCode < 400, `${url}: ${res.statusCode}`);
      assert.equal(res.headers['x-frame-options'], 'DENY', url);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', url);
    }
    const page = await f.app.inject({ method: 'GET', url: '/docs/static/index.html' });
    const csp = String(page.headers['content-security-policy']);
    // Exactly one frame-ancestors, 'none': browsers obey the first of two and ignore the rest.
    assert.deepEqual(csp.match(/frame-ancestors[^;]*/g), ["frame-ancestors 'none'"], csp);
    assert.match(csp, /script-src/);
    assert.ok(!csp.includes(';;'), csp);
    // A file the docs do not have is 404 NOT_FOUND (it was 405, "GET is not allowed ... allowed: GET").
    const missing = await f.app.inject({ method: 'GET', url: '/docs/static/nonexistent.js' });
    assert.equal(missing.statusCode, 404, missing.body);
    assert.equal((missing.json() as { error: { code: string } }).error.code, 'NOT_FOUND');
    // A path the static files refuse (403) keeps a code of that status, not 400's INVALID_ARGUMENT.
    const dots = await f.app.inject({ method: 'GET', url: '/docs/static/%00' });
    assert.deepEqual([dots.statusCode, (dots.json() as { error: { code: string } }).error.code], [403, 'FORBIDDEN'], dots.body);
  } finally {
    await f.cleanup();
  }
});

test('the access log keeps the route and the path, never a lookup key nor a query string', async () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter((l) => l !== ''));
      done();
    },
  });
  const f = await makeApp({ app: { loggerInstance: pino({ level: 'info' }, sink) } });
  try {
    const user = await createObject(f.app, 'user', { name: 'ann' });
    const secret = 'ann.secret@example.com';
    assert.equal((await f.app.inject({ method: 'PUT', url: `/v1/lookups/email/${encodeURIComponent(secret)}`, payload: { id: user.id } })).statusCode, 204);
    assert.equal((await f.app.inject({ method: 'GET', url: `/v1/lookups/email/${encodeURIComponent(secret)}` })).statusCode, 200);
    assert.equal((await f.app.inject({ method: 'GET', url: `/v1/lookups/email?key=${encodeURIComponent(secret)}` })).statusCode, 200);
    const log = lines.join('\n');
    assert.doesNotMatch(log, /ann\.secret|ann\.secret%40/, 'no lookup key in the log');
    const incoming = lines.map((l) => JSON.parse(l) as { msg: string; req?: { url: string; route?: string } }).filter((l) => l.msg === 'incoming request');
    assert.ok(incoming.some((l) => l.req?.url === '/v1/lookups/email/<key>' && l.req.route === '/v1/lookups/:keyspace/:key'), JSON.stringify(incoming));
    assert.ok(incoming.some((l) => l.req?.url === '/v1/lookups/email'));
    assert.ok(incoming.some((l) => l.req?.url === `/v1/objects/user`));
  } finally {
    await f.cleanup();
  }
});
