import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { adminAccess, exposureWarning } from '../../src/cli/actions/serve.js';
import { ShardKitError } from '../../src/errors.js';
import type { AdminAccess } from '../../src/http/admin-auth.js';
import { buildApp } from '../../src/http/app.js';
import { widecolumnRoutes } from '../../src/http/routes/widecolumn-routes.js';
import { WideColumnStore } from '../../src/widecolumn/index.js';
import { makeKit } from '../kit/kit-fixture.js';
import { assertError } from './http-fixture.js';
import { cli } from '../cli/cli-harness.js';

const TOKEN = 'e3b0c44298fc1c149afbf4c8996fb924';

async function adminApp(admin: AdminAccess) {
  const f = makeKit();
  const data = join(f.root, 'wc-data');
  mkdirSync(data, { recursive: true });
  const store = await WideColumnStore.open(join(data, 'widecolumn'));
  await store.putDataset('events', { maxVersions: 1 });
  await store.putRow('events', 'u1', [{ column: 'c', value: 'v' }]);
  const exportDir = join(data, 'exports');
  const app = await buildApp({ kit: f.kit, admin, plugins: [widecolumnRoutes(store, { exportDir })] });
  return {
    app,
    exportDir,
    cleanup: async () => {
      await app.close();
      await store.close();
      await f.cleanup();
    },
  };
}

test('admin routes with a token: 401 UNAUTHORIZED without it or with a wrong one (nothing written), 200 with it; data routes need none', async () => {
  const a = await adminApp({ kind: 'token', token: TOKEN });
  try {
    const backup = (authorization?: string) => a.app.inject({ method: 'POST', url: '/v1/admin/widecolumn/backup', payload: { name: 'b1' }, headers: authorization === undefined ? {} : { authorization } });
    for (const header of [undefined, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(1)}`, TOKEN, `Basic ${TOKEN}`, 'Bearer', `Bearer ${TOKEN} extra`]) {
      const res = await backup(header);
      assertError(res, 401, 'UNAUTHORIZED', String(header));
      assert.match(String(res.headers['www-authenticate']), /^Bearer /);
    }
    assertError(await a.app.inject({ method: 'POST', url: '/v1/admin/widecolumn/compact', headers: { authorization: 'Bearer wrong-token-wrong-token' } }), 401, 'UNAUTHORIZED');
    assert.equal(existsSync(a.exportDir), false, 'refused requests write nothing');
    const ok = await backup(`Bearer ${TOKEN}`);
    assert.equal(ok.statusCode, 200, ok.body);
    assert.deepEqual(readdirSync(a.exportDir), ['b1']);
    assert.equal((await backup(`bearer   ${TOKEN}  `)).statusCode, 409, 'scheme is case-insensitive; b1 exists now');
    assert.equal((await a.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
    assert.equal((await a.app.inject({ method: 'GET', url: '/v1/datasets' })).statusCode, 200);
  } finally {
    await a.cleanup();
  }
});

test('admin routes disabled (public address, no token): 403 FORBIDDEN saying what to do, nothing written', async () => {
  const a = await adminApp({ kind: 'disabled', reason: 'admin routes are disabled: set SHARDKIT_ADMIN_TOKEN' });
  try {
    for (const url of ['/v1/admin/widecolumn/compact', '/v1/admin/widecolumn/backup', '/v1/admin/widecolumn/export']) {
      const res = await a.app.inject({ method: 'POST', url, payload: { name: 'x', dataset: 'events' }, headers: { authorization: `Bearer ${TOKEN}` } });
      assertError(res, 403, 'FORBIDDEN', url);
      assert.match((res.json() as { error: { message: string } }).error.message, /SHARDKIT_ADMIN_TOKEN/);
    }
    assert.equal(existsSync(a.exportDir), false);
  } finally {
    await a.cleanup();
  }
});

test('the OpenAPI document marks admin routes with the admin scheme, every /v1/ route with the token scheme, and their 401/403 answers', async () => {
  const a = await adminApp({ kind: 'open' });
  try {
    const spec = (await a.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      components: { securitySchemes: Record<string, { type: string; scheme: string }> };
      paths: Record<string, Record<string, { security?: unknown; responses: Record<string, unknown> }>>;
    };
    assert.deepEqual(Object.entries(spec.components.securitySchemes).map(([name, s]) => [name, s.type, s.scheme]), [['adminToken', 'http', 'bearer'], ['bearerToken', 'http', 'bearer']]);
    for (const [path, ops] of Object.entries(spec.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const admin = path.startsWith('/v1/admin/');
        const schemes = JSON.stringify(op.security ?? []);
        assert.equal(schemes.includes('adminToken'), admin, `${method} ${path}`);
        // Any of the schemes (alternatives): the auth file's tokens on every /v1/ route (docs/security.md).
        assert.equal(schemes.includes('bearerToken'), path.startsWith('/v1/'), `${method} ${path}`);
        if (path.startsWith('/v1/')) assert.ok('401' in op.responses && '403' in op.responses, `${method} ${path}`);
      }
    }
  } finally {
    await a.cleanup();
  }
});

test('serve decides admin access: token file or SHARDKIT_ADMIN_TOKEN, else open on loopback only; bad tokens are INVALID_CONFIG', () => {
  const f = makeKit();
  try {
    assert.deepEqual(adminAccess({ host: '127.0.0.1' }, {}), { kind: 'open' });
    assert.deepEqual(adminAccess({ host: '::1' }, {}), { kind: 'open' });
    assert.deepEqual(adminAccess({ host: 'localhost' }, { SHARDKIT_ADMIN_TOKEN: '' }), { kind: 'open' });
    for (const host of ['0.0.0.0', '::', '10.1.2.3', '127.0.0.1.example.com']) {
      const a = adminAccess({ host }, {});
      assert.equal(a.kind, 'disabled', host);
      assert.match((a as { reason: string }).reason, /SHARDKIT_ADMIN_TOKEN or --admin-token-file/);
    }
    assert.deepEqual(adminAccess({ host: '0.0.0.0' }, { SHARDKIT_ADMIN_TOKEN: ` ${TOKEN}\n` }), { kind: 'token', token: TOKEN });
    const file = join(f.root, 'token');
    writeFileSync(file, `${TOKEN}\n`);
    assert.deepEqual(adminAccess({ host: '127.0.0.1', adminTokenFile: file }, { SHARDKIT_ADMIN_TOKEN: 'another-token-another' }), { kind: 'token', token: TOKEN });
    const invalid = (fn: () => unknown, re: RegExp) => assert.throws(fn, (err: unknown) => err instanceof ShardKitError && err.code === 'INVALID_CONFIG' && re.test(err.message));
    invalid(() => adminAccess({ host: '0.0.0.0' }, { SHARDKIT_ADMIN_TOKEN: 'short' }), /at least 16 characters/);
    invalid(() => adminAccess({ host: '0.0.0.0' }, { SHARDKIT_ADMIN_TOKEN: 'has a space in the middle' }), /without spaces/);
    invalid(() => adminAccess({ host: '0.0.0.0', adminTokenFile: join(f.root, 'missing') }), /cannot read the admin token file .*ENOENT/);
  } finally {
    void f.cleanup();
  }
});

test('wc --url sends SHARDKIT_ADMIN_TOKEN: without it one readable UNAUTHORIZED line, with it the command runs', async () => {
  const a = await adminApp({ kind: 'token', token: TOKEN });
  try {
    const address = await a.app.listen({ host: '127.0.0.1', port: 0 });
    let r = await cli(['wc', 'compact', '--url', address], { SHARDKIT_ADMIN_TOKEN: '' });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^shardkit: UNAUTHORIZED: admin routes need the header Authorization: Bearer .*\(from http.*\n$/);
    r = await cli(['wc', 'compact', '--url', address, '--json'], { SHARDKIT_ADMIN_TOKEN: TOKEN });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(typeof JSON.parse(r.stdout).removedExcessVersions, 'number');
  } finally {
    await a.cleanup();
  }
});

test('open admin routes (loopback, no token) refuse bodies a cross-site page can send without a preflight: 415, nothing written', async () => {
  const a = await adminApp({ kind: 'open' });
  try {
    // A <form> or fetch(..., {mode: 'no-cors'}) from another site can send these content types.
    for (const type of ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const res = await a.app.inject({ method: 'POST', url: '/v1/admin/widecolumn/backup', payload: '{"name":"b1"}', headers: { 'content-type': type } });
      assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', type);
      // Data routes of plugins as well as our own.
      assertError(await a.app.inject({ method: 'PUT', url: '/v1/datasets/events/rows/u2', payload: '{"items":[{"column":"c","value":"x"}]}', headers: { 'content-type': type } }), 415, 'UNSUPPORTED_MEDIA_TYPE', `${type} put row`);
      assertError(await a.app.inject({ method: 'POST', url: '/v1/objects/pin', payload: '{"data":{}}', headers: { 'content-type': type } }), 415, 'UNSUPPORTED_MEDIA_TYPE', `${type} object`);
    }
    assert.equal(existsSync(a.exportDir), false, 'no backup was written');
    const row = (await a.app.inject({ method: 'GET', url: '/v1/datasets/events/rows/u2' })).json() as { columns: Record<string, unknown> };
    assert.deepEqual(Object.keys(row.columns), [], 'no row was written');
    // The same backup as JSON works.
    assert.equal((await a.app.inject({ method: 'POST', url: '/v1/admin/widecolumn/backup', payload: { name: 'b1' } })).statusCode, 200);
  } finally {
    await a.cleanup();
  }
});

test('serve warns loudly when it listens beyond loopback without an auth file, and only then (#34 finding 9)', () => {
  assert.match(exposureWarning('0.0.0.0', false)!, /^WARNING: shardkit serves on 0\.0\.0\.0 without an auth file/);
  assert.match(exposureWarning('10.1.2.3', false)!, /--auth-file/);
  for (const host of ['127.0.0.1', 'localhost', '::1']) assert.equal(exposureWarning(host, false), undefined, host);
  assert.equal(exposureWarning('0.0.0.0', true), undefined, 'tokens guard it');
});
