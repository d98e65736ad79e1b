/**
 * Issue #34, finding 5 (DNS rebinding): a page whose name resolves to 127.0.0.1 reached the open
 * loopback service from the operator's browser and created objects and backups. Without tokens,
 * a service given the address it listens on (serve always gives it) answers only loopback names
 * and that address; any other Host gets 421 HOST_NOT_ALLOWED and nothing is written.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, createObject, makeApp } from './http-fixture.js';
import { hostName } from '../../src/http/host-check.js';
import { hashToken, TokenSet } from '../../src/http/auth-tokens.js';

test('a rebinding Host header is refused with 421 HOST_NOT_ALLOWED before any route runs; nothing is written', async () => {
  const f = await makeApp({ app: { hosts: ['127.0.0.1'] } });
  try {
    const user = await createObject(f.app, 'user', { name: 'ann' });
    for (const host of ['rebind.attacker.example:7070', 'rebind.attacker.example', '10.0.0.8', 'localhost.attacker.example', '[::2]:80', 'a b']) {
      const put = await f.app.inject({ method: 'PUT', url: '/v1/lookups/email/rebound', headers: { host }, payload: { id: user.id } });
      assertError(put, 421, 'HOST_NOT_ALLOWED', host);
      assertError(await f.app.inject({ method: 'GET', url: `/v1/objects/${user.id}`, headers: { host } }), 421, 'HOST_NOT_ALLOWED', host);
    }
    // Nothing was stored by the refused PUTs.
    assertError(await f.app.inject({ method: 'GET', url: '/v1/lookups/email/rebound' }), 404, 'NOT_FOUND', 'lookup after refused PUTs');
    // Loopback names and the listening address are answered.
    for (const host of ['localhost', 'localhost:7070', '127.0.0.1:7070', '127.8.9.10', '[::1]:7070', 'app.localhost:1', 'LOCALHOST']) {
      const res = await f.app.inject({ method: 'GET', url: `/v1/objects/${user.id}`, headers: { host } });
      assert.equal(res.statusCode, 200, `${host}: ${res.body}`);
    }
  } finally {
    await f.cleanup();
  }
});

test('with an auth file (tokens) or without a listening address (library use), the Host is not checked', async () => {
  const token = 'sk_host-check-test-token-0123456789';
  const withTokens = await makeApp({ app: { hosts: ['127.0.0.1'], tokens: new TokenSet(undefined, [{ digest: hashToken(token), scope: 'read' }]) } });
  const library = await makeApp();
  try {
    const res = await withTokens.app.inject({ method: 'GET', url: '/v1/topology', headers: { host: 'shardkit.internal.example', authorization: `Bearer ${token}` } });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await library.app.inject({ method: 'GET', url: '/v1/topology', headers: { host: 'shardkit.internal.example' } })).statusCode, 200);
  } finally {
    await withTokens.cleanup();
    await library.cleanup();
  }
});

test('Host header parsing: port and IPv6 brackets stripped; anything else is unparseable', () => {
  assert.equal(hostName('Example.COM:80'), 'example.com');
  assert.equal(hostName('[::1]:7070'), '::1');
  assert.equal(hostName('[::1]'), '::1');
  assert.equal(hostName('[zz]:1'), undefined);
  assert.equal(hostName('a@b'), undefined);
  assert.equal(hostName('localhost.'), 'localhost');
});
