/**
 * Verify hashes the rows where they are (src/moves/mariadb/chunk-digest.ts, #29: reading both
 * sides' rows into the mover took 19-27 s of a 1M-row move). On a real MariaDB: the servers'
 * digests find every kind of difference the row comparison finds, and report the same chunks,
 * key for key: a changed value, NULL against '', values that join alike ('a#b','c' / 'a','b#c'),
 * a missing row, rows past the source's last key, a composite key; a slave's rows applied after
 * the last chunk; tables whose columns differ are compared row by row.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { devHostAdmin } from '../../src/ops/failover/host-admin.js';
import { compareRows, compareTable } from '../../src/moves/mariadb/verify.js';
import type { Conn } from '../../src/moves/mariadb/names.js';

describe('verify by server-side chunk digests (MariaDB)', () => {
  let fx: Awaited<ReturnType<typeof startTestCluster>>;
  let c: Conn;
  before(async () => {
    fx = await startTestCluster({ pairs: 1, shards: 2, prefix: 'shardkit-digest-' });
    c = await devHostAdmin(fx.cluster).connect('MySQL001A');
    for (const d of ['dg_a', 'dg_b']) {
      await c.query(`CREATE DATABASE ${d}`);
      await c.query(`CREATE TABLE ${d}.t (id BIGINT PRIMARY KEY, x VARCHAR(20) NULL, y VARCHAR(20) NULL, b VARBINARY(8) NULL, n DOUBLE NULL) DEFAULT CHARSET latin1`);
      await c.query(`CREATE TABLE ${d}.c (k1 INT, k2 VARCHAR(10), v TEXT CHARACTER SET utf8mb4, PRIMARY KEY (k1, k2))`);
    }
    const rows = Array.from({ length: 2500 }, (_, i) => [i + 1, i % 7 === 0 ? null : `x${i}#`, `y${i}`, i % 5 === 0 ? null : Buffer.from([i % 256, 0, 35]), i / 3]);
    for (const d of ['dg_a', 'dg_b']) {
      for (let i = 0; i < rows.length; i += 500) await c.query(`INSERT INTO ${d}.t VALUES ?`, [rows.slice(i, i + 500)]);
      await c.query(`INSERT INTO ${d}.c VALUES ?`, [Array.from({ length: 1200 }, (_, i) => [i % 3, `k${i}`, `v ${i} ✓`])]);
    }
  });
  after(async () => {
    await c?.end();
    await fx?.stop();
  });

  let digests = 0;
  /** The connection, counting the digest statements sent on it. */
  const counted = () => ({ query: (...args: unknown[]) => {
    if (/SHA1\(/.test(String((args[0] as { sql?: string }).sql ?? args[0]))) digests++;
    return (c.query as (...x: unknown[]) => unknown)(...args);
  } }) as unknown as Conn;
  const both = async (table: string) => {
    const a = { c: counted(), db: 'dg_a' };
    const b = { c: counted(), db: 'dg_b' };
    const before = digests;
    const digest = await compareTable(3, table, a, b);
    assert.ok(digests > before, 'the servers hashed the rows');
    const after = digests;
    const rows = await compareRows(3, table, a, b);
    assert.equal(digests, after, 'the row comparison reads rows');
    return { digest, rows };
  };

  test('equal tables: no mismatch, the same chunks, rows and last key as the row comparison', async () => {
    const { digest, rows } = await both('t');
    assert.deepEqual(digest, rows);
    assert.deepEqual([digest.rows, digest.chunks, digest.mismatches, digest.last?.map(String)], [2500, 3, [], ['2500']]);
    const composite = await both('c');
    assert.deepEqual(composite.digest, composite.rows);
    assert.equal(composite.digest.rows, 1200);
  });

  test('every kind of difference is found, in the chunks the row comparison names', async () => {
    await c.query("UPDATE dg_b.t SET y = 'changed' WHERE id = 1500");
    await c.query("UPDATE dg_a.t SET x = NULL WHERE id = 10");
    await c.query("UPDATE dg_b.t SET x = '' WHERE id = 10");
    await c.query("UPDATE dg_a.t SET x = 'a#b', y = 'c' WHERE id = 2000");
    await c.query("UPDATE dg_b.t SET x = 'a', y = 'b#c' WHERE id = 2000");
    await c.query('DELETE FROM dg_b.t WHERE id = 2400');
    await c.query("INSERT INTO dg_b.t (id, x) VALUES (2600, 'past'), (2601, 'the end')");
    await c.query("UPDATE dg_b.c SET v = 'other' WHERE k1 = 2 AND k2 = 'k1100'");
    const { digest, rows } = await both('t');
    assert.deepEqual(digest, rows);
    assert.deepEqual(digest.mismatches.map((m) => [m.fromKey, m.toKey, m.sourceRows, m.targetRows]), [
      ['-inf', '1000', 1000, 1000],
      ['1001', '2000', 1000, 1000],
      ['2001', '2500', 500, 499],
      ['2500', '+inf', 0, 2],
    ]);
    const composite = await both('c');
    assert.deepEqual(composite.digest, composite.rows);
    assert.equal(composite.digest.mismatches.length, 1);
    // Only the tail past a key (as the check under the freeze reads it): the chunks after it.
    const tail = await compareTable(3, 't', { c, db: 'dg_a' }, { c, db: 'dg_b' }, undefined, 't', undefined, false, [2000]);
    assert.deepEqual(tail.mismatches.map((m) => [m.fromKey, m.toKey]), [['2001', '2500'], ['2500', '+inf']]);
    assert.equal(tail.rows, 500);
  });

  test('a target that fails in the middle of the comparison fails it (the digest running beside the source\'s next read)', async () => {
    let n = 0;
    const failing = { query: (...args: unknown[]) => {
      if (/SHA1\(/.test(String((args[0] as { sql?: string }).sql ?? args[0])) && ++n === 2) return Promise.reject(new Error('target connection lost'));
      return (c.query as (...x: unknown[]) => unknown)(...args);
    } } as unknown as Conn;
    await assert.rejects(compareTable(3, 't', { c, db: 'dg_a' }, { c: failing, db: 'dg_b' }), /target connection lost/);
  });

  test('a slave compared while it applies: its rows past the last chunk that the master holds now are not differences', async () => {
    for (const d of ['dg_a', 'dg_b']) {
      await c.query(`CREATE TABLE ${d}.h (id BIGINT PRIMARY KEY, v VARCHAR(20))`);
      await c.query(`INSERT INTO ${d}.h VALUES ?`, [Array.from({ length: 2500 }, (_, i) => [i + 1, `v${i}`])]);
    }
    // The master writes after its last chunk was read, the slave applies it before its rows past that chunk are read.
    let syncs = 0;
    const sync = async () => {
      if (++syncs === 4) for (const d of ['dg_a', 'dg_b']) await c.query(`INSERT INTO ${d}.h VALUES (3000, 'late')`);
    };
    const before = digests;
    const applied = await compareTable(3, 'h', { c: counted(), db: 'dg_a' }, { c: counted(), db: 'dg_b' }, sync, 'h', undefined, true);
    assert.ok(digests > before, 'the chunks were hashed by the servers');
    assert.deepEqual([applied.rows, applied.mismatches], [2500, []]);
    // A row on the slave only is still a difference; without bAhead every row past the chunks is.
    await c.query("INSERT INTO dg_b.h VALUES (3001, 'slave only')");
    const slaveOnly = await compareTable(3, 'h', { c, db: 'dg_a' }, { c, db: 'dg_b' }, async () => undefined, 'h', undefined, true);
    assert.deepEqual(slaveOnly.mismatches.map((m) => [m.fromKey, m.toKey, m.targetRows]), [['3000', '+inf', 1]]);
    syncs = 0;
    await c.query('DELETE FROM dg_a.h WHERE id >= 3000');
    await c.query('DELETE FROM dg_b.h WHERE id >= 3000');
    const strict = await compareTable(3, 'h', { c, db: 'dg_a' }, { c, db: 'dg_b' }, sync, 'h');
    assert.deepEqual(strict.mismatches.map((m) => [m.fromKey, m.toKey, m.targetRows]), [['2500', '+inf', 1]]);
  });

  test('a table whose columns differ on the target is compared row by row: every chunk differs', async () => {
    await c.query('ALTER TABLE dg_b.t ADD COLUMN extra INT NULL');
    const before = digests;
    const r = await compareTable(3, 't', { c: counted(), db: 'dg_a' }, { c: counted(), db: 'dg_b' });
    assert.equal(digests, before);
    assert.deepEqual(r.mismatches.map((m) => m.toKey), ['1000', '2000', '2500', '+inf']);
  });
});
