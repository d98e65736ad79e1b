import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { devUp, devClusterDown } from '../src/ops/dev-cluster.js';
import { compareTable } from '../src/moves/mariadb/verify.js';
const dir = mkdtempSync(join(tmpdir(), 'shardkit-abl-dg-'));
const { cluster } = await devUp({ dir, pairs: 1, shards: 2 });
try {
  const inst = cluster.instance('MySQL001A');
  const c = await mysql.createConnection({ socketPath: inst.socket, user: 'root', supportBigNumbers: true, bigNumberStrings: true, dateStrings: true, timezone: 'Z' });
  const N = Number(process.env.N ?? 100000);
  for (const d of ['ga', 'gb']) {
    await c.query(`CREATE DATABASE ${d}`);
    await c.query(`CREATE TABLE ${d}.pins (local_id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, data MEDIUMTEXT NOT NULL, ts TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)) DEFAULT CHARSET utf8mb4`);
  }
  const rows = Array.from({ length: 5000 }, (_, i) => [JSON.stringify({ title: `pin ${i}`, pad: 'x'.repeat(260) })]);
  for (let i = 0; i < N; i += 5000) await c.query('INSERT INTO ga.pins (data) VALUES ?', [rows]);
  await c.query('INSERT INTO gb.pins SELECT * FROM ga.pins');
  await c.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
  for (const [name, bAhead] of (process.env.CMP ? [['digest', false], ['rows', true]] : []) as Array<[string, boolean]>) {
    const t0 = performance.now(); const cpu = process.cpuUsage();
    const acc: Record<string, number> = {};
    const cc = { query: async (...args: any[]) => { const sql = String(args[0]?.sql ?? args[0]); const kind = sql.includes('LIMIT 1000') ? 'src-derived' : sql.includes('SHA1') ? 'digest' : sql.includes('OFFSET') ? 'offset' : sql.includes('information_schema') ? 'schema' : sql.slice(0, 30); const t = performance.now(); try { return await (c.query as any)(...args); } finally { acc[kind] = (acc[kind] ?? 0) + performance.now() - t; } } } as any;
    const r = await compareTable(0, 'pins', { c: cc, db: 'ga' }, { c: cc, db: 'gb' }, undefined, 'pins', undefined, bAhead);
    console.log(Object.fromEntries(Object.entries(acc).map(([k, v]) => [k, Math.round(v)])));
    const u = process.cpuUsage(cpu);
    console.log(name, 'rows', r.rows, 'chunks', r.chunks, 'mism', r.mismatches.length, 'ms', Math.round(performance.now() - t0), 'node cpu ms', Math.round((u.user + u.system) / 1000));
  }
  // single statements
  for (const sql of [
    `SELECT COUNT(*) AS n, BIT_XOR(CAST(CONV(LEFT(SHA1(CONCAT_WS('#', ISNULL(local_id), LENGTH(local_id), CAST(local_id AS BINARY), ISNULL(data), LENGTH(data), CAST(data AS BINARY), ISNULL(ts), LENGTH(ts), CAST(ts AS BINARY))), 16), 16, 10) AS UNSIGNED)) AS x FROM ga.pins WHERE local_id > '50000' AND local_id <= '51000'`,
    `SELECT COUNT(*) AS n, BIT_XOR(CAST(CONV(LEFT(SHA1(CONCAT_WS('#', ISNULL(local_id), LENGTH(local_id), local_id, ISNULL(data), LENGTH(data), data, ISNULL(ts), LENGTH(ts), ts)), 16), 16, 10) AS UNSIGNED)) AS x FROM ga.pins WHERE local_id > '50000' AND local_id <= '51000'`,
    `SELECT COUNT(*) AS n, BIT_XOR(CAST(CONV(LEFT(SHA1(CONCAT_WS('#', ISNULL(local_id), LENGTH(local_id), CAST(local_id AS BINARY), ISNULL(data), LENGTH(data), CAST(data AS BINARY), ISNULL(ts), LENGTH(ts), CAST(ts AS BINARY))), 16), 16, 10) AS UNSIGNED)) AS x, BIT_XOR(CAST(CONV(SUBSTRING(SHA1(CONCAT_WS('#', ISNULL(local_id), LENGTH(local_id), CAST(local_id AS BINARY), ISNULL(data), LENGTH(data), CAST(data AS BINARY), ISNULL(ts), LENGTH(ts), CAST(ts AS BINARY))), 17, 16), 16, 10) AS UNSIGNED)) AS y FROM ga.pins WHERE local_id > '50000' AND local_id <= '51000'`,
    `SELECT COUNT(*) AS n, BIT_XOR(CAST(CONV(LEFT(h, 16), 16, 10) AS UNSIGNED)) AS x, BIT_XOR(CAST(CONV(SUBSTRING(h, 17, 16), 16, 10) AS UNSIGNED)) AS y FROM (SELECT SHA1(CONCAT_WS('#', ISNULL(local_id), LENGTH(local_id), CAST(local_id AS BINARY), ISNULL(data), LENGTH(data), CAST(data AS BINARY), ISNULL(ts), LENGTH(ts), CAST(ts AS BINARY))) AS h FROM ga.pins WHERE local_id > '50000' AND local_id <= '51000') d`,
    `SELECT COUNT(*) AS n, BIT_XOR(CAST(CONV(LEFT(SHA1(CONCAT(data)), 16), 16, 10) AS UNSIGNED)) AS x FROM ga.pins WHERE local_id > '50000' AND local_id <= '51000'`,
    `SELECT COUNT(*) AS n, BIT_XOR(CAST(CONV(LEFT(SHA1(data), 16), 16, 10) AS UNSIGNED)) AS x FROM ga.pins WHERE local_id > '50000' AND local_id <= '51000'`,
    `SELECT COUNT(*) AS n, BIT_XOR(CONV(LEFT(SHA1(data), 16), 16, 10)) AS x FROM ga.pins WHERE local_id > '50000' AND local_id <= '51000'`,
    `SELECT COUNT(*) AS n, BIT_XOR(LENGTH(SHA1(data))) AS x FROM ga.pins WHERE local_id > '50000' AND local_id <= '51000'`,
  ]) {
    const t0 = performance.now(); for (let i = 0; i < 20; i++) await c.query(sql);
    const [ex] = await c.query('EXPLAIN ' + sql);
    console.log(((performance.now() - t0) / 20).toFixed(2), 'ms', sql.slice(0, 110), JSON.stringify(ex).includes('DERIVED') ? 'derived' : '');
  }
  await c.end();
} finally { await devClusterDown(cluster); }
