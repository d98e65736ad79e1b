import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import type mysql from 'mysql2/promise';
import { MariadbInstance } from '../../src/ops/mariadb/mariadb-instance.js';
import { MysqlHostPool } from '../../src/storage/mysql/mysql-host-pool.js';
import { mapMysqlError } from '../../src/storage/mysql/mysql-errors.js';

// One real MariaDB server for the file: what a timed-out statement leaves behind on the server.
let dir: string;
let server: MariadbInstance;
let admin: mysql.Connection;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'shardkit-qt-'));
  server = await MariadbInstance.create({ name: 'QT', dir: join(dir, 's'), serverId: 1 });
  await server.init();
  await server.start();
  admin = await server.connect();
});

after(async () => {
  await admin?.end();
  await server?.stop().catch(() => server.kill());
  rmSync(dir, { recursive: true, force: true });
});

async function sleepersOnServer(): Promise<number> {
  const [rows] = await admin.query("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(30)%'");
  return Number((rows as Array<{ n: number | string }>)[0]!.n);
}

test('a statement that outlives the query timeout fails as SHARD_UNAVAILABLE and stops running on the server too', async () => {
  const pool = new MysqlHostPool('QT', { socket: server.socket, user: userInfo().username, poolSize: 2, connectTimeoutMs: 2000, queryTimeoutMs: 400 });
  try {
    const started = Date.now();
    const err = await pool.query('SELECT SLEEP(30)').then(() => null, (e: unknown) => e);
    assert.ok(err, 'a 30 s statement under a 400 ms timeout must fail');
    assert.ok(Date.now() - started < 20_000, 'the caller is not kept waiting for the 30 s statement');
    assert.equal(mapMysqlError(err, { host: 'QT' }).code, 'SHARD_UNAVAILABLE');
    // Without a server-side limit the abandoned SLEEP(30) would still be in the process list.
    // Only a bound for a server that never stops it: the loop ends as soon as the statement is gone.
    const deadline = Date.now() + 60_000;
    let left = await sleepersOnServer();
    while (left > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      left = await sleepersOnServer();
    }
    assert.equal(left, 0, 'the server stopped the timed-out statement');
    // The host is not marked down by one slow statement: the next query works.
    const rows = await pool.query<Array<{ one: number }>>('SELECT 1 AS one');
    assert.equal(Number(rows[0]!.one), 1);
    // When the server's limit fires before our timer (a loaded client), MariaDB answers errno
    // 1969, which mysql2 cannot name: still SHARD_UNAVAILABLE, not INTERNAL.
    // A pool with a long client timeout, so only the server's limit can stop the statement
    // whatever the machine's load (with the 400 ms pool, a slow answer would race the server).
    const patient = new MysqlHostPool('QT', { socket: server.socket, user: userInfo().username, poolSize: 1, connectTimeoutMs: 20_000, queryTimeoutMs: 60_000 });
    const serverSide = await patient.query('SET STATEMENT max_statement_time = 0.05 FOR SELECT SLEEP(2)').then(() => null, (e: unknown) => e).finally(() => patient.close());
    assert.equal((serverSide as { errno?: number } | null)?.errno, 1969, 'the server stopped it');
    assert.equal(mapMysqlError(serverSide, { host: 'QT' }).code, 'SHARD_UNAVAILABLE');
  } finally {
    await pool.close();
  }
});
