/**
 * `shardkit migrate` from the embedded store to a MariaDB dev cluster (1 pair, loopback, 8 object
 * shards, 8 mod shards): rows/s of the first copy, compared in the same run with the raw driver
 * (mysql2, multi-row INSERTs of the same rows into one table on one connection); then the size
 * and time of catch-up rounds after batches of changes on the source; then the time the source
 * is fenced by --final. Library calls in-process (no CLI start-up in the figures).
 * OBJECTS (default 40000), MAPPINGS (40000), LOOKUPS (8000) size the source.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { pinterestId } from '../src/ids/pinterest-id.js';
import { migrateKit, type KitMigrationReport } from '../src/migrate/kit-migration.js';
import { devUp, DevCluster } from '../src/ops/dev-cluster.js';
import { makeEmbeddedStore, openBackend } from '../test/migrate/kit-migration-harness.js';

const OBJECTS = Number(process.env.OBJECTS ?? 40_000);
const MAPPINGS = Number(process.env.MAPPINGS ?? 40_000);
const LOOKUPS = Number(process.env.LOOKUPS ?? 8_000);

const rate = (rows: number, ms: number) => Math.round(rows / (ms / 1000));

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-migbench-'));
  const src = makeEmbeddedStore('shardkit-migbench-src-');
  try {
    const { cluster } = await devUp({ dir, pairs: 1, shards: 8, modShards: 8 });
    // The source: rows written straight into the shard files (about 300 bytes of JSON per object).
    const { backend, map } = await openBackend(src.configPath);
    const body = 'x'.repeat(240);
    const perShard = OBJECTS / 8;
    for (let shard = 0; shard < 8; shard++) {
      const ref = { host: map.locate(shard).master, shard, fleet: 'objects' as const };
      for (let start = 1; start <= perShard; start += 1000) {
        const n = Math.min(1000, perShard - start + 1);
        await backend.putObjectRows(ref, 'pins', Array.from({ length: n }, (_, i) => ({ localId: start + i, data: JSON.stringify({ n: start + i, body }), createdAt: new Date(1_760_000_000_000 + start + i) })));
      }
      for (let start = 0; start < MAPPINGS / 8; start += 1000) {
        const n = Math.min(1000, MAPPINGS / 8 - start);
        await backend.putMappingRows(ref, 'board_has_pins', Array.from({ length: n }, (_, i) => ({ fromId: pinterestId.encode({ shard, type: 2, localId: 1 + ((start + i) % 100) }), toId: pinterestId.encode({ shard, type: 1, localId: 1 + start + i }), sequence: start + i })));
      }
      const lref = { host: map.locateModShard(shard).master, shard, fleet: 'lookups' as const };
      for (let start = 0; start < LOOKUPS / 8; start += 1000) {
        const n = Math.min(1000, LOOKUPS / 8 - start);
        await backend.putLookupRows(lref, 'lookup_email', Array.from({ length: n }, (_, i) => ({ key: `user${shard}-${start + i}@example.com`, value: BigInt(start + i + 1) })));
      }
    }
    const total = OBJECTS + MAPPINGS + LOOKUPS;
    console.log(`source: ${OBJECTS} objects, ${MAPPINGS} mappings, ${LOOKUPS} lookups (${total} rows) in 16 shard files`);

    // The raw driver: the same object rows, multi-row INSERTs of 1000, one connection, one table.
    const config = cluster.config();
    if (config.storage.backend !== 'mysql') throw new Error('not mysql');
    const h = config.hosts[config.shardMap.ranges[0]!.master]!;
    const conn = await mysql.createConnection({ host: h.host!, port: h.port!, user: config.storage.user, ...(config.storage.password ? { password: config.storage.password } : {}) });
    await conn.query('CREATE DATABASE IF NOT EXISTS bench_raw');
    await conn.query('CREATE TABLE bench_raw.pins (local_id BIGINT UNSIGNED PRIMARY KEY, data MEDIUMTEXT NOT NULL, ts TIMESTAMP(3) NOT NULL) ENGINE=InnoDB');
    const rawStart = Date.now();
    for (let start = 1; start <= OBJECTS; start += 1000) {
      const rows = Array.from({ length: Math.min(1000, OBJECTS - start + 1) }, (_, i) => [start + i, JSON.stringify({ n: start + i, body }), new Date(1_760_000_000_000 + i)]);
      await conn.query('INSERT INTO bench_raw.pins (local_id, data, ts) VALUES ?', [rows]);
    }
    const rawMs = Date.now() - rawStart;
    await conn.query('DROP DATABASE bench_raw');
    await conn.end();

    const run = (extra: Partial<Parameters<typeof migrateKit>[0]> = {}): Promise<KitMigrationReport> =>
      migrateKit({ from: src.configPath, to: cluster.configPath, maxRounds: 1, ...extra });
    const first = await run();
    const r1 = first.rounds[0]!;
    console.log(`first copy: ${r1.upserts} rows in ${r1.elapsedMs} ms = ${rate(r1.upserts, r1.elapsedMs)} rows/s (objects, mappings and lookups; 4 shards at once)`);
    console.log(`raw mysql2: ${OBJECTS} object rows in ${rawMs} ms = ${rate(OBJECTS, rawMs)} rows/s (one connection, one table, INSERT of 1000 rows)`);
    console.log(`ratio migrate/raw: ${(rate(r1.upserts, r1.elapsedMs) / rate(OBJECTS, rawMs)).toFixed(2)}`);

    // Catch-up rounds: a batch of changes on the source (updates spread over every shard, some
    // deletes and inserts), then one run; the round's time is the source scan plus the re-copy.
    console.log('catch-up rounds (changes on the source -> rows copied, chunks re-copied, time):');
    for (const [batch, changes] of [5000, 500, 50, 0].entries()) {
      let done = 0;
      for (let k = 0; k < changes; k++) {
        const shard = k % 8;
        const ref = { host: map.locate(shard).master, shard, fleet: 'objects' as const };
        const localId = 1 + Math.floor(((k * 7919 + batch * 104729) % perShard));
        if (k % 10 === 9) await backend.deleteObject(ref, 'pins', localId);
        else await backend.putObjectRows(ref, 'pins', [{ localId, data: JSON.stringify({ n: localId, body, changed: k, batch }), createdAt: new Date(1_760_000_000_000) }]);
        done++;
      }
      const r = (await run()).rounds[0]!;
      console.log(`  ${String(done).padStart(5)} changes: ${r.upserts + r.deletes} rows (${r.upserts} put, ${r.deletes} deleted), ${r.changedChunks} chunks, ${r.elapsedMs} ms (scan of ${r.rowsScanned} source rows)`);
    }
    await backend.close();
    const fin = await run({ final: true });
    const fenced = fin.rounds.filter((r) => r.phase !== 'copy').reduce((n, r) => n + r.elapsedMs, 0);
    console.log(`--final: ${fin.rounds.length} rounds, source fenced for about ${fenced} ms (final pass and verify; ${fin.final?.fencedFiles} files)`);
  } finally {
    await DevCluster.open(dir)?.down();
    rmSync(dir, { recursive: true, force: true });
    rmSync(src.dir, { recursive: true, force: true });
  }
}

await main();
