import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { devUp, devClusterDown } from '../src/ops/dev-cluster.js';
const dir = mkdtempSync(join(tmpdir(), 'shardkit-abl-dg-'));
const { cluster } = await devUp({ dir, pairs: 1, shards: 2 });
try {
  const inst = cluster.instance('MySQL001A');
  const c = await mysql.createConnection({ socketPath: inst.socket, user: 'root', supportBigNumbers: true, bigNumberStrings: true, dateStrings: true, timezone: 'Z' });
  const N = 200000;
  await c.query(`CREATE DATABASE ga`);
  await c.query(`CREATE TABLE ga.pins (local_id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, data MEDIUMTEXT NOT NULL, ts TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)) DEFAULT CHARSET utf8mb4`);
  const rows = Array.from({ length: 5000 }, (_, i) => [JSON.stringify({ title: `pin ${i}`, pad: 'x'.repeat(260) })]);
  for (let i = 0; i < N; i += 5000) await c.query('INSERT INTO ga.pins (data) VALUES ?', [rows]);
  const h = "CAST(CONV(LEFT(SHA1(CONCAT_WS('#', ISNULL(local_id), LENGTH(local_id), CAST(local_id AS BINARY), ISNULL(data), LENGTH(data), CAST(data AS BINARY), ISNULL(ts), LENGTH(ts), CAST(ts AS BINARY))), 16), 16, 10) AS UNSIGNED)";
  const W = (lo: number) => `local_id > '${lo}' AND local_id <= '${lo + 1000}'`;
  const cat = "CONCAT_WS('#', ISNULL(local_id), LENGTH(local_id), CAST(local_id AS BINARY), ISNULL(data), LENGTH(data), CAST(data AS BINARY), ISNULL(ts), LENGTH(ts), CAST(ts AS BINARY))";
  const variants: Record<string, (lo: number) => string> = {
    sha1cat: (lo) => `SELECT COUNT(*), CAST(BIT_XOR(${h}) AS CHAR) FROM ga.pins WHERE ${W(lo)}`,
    crccat: (lo) => `SELECT COUNT(*), SUM(CRC32(${cat})) FROM ga.pins WHERE ${W(lo)}`,
    crccols: (lo) => `SELECT COUNT(*), SUM(CRC32(local_id) ^ (CRC32(data) << 1) ^ (CRC32(ts) << 2)) FROM ga.pins WHERE ${W(lo)}`,
    sha1data: (lo) => `SELECT COUNT(*), CAST(BIT_XOR(CAST(CONV(LEFT(SHA1(data), 16), 16, 10) AS UNSIGNED)) AS CHAR) FROM ga.pins WHERE ${W(lo)}`,
    catonly: (lo) => `SELECT COUNT(*), SUM(LENGTH(${cat})) FROM ga.pins WHERE ${W(lo)}`,
    count: (lo) => `SELECT COUNT(*), SUM(LENGTH(data)) FROM ga.pins WHERE ${W(lo)}`,
    rows: (lo) => `SELECT * FROM ga.pins WHERE local_id > '${lo}' ORDER BY local_id LIMIT 1000`,
  };

  for (const pass of [1, 2]) for (const [name, f] of Object.entries(variants)) {
    let t0 = performance.now();
    for (let i = 0; i < 60; i++) await c.query(f(25000 * Object.keys(variants).indexOf(name) + 1000 * i + (pass - 1) * 0));
    const cold = (performance.now() - t0) / 60;
    t0 = performance.now();
    for (let i = 0; i < 60; i++) await c.query(f(5000));
    console.log(pass, name, 'successive', cold.toFixed(2), 'same', ((performance.now() - t0) / 60).toFixed(2));
  }
  await c.end();
} finally { await devClusterDown(cluster); }
