/**
 * The move's copy as tab-separated text (src/moves/mariadb/tsv-copy.ts, #29: the stock pipe's
 * INSERT text, parsed by client and server, made the move slower than `mariadb-dump | mariadb`).
 * On real MariaDB servers: every value survives byte for byte into both targets (NULL against
 * the word NULL and `\N`, tabs, newlines, backslashes, NUL and every byte in a BLOB, 4-byte
 * UTF-8, a row holding the boundary's prefix, fractional times, floats, an id 0 in an
 * AUTO_INCREMENT column, an invisible column, a generated one), the rows are counted exactly,
 * and the position returned is the source's at the snapshot. Tables text cannot carry (a
 * trigger, a BIT column) send the copy the mariadb-dump way, whose result is the same.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { devHostAdmin, type HostAdmin } from '../../src/ops/failover/host-admin.js';
import { tsvCopy } from '../../src/moves/mariadb/tsv-copy.js';
import { compareRows } from '../../src/moves/mariadb/verify.js';
import type { Conn } from '../../src/moves/mariadb/names.js';
import { isShardKitError } from '../../src/errors.js';
import { withFakeBinaries } from './fake-binaries.js';

const SRC = 'MySQL001A';
const TARGETS = ['MySQL002A', 'MySQL002B'];

describe('the move copy as text: schema by mariadb-dump, rows by LOAD DATA (MariaDB)', () => {
  let fx: Awaited<ReturnType<typeof startTestCluster>>;
  let admin: HostAdmin;
  let src: Conn;
  let dsts: Conn[];
  before(async () => {
    fx = await startTestCluster({ pairs: 2, shards: 2, prefix: 'shardkit-tsvcopy-' });
    admin = devHostAdmin(fx.cluster);
    src = await admin.connect(SRC);
    dsts = await Promise.all(TARGETS.map((t) => admin.connect(t)));
    // The source writes its TIMESTAMPs in a zone of its own; both sides are read in it.
    for (const d of dsts) await d.query("SET SESSION time_zone = '+05:30'");
    await src.query("SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO', time_zone = '+05:30'");
    await src.query('CREATE DATABASE tc_a');
    await src.query('CREATE DATABASE tc_b');
    await src.query(`CREATE TABLE tc_a.h (
      id BIGINT UNSIGNED PRIMARY KEY AUTO_INCREMENT, s VARCHAR(200) CHARACTER SET utf8mb4 NULL, t MEDIUMTEXT CHARACTER SET utf8mb4 NOT NULL,
      b BLOB NULL, d DECIMAL(30,10) NULL, f DOUBLE NULL, fl FLOAT NULL, dt DATETIME(6) NULL, ts TIMESTAMP(3) NULL DEFAULT NULL,
      e ENUM('a','b','c d') NULL, st SET('x','y') NULL, j JSON NULL, g VARCHAR(300) AS (CONCAT(LEFT(t, 20), '!')) VIRTUAL,
      iv INT INVISIBLE DEFAULT 7, z INT NOT NULL DEFAULT 0)`);
    await src.query('CREATE TABLE tc_a.empty (k INT PRIMARY KEY)');
    await src.query('CREATE TABLE tc_b.many (k INT PRIMARY KEY, v VARCHAR(40) NOT NULL)');
    await src.query('CREATE TABLE tc_b.skipped (k INT PRIMARY KEY)');
    await src.query('INSERT INTO tc_b.skipped VALUES (1)');
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const hostile = [null, 'NULL', '\\N', '', 'a\tb\nc\\d\0e\rf', '🦄 é ✓', '~shardkit-copy-', '\\', '\n', '\t'];
    const rows = hostile.map((s, i) => [i, s, `${'line\n'.repeat(i * 3)}${s ?? ''}`, i % 3 === 0 ? null : i % 3 === 1 ? all : Buffer.alloc(0),
      i % 4 === 0 ? null : '-12345678901234567890.0123456789', [null, 0.1, 1e308, -0, 5e-324, 123.456][i % 6], i % 2 === 0 ? 0.1 : null,
      i % 5 === 0 ? null : '2026-11-29 12:00:00.123456', i % 5 === 1 ? null : '2038-01-19 03:14:07.999', [null, 'a', 'c d'][i % 3], [null, 'x,y', ''][i % 3],
      i % 2 === 0 ? null : JSON.stringify({ k: s, n: [1, 2] }), i % 7]);
    await src.query('INSERT INTO tc_a.h (id, s, t, b, d, f, fl, dt, ts, e, st, j, z) VALUES ?', [rows]);
    await src.query('UPDATE tc_a.h SET iv = id * 11');
    await src.query('INSERT INTO tc_a.h (t) VALUES (REPEAT(\'big\\tline\\n\', 30000))');
    for (let i = 0; i < 20_000; i += 5000) await src.query('INSERT INTO tc_b.many VALUES ?', [Array.from({ length: 5000 }, (_, k) => [i + k, `v${i + k}\t${k % 2 === 0 ? '\\' : ''}`])]);
  });
  after(async () => {
    for (const c of [src, ...(dsts ?? [])]) await c?.end();
    await fx?.stop();
  });

  test('every value arrives byte for byte in both targets; rows counted exactly; the position is the source\'s', async () => {
    const told: number[] = [];
    const [[{ pos: before }]] = await src.query('SELECT @@GLOBAL.gtid_binlog_pos AS pos') as unknown as [[{ pos: string }]];
    const position = await tsvCopy(admin, SRC, TARGETS, ['tc_a', 'tc_b'], 2, { ignoreTables: ['tc_b.skipped'], onBytes: (_b, rows) => told.push(rows) });
    assert.equal(position, before);
    assert.equal(told.at(-1), 10 + 1 + 20_000, 'the final count is every row copied');
    for (const dst of dsts) {
      for (const [db, t] of [['tc_a', 'h'], ['tc_a', 'empty'], ['tc_b', 'many']] as const) {
        const report = await compareRows(1000, t, { c: src, db }, { c: dst, db });
        assert.deepEqual(report.mismatches, [], `${db}.${t}`);
      }
      // Byte for byte, the invisible column too (the comparison above reads what SELECT * shows).
      const sel = 'SELECT id, s IS NULL AS sn, HEX(s) AS s, HEX(t) AS t, HEX(b) AS b, d, f, fl, dt, ts, e, st, j, g, iv, z FROM tc_a.h ORDER BY id';
      const [want] = await src.query(sel);
      const [got] = await dst.query(sel);
      assert.deepEqual(got, want);
      assert.equal(String((want as Array<{ id: unknown }>)[0]!.id), '0', 'id 0 of an AUTO_INCREMENT column stays 0');
      const [[sk]] = await dst.query("SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'tc_b' AND TABLE_NAME = 'skipped'") as unknown as [[{ n: number }]];
      assert.equal(Number(sk.n), 0, 'an ignored table is neither created nor filled');
    }
    const [[binlogged]] = await dsts[0]!.query('SELECT @@GLOBAL.gtid_binlog_pos AS pos') as unknown as [[{ pos: string }]];
    assert.ok(!String(binlogged.pos).includes('-1-'), `the load wrote nothing to the target's binlog (${binlogged.pos})`);
  });

  test('one stream takes no lock: its snapshot gives the position, and a write after it is not in the copy', async () => {
    const lock = { n: 0 };
    const counting = { ...admin, connect: async (h: string) => {
      const c = await admin.connect(h);
      const query = c.query.bind(c);
      (c as unknown as { query: unknown }).query = (...a: Parameters<Conn['query']>) => {
        if (/FLUSH TABLES WITH READ LOCK/.test(String(a[0]))) lock.n++;
        return query(...a);
      };
      return c;
    } };
    const [[{ pos: before }]] = await src.query('SELECT @@GLOBAL.gtid_binlog_pos AS pos') as unknown as [[{ pos: string }]];
    const position = await tsvCopy(counting, SRC, TARGETS, ['tc_b'], 1, { ignoreTables: ['tc_b.skipped'], onSnapshot: () => void src.query('INSERT INTO tc_b.many VALUES (-1, \'after\')') });
    assert.equal(lock.n, 0, 'no FLUSH TABLES WITH READ LOCK');
    assert.equal(position, before);
    for (const dst of dsts) {
      const [[n]] = await dst.query('SELECT COUNT(*) AS n, MIN(k) AS lo FROM tc_b.many') as unknown as [[{ n: number; lo: number }]];
      assert.deepEqual([Number(n.n), Number(n.lo)], [20_000, 0], 'the rows of the snapshot, not the write after it');
    }
    await src.query('DELETE FROM tc_b.many WHERE k = -1');
  });

  test('under the lock only the snapshots open: every session was started and set up before it, nothing is forked until UNLOCK TABLES', async () => {
    const children = () => execFileSync('ps', ['-o', 'args=', '--ppid', String(process.pid)], { encoding: 'utf8' }).split('\n').filter((l) => l.trim() !== '' && !l.startsWith('ps '));
    let atLock: string[] | undefined;
    let atUnlock: string[] | undefined;
    let connected = 0;
    const [ids] = await src.query('SELECT ID AS id FROM information_schema.PROCESSLIST');
    const before = new Set((ids as Array<{ id: number }>).map((r) => Number(r.id)));
    const watched = { ...admin, connect: async (h: string) => {
      const c = await admin.connect(h);
      const query = c.query.bind(c);
      (c as unknown as { query: unknown }).query = async (...a: Parameters<Conn['query']>) => {
        if (a[0] === 'FLUSH TABLES WITH READ LOCK') {
          atLock = children();
          const [ids] = await src.query('SELECT ID AS id FROM information_schema.PROCESSLIST');
          connected = (ids as Array<{ id: number }>).filter((r) => !before.has(Number(r.id))).length;
        }
        if (a[0] === 'UNLOCK TABLES' && atUnlock === undefined) atUnlock = children();
        return query(...a);
      };
      return c;
    } };
    await tsvCopy(watched, SRC, TARGETS, ['tc_a', 'tc_b'], 2, { ignoreTables: ['tc_b.skipped'] });
    assert.equal(atLock!.filter((l) => /^mariadb .*--batch/.test(l)).length, 2, `both sessions run when the lock is asked for: ${atLock!.join(' | ')}`);
    assert.ok(connected >= 3, `the lock's connection and both sessions are on the server when the lock is asked for (${connected} new connections)`);
    assert.deepEqual(atUnlock, atLock, 'no process started under the lock (the schema dumps come after it)');
  });

  test('snapshots that never open under the lock (a stalled source session): the copy stops at its lock budget, the lock is released, the source takes writes again', { timeout: 60_000 }, async () => {
    // A `mariadb` that sets up and answers the ready marker, then never answers the snapshot's.
    const stalled = [
      'while IFS= read -r line; do',
      '  case "$line" in',
      `    "SELECT '"*"ready';") m=\${line#SELECT \\'}; printf '%s\\n' "\${m%\\';}";;`,
      '  esac',
      'done',
      '',
    ].join('\n');
    await withFakeBinaries({ mariadb: stalled }, async () => {
      await assert.rejects(
        tsvCopy(admin, SRC, TARGETS, ['tc_a', 'tc_b'], 2, { ignoreTables: ['tc_b.skipped'], readLockMaxMs: 1500 }),
        (e) => isShardKitError(e, 'SHARD_UNAVAILABLE') && /did not open within 1500 ms of FLUSH TABLES WITH READ LOCK/.test(e.message),
      );
    });
    // A read lock left behind would make this write wait for it, then fail.
    const w = await admin.connect(SRC);
    try {
      await w.query('SET SESSION lock_wait_timeout = 5');
      await w.query("INSERT INTO tc_b.many VALUES (-2, 'after')");
      await w.query('DELETE FROM tc_b.many WHERE k = -2');
    } finally {
      await w.end();
    }
  });

  test('a table with a trigger, or a BIT column: the copy goes the mariadb-dump way, with the same result', async () => {
    await src.query('CREATE DATABASE tc_c');
    await src.query('CREATE TABLE tc_c.t (k INT PRIMARY KEY, flags BIT(5) NOT NULL, v VARCHAR(10) NULL)');
    await src.query('CREATE TABLE tc_c.log (n INT AUTO_INCREMENT PRIMARY KEY, k INT)');
    await src.query('CREATE TRIGGER tc_c.t_ins AFTER INSERT ON tc_c.t FOR EACH ROW INSERT INTO tc_c.log (k) VALUES (NEW.k)');
    await src.query('INSERT INTO tc_c.t VALUES (1, b\'10101\', NULL), (2, b\'00000\', \'NULL\')');
    for (const d of dsts) await d.query('SET SESSION sql_log_bin = 0').then(() => d.query('DROP DATABASE IF EXISTS tc_c'));
    await tsvCopy(admin, SRC, TARGETS, ['tc_c'], 4, {});
    for (const dst of dsts) {
      const [got] = await dst.query('SELECT k, HEX(flags) AS f, v, v IS NULL AS vn FROM tc_c.t ORDER BY k');
      assert.deepEqual(got, [{ k: 1, f: '15', v: null, vn: 1 }, { k: 2, f: '0', v: 'NULL', vn: 0 }]);
      const [log] = await dst.query('SELECT k FROM tc_c.log ORDER BY n');
      assert.deepEqual(log, [{ k: 1 }, { k: 2 }], 'the trigger did not fire on the load: the log is the source\'s');
      const [trig] = await dst.query("SELECT TRIGGER_NAME AS t FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'tc_c'");
      assert.deepEqual(trig, [{ t: 't_ins' }], 'the trigger came along');
    }
  });

  test('a source that fails mid-copy (its table dropped under it) fails the copy with the reason, and nothing hangs', async () => {
    await src.query('CREATE DATABASE tc_d');
    await src.query('CREATE TABLE tc_d.t (k INT PRIMARY KEY)');
    await src.query('INSERT INTO tc_d.t VALUES (1)');
    // Dropped once the catalogue was read (the first connection, closed after it): the source session's SELECT fails.
    let first = true;
    const copy = tsvCopy({ ...admin, connect: async (h: string) => {
      const c = await admin.connect(h);
      if (first) {
        first = false;
        const end = c.end.bind(c);
        (c as unknown as { end: unknown }).end = async () => {
          await src.query('DROP TABLE tc_d.t');
          return end();
        };
      }
      return c;
    } }, SRC, TARGETS, ['tc_d'], 1, {});
    await assert.rejects(copy, (e: Error & { code?: string }) => e.code === 'INTERNAL' && /copying MySQL001A to MySQL002A and MySQL002B failed: .*tc_d/.test(e.message));
  });
});
