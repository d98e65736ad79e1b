/**
 * Migration from a table (issue 18, item 4, second source): rows/s of the copy from a MariaDB
 * `pins` table into an embedded shardkit store, beside a raw copy of the same rows in the same
 * run (mysql2 pages into one SQLite table, a transaction per page: the floor of any copy), then
 * the size and time of each catch-up round while the old table keeps changing less and less,
 * and the --final pass on the read-only source.
 *
 *   npm run bench -- migrate-table      (or: node --import tsx bench/migrate-table.bench.ts)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import { defaultConfig } from '../src/config/config.js';
import { defaultShardMapJson } from '../src/topology/shard-map.js';
import { MariadbInstance } from '../src/ops/mariadb/mariadb-instance.js';
import { runTableMigration, type MigrateIo, type TableMigrationCliOptions } from '../src/cli/actions/migrate-table.js';

const ROWS = Number(process.env.ROWS ?? 20_000);
const ROUNDS = [2000, 200, 20, 0];
const MOD_SHARDS = Number(process.env.MOD_SHARDS ?? 64);

const quietIo: MigrateIo = { stdout() {}, stderr() {}, isTTY: false, signal: new AbortController().signal };

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'shardkit-bench-migtable-'));
  const server = await MariadbInstance.create({ name: 'LEGACY', dir: join(root, 'server'), serverId: 1 });
  await server.init();
  await server.start();
  const admin = await server.connect();
  try {
    await admin.query('CREATE DATABASE legacy');
    await admin.query(`CREATE TABLE legacy.pins (id BIGINT PRIMARY KEY AUTO_INCREMENT, board_id INT, title VARCHAR(200), body TEXT, views BIGINT,
      updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), KEY (updated_at))`);
    await admin.query("CREATE USER 'legacy'@'%' IDENTIFIED BY 'pw'");
    await admin.query("GRANT ALL ON legacy.* TO 'legacy'@'%'");
    for (let i = 0; i < ROWS; i += 1000) {
      const values = Array.from({ length: Math.min(1000, ROWS - i) }, (_, k) => `(${1 + ((i + k) % 50)}, 'pin ${i + k}', REPEAT('x', 200), ${i + k})`);
      await admin.query(`INSERT INTO legacy.pins (board_id, title, body, views) VALUES ${values.join(',')}`);
    }
    const url = `mysql://legacy:pw@127.0.0.1:${server.port}/legacy`;
    const query = 'SELECT id, board_id, title, body, views, updated_at FROM pins';

    // Raw: the same pages read by mysql2, written as (id, JSON) rows into one SQLite table.
    const rawDb = new Database(join(root, 'raw.sqlite'));
    rawDb.pragma('journal_mode = WAL');
    rawDb.exec('CREATE TABLE pins (id INTEGER PRIMARY KEY, data TEXT NOT NULL)');
    const insert = rawDb.prepare('INSERT INTO pins (id, data) VALUES (?, ?)');
    const page = rawDb.transaction((rows: Array<Record<string, unknown>>) => {
      for (const r of rows) insert.run(r.id, JSON.stringify(r));
    });
    const conn = await mysql.createConnection({ uri: url, supportBigNumbers: true, bigNumberStrings: true, dateStrings: true });
    const rawStart = performance.now();
    let last = 0;
    for (;;) {
      const [rows] = await conn.query('SELECT * FROM pins WHERE id > ? ORDER BY id LIMIT 500', [last]);
      const list = rows as Array<Record<string, unknown>>;
      if (list.length === 0) break;
      page(list);
      last = Number(list[list.length - 1]!.id);
    }
    const rawMs = performance.now() - rawStart;
    rawDb.close();

    const dir = mkdtempSync(join(root, 'target-'));
    // MOD_SHARDS=4096 is the embedded default: there every new lookup key opens (and first
    // creates) its own SQLite file, which dominates the copy; 64 measures the migration itself.
    const config = defaultConfig({ shards: 64, pairs: 2 }) as { shardMap: unknown; schema: { types: unknown[]; keyspaces: unknown[] } };
    config.shardMap = defaultShardMapJson({ shards: 64, pairs: 2, modShards: MOD_SHARDS });
    config.schema.types.push({ name: 'migration', id: 1000 });
    config.schema.keyspaces.push('pin_old_id');
    const to = join(dir, 'shardkit.json');
    writeFileSync(to, JSON.stringify(config));
    const opts: TableMigrationCliOptions = { from: url, to, query, type: 'pin', idColumn: 'id', changedColumn: 'updated_at', batch: 500, json: true };

    const load0 = loadavg()[0]!;
    const first = await runTableMigration(opts, quietIo);
    const kitRate = (first.scanned * 1000) / first.elapsedMs;
    const rawRate = (ROWS * 1000) / rawMs;
    console.log(`copy of ${ROWS} rows (${MOD_SHARDS} mod shards): shardkit migrate ${kitRate.toFixed(0)} rows/s (${(first.elapsedMs / 1000).toFixed(1)} s), raw mysql2 -> one SQLite table ${rawRate.toFixed(0)} rows/s (${(rawMs / 1000).toFixed(1)} s): ${(kitRate / rawRate).toPrecision(2)}x of raw (load ${load0.toFixed(1)})`);

    // Catch-up rounds: the old table changes by `n` rows (half updates, half inserts) between runs.
    for (const n of ROUNDS) {
      if (n > 0) {
        await admin.query(`UPDATE legacy.pins SET views = views + 1 WHERE id % ${Math.max(1, Math.floor(ROWS / (n / 2)))} = 0 LIMIT ${n / 2}`);
        const values = Array.from({ length: n / 2 }, (_, k) => `(${1 + (k % 50)}, 'late ${k}', 'y', ${k})`);
        await admin.query(`INSERT INTO legacy.pins (board_id, title, body, views) VALUES ${values.join(',')}`);
      }
      const r = await runTableMigration(opts, quietIo);
      console.log(`catch-up round after ${n} changed rows: copied ${r.copied} (${r.created} created, ${r.updated} updated), read ${r.scanned} (overlap ${r.unchanged} unchanged) in ${(r.elapsedMs / 1000).toFixed(2)} s`);
    }
    await admin.query('SET GLOBAL read_only = ON');
    const final = await runTableMigration({ ...opts, final: true }, quietIo);
    console.log(`--final on the read-only source: copied ${final.copied}, verifying pass copied ${final.verifyCopied}, ${(final.elapsedMs / 1000).toFixed(2)} s (load ${loadavg()[0]!.toFixed(1)})`);
    await admin.query('SET GLOBAL read_only = OFF');
    await conn.end();
  } finally {
    await admin.end().catch(() => undefined);
    await server.stop().catch(() => server.kill());
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
