/**
 * Locking the data API down (docs/security.md): tokens with scopes (401/403), open probes, the
 * rate limit (429) and the concurrency cap (503), over real sockets. The real `shardkit serve`
 * with TLS, client certificates, curl and SIGHUP rotation is in serve-tls.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp, type BuildAppOptions } from '../../src/http/app.js';
import { createToken, hashToken, TokenSet } from '../../src/http/auth-tokens.js';
import { widecolumnDisabledRoutes } from '../../src/http/routes/widecolumn-routes.js';
import { makeKit } from '../kit/kit-fixture.js';

async function listening(options: Omit<BuildAppOptions, 'kit'>) {
  const f = makeKit();
  const app = await buildApp({ kit: f.kit, ...options });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  return { base, app, close: async () => { await app.close(); await f.cleanup(); } };
}

async function req(base: string, method: string, path: string, token?: string, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: { ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, code: text.startsWith('{"error"') ? (JSON.parse(text) as { error: { code: string } }).error.code : undefined };
}

test('tokens with scopes: 401 without a known token, 403 with too weak a scope; probes, dashboard and docs stay open', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-auth-'));
  const file = join(dir, 'tokens');
  const read = createToken(file, 'read', 'reader');
  const write = createToken(file, 'write');
  const admin = createToken(file, 'admin');
  const text = readFileSync(file, 'utf8');
  for (const token of [read, write, admin]) {
    assert.ok(!text.includes(token), 'the file holds no token');
    assert.ok(text.includes(`sha256:${hashToken(token).toString('hex')}`));
  }
  assert.equal(readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').length, 3);
  const legacyAdmin = 'legacy-admin-token-0123456789';
  const s = await listening({ tokens: new TokenSet(file, [{ digest: hashToken(legacyAdmin), scope: 'admin' }]), plugins: [widecolumnDisabledRoutes()] });
  t.after(async () => {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const path of ['/healthz', '/metrics', '/dashboard/', '/openapi.json']) assert.equal((await req(s.base, 'GET', path)).status, 200, path);
  const none = await req(s.base, 'GET', '/v1/topology');
  assert.equal(none.status, 401);
  assert.equal(none.code, 'UNAUTHORIZED');
  assert.match(String(none.headers.get('www-authenticate')), /^Bearer realm="shardkit"/);
  assert.equal((await req(s.base, 'GET', '/v1/topology', 'sk_not-a-token')).status, 401);
  assert.equal((await req(s.base, 'GET', '/v1/topology', `${read}x`)).status, 401);
  assert.equal((await req(s.base, 'POST', '/v1/objects/pin', undefined, { data: {} })).status, 401);

  // read: reads only.
  assert.equal((await req(s.base, 'GET', '/v1/topology', read)).status, 200);
  const weak = await req(s.base, 'POST', '/v1/objects/pin', read, { data: {} });
  assert.equal(weak.status, 403);
  assert.equal(weak.code, 'FORBIDDEN');
  assert.match(String(weak.headers.get('www-authenticate')), /insufficient_scope/);
  // A batch read is a read, even as a POST (it reaches the disabled store: 501, past the check).
  assert.equal((await req(s.base, 'POST', '/v1/datasets/d/rows:batchGet', read, { requests: [] })).status, 501);
  // write: data writes, not admin routes.
  const created = await req(s.base, 'POST', '/v1/objects/pin', write, { data: { a: 1 } });
  assert.equal(created.status, 201);
  const id = (JSON.parse(created.text) as { id: string }).id;
  assert.equal((await req(s.base, 'GET', `/v1/objects/${id}`, write)).status, 200);
  assert.equal((await req(s.base, 'DELETE', `/v1/objects/${id}`, read)).status, 403);
  assert.equal((await req(s.base, 'POST', '/v1/admin/widecolumn/compact', write)).status, 403);
  // admin: everything; the --admin-token-file token is an admin-scope one.
  assert.equal((await req(s.base, 'POST', '/v1/admin/widecolumn/compact', admin)).status, 501);
  assert.equal((await req(s.base, 'POST', '/v1/admin/widecolumn/compact', legacyAdmin)).status, 501);
  assert.equal((await req(s.base, 'DELETE', `/v1/objects/${id}`, legacyAdmin)).status, 204);
  // Nothing was written by a refused request.
  assert.equal((await req(s.base, 'GET', `/v1/objects/${id}`, read)).status, 404);

  // The OpenAPI document declares both schemes and the statuses auth and limits add.
  const spec = JSON.parse((await req(s.base, 'GET', '/openapi.json')).text) as { components: { securitySchemes: Record<string, unknown> }; paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>> };
  assert.ok(spec.components.securitySchemes.bearerToken !== undefined && spec.components.securitySchemes.adminToken !== undefined);
  for (const [path, ops] of Object.entries(spec.paths)) {
    if (!path.startsWith('/v1/')) continue;
    for (const [method, op] of Object.entries(ops)) {
      for (const status of ['401', '403', '429', '503']) assert.ok(op.responses[status] !== undefined, `${method} ${path} documents ${status}`);
      assert.ok(JSON.stringify(op.security).includes('bearerToken'), `${method} ${path} declares the token scheme`);
    }
  }
});

test('a token file that does not parse is refused whole, naming the line', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-auth-'));
  try {
    const file = join(dir, 'tokens');
    writeFileSync(file, `# comment\nsha256:${'ab'.repeat(32)} read\nplaintext-token admin\n`);
    assert.throws(() => new TokenSet(file), /line 3/);
    assert.throws(() => createToken(file, 'read'), /line 3/);
    assert.throws(() => createToken(join(dir, 'new'), 'root' as 'read'), /scope must be one of/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('limits: the per-client rate limit answers 429 with Retry-After; the concurrency cap sheds with 503 and Retry-After', async (t) => {
  const limited = await listening({ limits: { rateLimit: { max: 3, windowMs: 60_000 } } });
  t.after(() => limited.close());
  for (let i = 0; i < 3; i++) assert.equal((await req(limited.base, 'GET', '/v1/topology')).status, 200);
  const over = await req(limited.base, 'GET', '/v1/schema');
  assert.equal(over.status, 429);
  assert.equal(over.code, 'RATE_LIMITED');
  assert.match(String(over.headers.get('retry-after')), /^\d+$/);
  assert.equal((await req(limited.base, 'GET', '/healthz')).status, 200, 'probes are not limited');

  const capped = await listening({ limits: { maxConcurrent: 1 } });
  t.after(() => capped.close());
  // One request in flight: its headers are in, its body is not.
  const { port } = new URL(capped.base);
  const socket = connect(Number(port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  const body = JSON.stringify({ data: { slow: true } });
  socket.write(`POST /v1/objects/pin HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
  let shed = await req(capped.base, 'GET', '/v1/topology');
  // The server may not have read the first request yet: ask until it has (an outcome, not a time).
  for (let i = 0; i < 200 && shed.status === 200; i++) shed = await req(capped.base, 'GET', '/v1/topology');
  assert.equal(shed.status, 503);
  assert.equal(shed.code, 'OVERLOADED');
  assert.equal(shed.headers.get('retry-after'), '1');
  assert.equal((await req(capped.base, 'GET', '/healthz')).status, 200, 'probes are not shed');
  const answer = new Promise<string>((resolve) => {
    let out = '';
    socket.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\r\n\r\n{')) resolve(out);
    });
  });
  socket.write(body);
  assert.match(await answer, /^HTTP\/1\.1 201/);
  socket.destroy();
  let after = await req(capped.base, 'GET', '/v1/topology');
  for (let i = 0; i < 200 && after.status === 503; i++) after = await req(capped.base, 'GET', '/v1/topology');
  assert.equal(after.status, 200, 'the slot is given back');
});
