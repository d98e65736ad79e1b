/**
 * Issue #33 (observability): the wide-column engine's and the ticket client's metrics on the
 * service's /metrics, scraped after real calls: a RocksDB store in a temp dir, and ticket
 * servers nobody listens on (the all-down case; test/tickets/ticket-servers.test.ts scrapes
 * after IDs from real MariaDB ticket servers).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { TicketClient } from '../../src/index.js';
import { ticketsRoutes } from '../../src/http/routes/tickets-routes.js';
import { widecolumnRoutes } from '../../src/http/routes/widecolumn-routes.js';
import { openStore, tempDir } from '../widecolumn/helpers.js';
import { makeApp } from './http-fixture.js';
import { scrapeValue } from './scrape.js';

test('/metrics: wide-column calls per operation (latency, rows, errors), batches counted by their rows', async () => {
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  const f = await makeApp({ plugins: [widecolumnRoutes(store, { exportDir: join(tmp.dir, 'exports') })] });
  try {
    await store.putDataset('b', { maxVersions: 2 });
    const put = await f.app.inject({ method: 'POST', url: '/v1/datasets/b/rows:batchPut', payload: { rows: [
      { row: 'r1', items: [{ column: 'a', value: '1' }] },
      { row: 'r2', items: [{ column: 'a', value: '2' }] },
    ] } });
    assert.equal(put.statusCode, 200);
    assert.equal((await f.app.inject({ method: 'GET', url: '/v1/datasets/b/rows/r1' })).statusCode, 200);
    assert.equal((await f.app.inject({ method: 'POST', url: '/v1/datasets/b/rows:batchGet', payload: { requests: [{ row: 'r1' }, { row: 'r2' }, { row: 'none' }] } })).statusCode, 200);
    // Refused by the engine (an empty column name): a failed put.
    const bad = await f.app.inject({ method: 'PUT', url: '/v1/datasets/b/rows/r3', payload: { items: [{ column: '', value: 'x' }] } });
    assert.equal(bad.statusCode, 400);

    const body = (await f.app.inject({ method: 'GET', url: '/metrics' })).body;
    const v = (name: string, op: string) => scrapeValue(body, name, { engine: 'rocksdb', op });
    assert.equal(v('shardkit_widecolumn_rows_total', 'get'), 4, 'one row, then a batch of three');
    assert.equal(v('shardkit_widecolumn_rows_total', 'put'), 3, 'a batch of two, then one refused');
    assert.equal(v('shardkit_widecolumn_duration_seconds_count', 'get'), 2, 'a batch is one call');
    assert.equal(v('shardkit_widecolumn_duration_seconds_count', 'put'), 2);
    assert.equal(v('shardkit_widecolumn_errors_total', 'put'), 1);
    assert.equal(v('shardkit_widecolumn_errors_total', 'get'), 0);
    assert.equal(v('shardkit_widecolumn_duration_seconds_count', 'delete'), 0);
  } finally {
    await f.cleanup();
    await store.close();
    tmp.cleanup();
  }
});

test('/metrics: ticket servers down show up 0 with their failed round trips; nothing issued', async () => {
  const tmp = tempDir('sk-tkmetrics-');
  const client = new TicketClient({ servers: [{ name: 't1', socket: join(tmp.dir, 'none1.sock') }, { name: 't2', socket: join(tmp.dir, 'none2.sock') }], sequences: ['photos'] });
  const f = await makeApp({ plugins: [ticketsRoutes(client)] });
  try {
    assert.equal((await f.app.inject({ method: 'POST', url: '/v1/tickets/photos', payload: {} })).statusCode, 503);
    const body = (await f.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.equal(scrapeValue(body, 'shardkit_tickets_issued_total', { sequence: 'photos' }), 0);
    for (const server of ['t1', 't2']) {
      assert.equal(scrapeValue(body, 'shardkit_ticket_server_up', { server }), 0, server);
      assert.ok(scrapeValue(body, 'shardkit_ticket_server_errors_total', { server }) >= 1, server);
      assert.equal(scrapeValue(body, 'shardkit_ticket_server_duration_seconds_count', { server }), scrapeValue(body, 'shardkit_ticket_server_errors_total', { server }));
    }
  } finally {
    await f.cleanup();
    await client.close();
    tmp.cleanup();
  }
});
