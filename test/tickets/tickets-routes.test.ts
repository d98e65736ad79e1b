import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TicketClient } from '../../src/index.js';
import { ticketsRoutes } from '../../src/http/routes/tickets-routes.js';
import { assertError, makeApp, type AppFixture } from '../http/http-fixture.js';

// Ticket servers that do not exist (sockets nobody listens on): every path that must not reach a
// server, and the all-down answer, without starting MariaDB.
const dir = mkdtempSync(join(tmpdir(), 'sk-tkroutes-'));
const client = new TicketClient({
  servers: [{ name: 't1', socket: join(dir, 'none1.sock') }, { name: 't2', socket: join(dir, 'none2.sock') }],
  sequences: ['photos', 'accounts'],
  maxBatch: 500,
});
let f: AppFixture;

before(async () => {
  f = await makeApp({ plugins: [ticketsRoutes(client)] });
});

after(async () => {
  await f.cleanup();
  await client.close();
  rmSync(dir, { recursive: true, force: true });
});

test('unknown sequence is 404 UNKNOWN_SEQUENCE', async () => {
  for (const url of ['/v1/tickets/nope', '/v1/tickets/nope?count=3', `/v1/tickets/${'x'.repeat(150)}`, '/v1/tickets/Photos']) {
    assertError(await f.app.inject({ method: 'POST', url, payload: {} }), 404, 'UNKNOWN_SEQUENCE', url);
  }
});

test('a count that is not an integer in 1..maxBatch is 400 INVALID_ARGUMENT', async () => {
  for (const count of ['0', '-1', 'abc', '1.5', '501', '1e3', '99999999999999999999']) {
    assertError(await f.app.inject({ method: 'POST', url: `/v1/tickets/photos?count=${count}`, payload: {} }), 400, 'INVALID_ARGUMENT', count);
  }
});

test('all ticket servers down is 503 TICKET_SERVERS_UNAVAILABLE naming them; the status route shows them down', async () => {
  for (const url of ['/v1/tickets/photos', '/v1/tickets/accounts?count=20']) {
    const res = await f.app.inject({ method: 'POST', url, payload: {} });
    assertError(res, 503, 'TICKET_SERVERS_UNAVAILABLE', url);
    assert.match(res.json().error.message, /t1: .*t2: |t2: .*t1: /);
  }
  const status = await f.app.inject({ method: 'GET', url: '/v1/tickets' });
  assert.equal(status.statusCode, 200);
  assert.deepEqual(status.json(), {
    mode: 'classic',
    sequences: ['photos', 'accounts'],
    servers: status.json().servers.map((s: { name: string; lastError?: string }) => ({ name: s.name, up: false, lastError: s.lastError })),
  });
  assert.deepEqual(status.json().servers.map((s: { name: string }) => s.name), ['t1', 't2']);
});

test('the routes are in the OpenAPI document', async () => {
  const res = await f.app.inject({ method: 'GET', url: '/docs/json' });
  const doc = res.json() as { paths: Record<string, Record<string, unknown>> };
  assert.ok(doc.paths['/v1/tickets/{sequence}']?.post);
  assert.ok(doc.paths['/v1/tickets']?.get);
});
