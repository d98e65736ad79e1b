/**
 * The MyRocks wide-column engine on two real MariaDB servers with MyRocks loaded (one server set
 * for the file). Engine-specific checks: placement, SQL layout, round trips, cells read on deep
 * rows, compaction, a dead host. The engine-neutral semantics are the conformance suite's.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import assert from 'node:assert/strict';
import { ShardKitError } from '../../src/errors.js';
import { modShard } from '../../src/ids/mod-shard.js';
import type { MyrocksEngine } from '../../src/widecolumn/myrocks/index.js';
import { wcDatabaseName } from '../../src/widecolumn/myrocks/index.js';
import { startMyrocksServers } from './myrocks-servers.js';
import { defaultConfig } from '../../src/config/config.js';
import { runShardInit } from '../../src/cli/actions/shard-init.js';
import { openWideColumnService } from '../../src/widecolumn/service.js';
import { peakRss, resetPeakRss, TestClock } from './helpers.js';

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ShardKitError) return err.code;
    throw err;
  }
  throw new Error('expected an error');
}

type Plain = Array<[string, Array<[number, string]>]>;
const plain = (r: { columns: Array<{ column: string; cells: Array<{ timestamp: number; value: Buffer }> }> }): Plain =>
  r.columns.map((c) => [c.column, c.cells.map((x) => [x.timestamp, x.value.toString('utf8')] as [number, string])]);

describe('MyRocks wide-column engine', () => {
  let fx: Awaited<ReturnType<typeof startMyrocksServers>>;
  let engine: MyrocksEngine;
  let clock: TestClock;

  before(async () => {
    fx = await startMyrocksServers();
  });
  after(async () => {
    await engine?.close();
    await fx?.stop();
  });
  beforeEach(async () => {
    await engine?.close();
    await fx.reset();
    clock = new TestClock();
    engine = await fx.engine({ clock: clock.now });
  });

  const rowsRead = async (server: 'A' | 'B'): Promise<number> => {
    const [r] = await fx.servers[server].admin<Array<{ Value: string }>>("SHOW GLOBAL STATUS LIKE 'rocksdb_rows_read'");
    return Number(r!.Value);
  };

  test('a row lives on shard md5(row key) mod N, in wcNNNNN on that shard\'s master, one ROCKSDB table per dataset', async () => {
    await engine.putDataset('events', { maxVersions: 2, ttlSeconds: 3600 });
    const rows = Array.from({ length: 20 }, (_, i) => `user-${i}`);
    for (const row of rows) await engine.putRow('events', row, [{ column: 'click', value: row, timestamp: clock.t - 5 }]);
    for (const row of rows) {
      const shard = modShard(row, 8);
      assert.equal(engine.shardOf(row), shard);
      const server = fx.servers[shard < 4 ? 'A' : 'B'];
      const found = await server.admin<Array<{ row_key: Buffer; col: Buffer; nts: string }>>({ sql: `SELECT row_key, col, nts FROM \`${wcDatabaseName(shard)}\`.events WHERE row_key = ? AND nts <= 0`, values: [row] });
      assert.deepEqual(found.map((f) => [f.row_key.toString(), f.col.toString(), Number(f.nts)]), [[row, 'click', -(clock.t - 5)]]);
    }
    const [t] = await fx.servers.B.admin<Array<{ ENGINE: string; TABLE_COMMENT: string }>>("SELECT ENGINE, TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'wc00005' AND TABLE_NAME = 'events'");
    assert.equal(t!.ENGINE, 'ROCKSDB');
    assert.match(t!.TABLE_COMMENT, /ttl_col=exp/);
    // Object shards are db00005: nothing of the wide-column fleet uses that prefix.
    const other = await fx.servers.A.admin<unknown[]>("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'db%'");
    assert.equal(other.length, 0);
  });

  test('paging over columns, with expired and out-of-range columns between pages, matches a full read', async () => {
    await engine.putDataset('d', { maxVersions: 3, ttlSeconds: 100 });
    const items = Array.from({ length: 30 }, (_, i) => ({ column: `c${String(i).padStart(2, '0')}`, value: `v${i}`, timestamp: i % 3 === 0 ? clock.t - 200_000 : clock.t - i }));
    await engine.putRow('d', 'r', items);
    // A second version of some columns, so versions=2 differs from the newest-only read.
    await engine.putRow('d', 'r', items.filter((_, i) => i % 2 === 0).map((it) => ({ ...it, value: `${it.value}'`, timestamp: it.timestamp + 1 })));
    for (const options of [{}, { versions: 2 }, { versions: 2, start: clock.t - 10 }, { end: clock.t - 5 }]) {
    const full = plain(await engine.getRow('d', 'r', { ...options, limit: 1000 }));
    assert.ok(full.length > 0 && full.length <= 20);
    for (const limit of [1, 2, 3, 7]) {
      const pages: Plain = [];
      let marker: string | null = null;
      let n = 0;
      do {
        const page = await engine.getRow('d', 'r', { ...options, limit, marker });
        assert.ok(page.columns.length <= limit);
        if (page.marker !== null) assert.equal(page.columns.length, limit);
        pages.push(...plain(page));
        marker = page.marker;
        assert.ok(++n < 100);
      } while (marker !== null);
      assert.deepEqual(pages, full, `limit ${limit} ${JSON.stringify(options)}`);
    }
    }
  });

  test('concurrent puts to one row: no error, every cell kept, the newest-only read sees the newest', async () => {
    await engine.putDataset('hot', { maxVersions: 100 });
    await Promise.all(Array.from({ length: 40 }, (_, i) => engine.putRow('hot', 'r', [{ column: 'c', value: `v${i}`, timestamp: 1000 + i }, { column: `k${i % 4}`, value: `w${i}`, timestamp: 1000 + i }])));
    const latest = plain(await engine.getRow('hot', 'r'));
    assert.deepEqual(latest, [['c', [[1039, 'v39']]], ['k0', [[1036, 'w36']]], ['k1', [[1037, 'w37']]], ['k2', [[1038, 'w38']]], ['k3', [[1039, 'w39']]]]);
    assert.equal((await engine.getRow('hot', 'r', { columns: ['c'], versions: 100 })).columns[0]!.cells.length, 40);
    // A backfill older than the newest changes no newest-only read.
    await engine.putRow('hot', 'r', [{ column: 'c', value: 'old', timestamp: 5 }]);
    assert.deepEqual(plain(await engine.getRow('hot', 'r', { columns: ['c'] })), [['c', [[1039, 'v39']]]]);
    assert.deepEqual(plain(await engine.getRow('hot', 'r')), latest);
    await engine.deleteRow('hot', 'r', ['k0', 'c']);
    assert.deepEqual(plain(await engine.getRow('hot', 'r')).map(([c]) => c), ['k1', 'k2', 'k3']);
  });

  test('versions=N on a deep row reads about N cells per column, not the depth', async () => {
    await engine.putDataset('deep', { maxVersions: 1000 });
    const cols = ['a', 'b', 'c'];
    for (let batch = 0; batch < 4; batch++) {
      const items = [];
      for (const column of cols) for (let v = 0; v < 100; v++) items.push({ column, value: `${column}${batch * 100 + v}`, timestamp: 1000 + batch * 100 + v });
      await engine.putRow('deep', 'u', items);
    }
    const server = engine.shardOf('u') < 4 ? 'A' : 'B';
    for (const options of [{ versions: 5 }, { versions: 5, columns: ['a', 'b', 'c'] }, { versions: 1 }]) {
      const before = await rowsRead(server);
      const r = await engine.getRow('deep', 'u', options);
      const read = (await rowsRead(server)) - before;
      assert.deepEqual(r.columns.map((c) => c.cells.length), [options.versions, options.versions, options.versions]);
      assert.equal(r.columns[0]!.cells[0]!.timestamp, 1399);
      // 1200 cells in the row; a read of N versions of 3 columns touches a small multiple of 3N.
      assert.ok(read <= 3 * (options.versions + 1) * 4, `${JSON.stringify(options)} read ${read} rows`);
    }
  });

  test('batch get: one round trip per host the rows live on', async () => {
    await engine.putDataset('d');
    const rows = Array.from({ length: 40 }, (_, i) => `row${i}`);
    await engine.batchPutRows('d', rows.map((row) => ({ row, items: [{ column: 'x', value: row }] })));
    const hostsOf = new Set(rows.map((r) => (engine.shardOf(r) < 4 ? 'A' : 'B')));
    assert.equal(hostsOf.size, 2);
    await engine.getDataset('d');
    const before = engine.roundTrips();
    const got = await engine.batchGetRows('d', rows.map((row) => ({ row })));
    const after = engine.roundTrips();
    assert.deepEqual(got.map((g) => g.columns[0]!.cells[0]!.value.toString()), rows);
    assert.equal(after.A! - before.A!, 1);
    assert.equal(after.B! - before.B!, 1);
  });

  test('a batch read past maxBytes stops in the statement (#34): RESPONSE_TOO_LARGE, peak memory far below the row size', async () => {
    await engine.putDataset('big');
    const COLUMNS = 128;
    const VALUE_BYTES = 512 * 1024;
    const value = Buffer.alloc(VALUE_BYTES, 0x61);
    for (let c = 0; c < COLUMNS; c += 2) {
      await engine.putRow('big', 'huge', Array.from({ length: 2 }, (_, i) => ({ column: `c${String(c + i).padStart(4, '0')}`, value })));
    }
    await engine.putRow('big', 'small', [{ column: 'a', value: 'x' }]);
    const budget = { maxBytes: 4 * 1024 * 1024 };
    resetPeakRss();
    const before = peakRss();
    // Newest cells (head records) and two versions (cells): both page statements are bounded.
    assert.equal(await codeOf(engine.batchGetRows('big', [{ row: 'small' }, { row: 'huge', limit: COLUMNS }], budget)), 'RESPONSE_TOO_LARGE');
    assert.equal(await codeOf(engine.batchGetRows('big', [{ row: 'huge', limit: COLUMNS, versions: 2 }], budget)), 'RESPONSE_TOO_LARGE');
    const grew = peakRss() - before;
    console.log(`# peak RSS growth ${(grew / 2 ** 20).toFixed(1)} MiB`);
    assert.ok(grew < (COLUMNS * VALUE_BYTES) / 2, `peak RSS grew by ${(grew / 2 ** 20).toFixed(1)} MiB reading toward a ${(COLUMNS * VALUE_BYTES) / 2 ** 20} MiB row with a 4 MiB budget`);
    // Within the budget (the column read ahead to know whether more follow counts too) the
    // answer is whole, as without one.
    const ok = await engine.batchGetRows('big', [{ row: 'small' }, { row: 'huge', limit: 6 }], budget);
    assert.deepEqual(ok.map((r) => r.columns.length), [1, 6]);
    assert.deepEqual(plain(ok[1]!), plain((await engine.batchGetRows('big', [{ row: 'huge', limit: 6 }]))[0]!));
  });

  test('a put of 7 values of 1 MiB to one row (within the 16 MiB batch, which counts each value twice) is stored whole: several statements in one transaction, each under max_allowed_packet', async () => {
    // Before: one INSERT per shard, its bytes inlined as hex and each value twice (cell and head):
    // 4 MiB of values made a 16 MiB statement, and the server refused it (ER_NET_PACKET_TOO_LARGE).
    await engine.putDataset('wide');
    const items = Array.from({ length: 7 }, (_, i) => ({ column: `c${String(i).padStart(2, '0')}`, value: Buffer.alloc(1024 * 1024, 0x61 + i) }));
    await engine.putRow('wide', 'r', items);
    const [got] = await engine.batchGetRows('wide', [{ row: 'r', limit: 20 }]);
    assert.deepEqual(got!.columns.map((c) => [c.column, c.cells.length, c.cells[0]!.value.equals(items.find((it) => it.column === c.column)!.value)]), items.map((it) => [it.column, 1, true]));
    // The same in a batch over two rows (one shard or two): every cell, once.
    await engine.batchPutRows('wide', [{ row: 'a', items: items.slice(0, 4) }, { row: 'b', items: items.slice(4) }]);
    const both = await engine.batchGetRows('wide', [{ row: 'a', limit: 20 }, { row: 'b', limit: 20 }]);
    assert.deepEqual(both.map((r) => r.columns.length), [4, 3]);
  });

  test('TTL to the millisecond at read time; compaction removes expired cells and excess versions, and no read changes', async () => {
    await engine.putDataset('t', { maxVersions: 2, ttlSeconds: 10 });
    await engine.putRow('t', 'r', [{ column: 'a', value: 'old', timestamp: clock.t - 10_000 }, { column: 'b', value: 'b1', timestamp: clock.t - 3 }, { column: 'b', value: 'b2', timestamp: clock.t - 2 }, { column: 'b', value: 'b3', timestamp: clock.t - 1 }]);
    assert.deepEqual(plain(await engine.getRow('t', 'r', { versions: 5 })).map(([c, cells]) => [c, cells.length]), [['a', 1], ['b', 2]]);
    clock.advance(1);
    const before = plain(await engine.getRow('t', 'r', { versions: 5 }));
    assert.deepEqual(before.map(([c]) => c), ['b']);
    const report = await engine.compact();
    assert.equal(report.removedExpiredCells, 1);
    assert.equal(report.removedExcessVersions, 1);
    assert.deepEqual(plain(await engine.getRow('t', 'r', { versions: 5 })), before);
    const shard = engine.shardOf('r');
    const [n] = await fx.servers[shard < 4 ? 'A' : 'B'].admin<Array<{ n: string }>>(`SELECT COUNT(*) AS n FROM \`${wcDatabaseName(shard)}\`.t WHERE nts <= 0`);
    assert.equal(Number(n!.n), 2);
  });

  test('compaction racing writers keeps every version a read could return', async () => {
    await engine.putDataset('race', { maxVersions: 3 });
    const rows = ['p', 'q', 'r', 's'];
    let ts = 1;
    const writes = (async () => {
      for (let i = 0; i < 30; i++) await engine.batchPutRows('race', rows.map((row) => ({ row, items: [{ column: 'c', value: `${ts}`, timestamp: ts++ }] })));
    })();
    await Promise.all([writes, engine.compact(), engine.compact()]);
    await engine.compact();
    for (const row of rows) {
      const got = plain(await engine.getRow('race', row, { versions: 10 }));
      assert.equal(got[0]![1].length, 3);
      const newest = got[0]![1][0]![0];
      assert.deepEqual(got[0]![1].map((c) => c[0]), [newest, newest - rows.length, newest - 2 * rows.length]);
    }
  });

  test('the catalogue is shared: a dataset created by one engine is seen by another', async () => {
    const other = await fx.engine({ clock: clock.now });
    try {
      await engine.putDataset('shared', { maxVersions: 4 });
      assert.equal((await other.getDataset('shared')).maxVersions, 4);
      await other.putRow('shared', 'k', [{ column: 'c', value: 'v', timestamp: 1 }]);
      assert.deepEqual(plain(await engine.getRow('shared', 'k')), [['c', [[1, 'v']]]]);
      assert.deepEqual((await other.listDatasets()).map((d) => d.name), ['shared']);
    } finally {
      await other.close();
    }
  });

  test('bad input: the embedded engine\'s refusals, nothing written; names and keys never reach SQL as text', async () => {
    await engine.putDataset('d');
    assert.equal(await codeOf(engine.putDataset('x`; DROP DATABASE wc00000; --')), 'INVALID_ARGUMENT');
    assert.equal(await codeOf(engine.getRow('Nope', 'r')), 'INVALID_ARGUMENT');
    assert.equal(await codeOf(engine.getRow('nope', 'r')), 'UNKNOWN_DATASET');
    assert.equal(await codeOf(engine.putRow('d', '', [{ column: 'c', value: 'v' }])), 'INVALID_ARGUMENT');
    assert.equal(await codeOf(engine.putRow('d', 'r', [{ column: 'c', value: 'v' }, { column: 'c', value: 'v', timestamp: clock.t + 3_600_000 }])), 'INVALID_ARGUMENT');
    assert.equal(await codeOf(engine.putRow('d', 'r', [{ column: 'c'.repeat(1025), value: 'v' }])), 'PAYLOAD_TOO_LARGE');
    assert.equal(await codeOf(engine.getRow('d', 'r', { start: 5, end: 5 })), 'INVALID_ARGUMENT');
    assert.equal(await codeOf(engine.getRow('d', 'r', { marker: '!!' })), 'INVALID_ARGUMENT');
    assert.deepEqual(plain(await engine.getRow('d', 'r')), []);
    const evil = "r'); DROP TABLE d; --\\";
    await engine.putRow('d', evil, [{ column: "c' OR 1=1 --", value: "v'", timestamp: 2 }]);
    assert.deepEqual(plain(await engine.getRow('d', evil)), [["c' OR 1=1 --", [[2, "v'"]]]]);
    const long = 'k'.repeat(4096);
    await engine.putRow('d', long, [{ column: 'c'.repeat(1024), value: 'v', timestamp: 3 }]);
    assert.equal((await engine.getRow('d', long)).columns[0]!.column.length, 1024);
  });

  test('backup (each host from one snapshot) restores into an empty fleet; export writes the live cells of every shard into one Parquet file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardkit-myr-bk-'));
    try {
      await engine.putDataset('seq', { maxVersions: 2, ttlSeconds: 60 });
      await engine.putDataset('plain');
      const rows = Array.from({ length: 12 }, (_, i) => `user${i}`);
      await engine.batchPutRows('seq', rows.map((row, i) => ({ row, items: [{ column: 'view', value: `${row}-1`, timestamp: clock.t - 3 }, { column: 'view', value: `${row}-2`, timestamp: clock.t - 2 }, { column: 'view', value: `${row}-3`, timestamp: clock.t - 1 }, { column: 'old', value: 'gone', timestamp: clock.t - 61_000 - i }] })));
      await engine.putRow('plain', 'k', [{ column: 'c', value: Buffer.from([0, 255]), timestamp: 7 }]);
      const before = await engine.batchGetRows('seq', rows.map((row) => ({ row, versions: 5 })));
      const report = await engine.backup(join(dir, 'bk'));
      assert.ok(report.records > 0);
      assert.equal(await codeOf(engine.backup(join(dir, 'bk'))), 'ALREADY_EXISTS');

      const file = join(dir, 'seq.parquet');
      const exported = await engine.exportParquet('seq', file);
      assert.deepEqual([exported.rows, exported.cells], [12, 24]);
      const records = await parquetReadObjects({ file: await asyncBufferFromFile(file), utf8: false }) as Array<{ row_key: Uint8Array | string; column: Uint8Array | string; value: Uint8Array }>;
      assert.equal(records.length, 24);
      assert.deepEqual(new Set(records.map((r) => Buffer.from(r.row_key).toString())), new Set(rows));
      assert.equal(await codeOf(engine.exportParquet('seq', file)), 'ALREADY_EXISTS');

      await engine.close();
      await fx.reset();
      engine = await fx.engine({ clock: clock.now });
      const restored = await engine.restore(join(dir, 'bk'));
      assert.equal(restored.records, report.records);
      assert.deepEqual((await engine.listDatasets()).map((d) => [d.name, d.maxVersions, d.ttlSeconds]), [['plain', 1, 0], ['seq', 2, 60]]);
      assert.deepEqual((await engine.batchGetRows('seq', rows.map((row) => ({ row, versions: 5 })))).map(plain), before.map(plain));
      assert.deepEqual(plain(await engine.getRow('plain', 'k')), [['c', [[7, Buffer.from([0, 255]).toString()]]]]);
      assert.equal(await codeOf(engine.restore(join(dir, 'bk'))), 'ALREADY_EXISTS');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('config: widecolumn.engine "myrocks" makes `shardkit init` create the wide-column shards and the service open MyRocks; refused without MariaDB', async () => {
    await engine.close();
    await fx.reset();
    const dir = mkdtempSync(join(tmpdir(), 'shardkit-myr-cfg-'));
    try {
      const base = defaultConfig();
      const config = {
        ...base,
        storage: { backend: 'mysql', user: userInfo().username },
        hosts: { A: { socket: fx.servers.A.socket }, B: { socket: fx.servers.B.socket } },
        shardMap: fx.shardMap.toJSON(),
        widecolumn: { engine: 'myrocks', myrocks: { catalogRefreshMs: 0 } },
      };
      const file = join(dir, 'shardkit.json');
      writeFileSync(file, JSON.stringify(config));
      await runShardInit('init', { config: file, concurrency: 2, json: true });
      for (const [server, shards] of [['A', [0, 1, 2, 3]], ['B', [4, 5, 6, 7]]] as const) {
        const dbs = await fx.servers[server].admin<Array<{ n: string }>>("SELECT SCHEMA_NAME AS n FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'wc%' ORDER BY 1");
        assert.deepEqual(dbs.map((d) => d.n), shards.map(wcDatabaseName));
      }
      const wc = await openWideColumnService({ dataDir: dir, config: config.widecolumn, fleet: { storage: config.storage, hosts: config.hosts, shardMap: () => fx.shardMap } });
      try {
        assert.equal(wc.engine.kind, 'myrocks');
        await wc.engine.putDataset('events');
        await wc.engine.putRow('events', 'u', [{ column: 'c', value: 'v', timestamp: 3 }]);
        assert.deepEqual(plain(await wc.engine.getRow('events', 'u')), [['c', [[3, 'v']]]]);
      } finally {
        await wc.close();
      }
      // A second init also creates the tables of the datasets that exist by then.
      await fx.servers.B.admin('DROP DATABASE wc00006');
      await runShardInit('init', { config: file, concurrency: 2, json: true });
      const [t] = await fx.servers.B.admin<Array<{ n: string }>>("SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'wc00006' AND TABLE_NAME = 'events'");
      assert.equal(Number(t!.n), 1);
      await assert.rejects(openWideColumnService({ dataDir: dir, config: { engine: 'myrocks' }, fleet: { storage: { backend: 'sqlite' }, hosts: {}, shardMap: () => fx.shardMap } }), (err: unknown) => err instanceof ShardKitError && err.code === 'INVALID_CONFIG');
      await assert.rejects(openWideColumnService({ dataDir: dir, config: { engine: 'cassandra' } }), (err: unknown) => err instanceof ShardKitError && err.code === 'INVALID_CONFIG');
    } finally {
      rmSync(dir, { recursive: true, force: true });
      engine = await fx.engine({ clock: clock.now });
    }
  });

  test('a dead host fails its shards fast with SHARD_UNAVAILABLE; the other host keeps working', async () => {
    await engine.putDataset('d');
    const onA = Array.from({ length: 50 }, (_, i) => `a${i}`).find((r) => engine.shardOf(r) < 4)!;
    const onB = Array.from({ length: 50 }, (_, i) => `b${i}`).find((r) => engine.shardOf(r) >= 4)!;
    await engine.putRow('d', onA, [{ column: 'c', value: 'A', timestamp: 1 }]);
    await engine.putRow('d', onB, [{ column: 'c', value: 'B', timestamp: 1 }]);
    await fx.servers.B.kill();
    try {
      assert.equal(await codeOf(engine.getRow('d', onB)), 'SHARD_UNAVAILABLE');
      assert.equal(await codeOf(engine.putRow('d', onB, [{ column: 'c', value: 'x' }])), 'SHARD_UNAVAILABLE');
      assert.equal(await codeOf(engine.batchGetRows('d', [{ row: onA }, { row: onB }])), 'SHARD_UNAVAILABLE');
      assert.deepEqual(plain(await engine.getRow('d', onA)), [['c', [[1, 'A']]]]);
      await engine.putRow('d', onA, [{ column: 'c', value: 'A2', timestamp: 2 }]);
    } finally {
      await fx.servers.B.start();
    }
    // The catalogue lives on shard 0's host (A): with A down, known datasets keep working on B.
    // An engine that reloads the catalogue on every call, so each call below tries A first.
    const eager = await fx.engine({ clock: clock.now, catalogRefreshMs: 0 });
    try {
      assert.deepEqual(plain(await eager.getRow('d', onB)), [['c', [[1, 'B']]]]);
      await fx.servers.A.kill();
      try {
        assert.deepEqual(plain(await eager.getRow('d', onB)), [['c', [[1, 'B']]]]);
        assert.equal(await codeOf(eager.getRow('d', onA)), 'SHARD_UNAVAILABLE');
        assert.equal(await codeOf(eager.listDatasets()), 'SHARD_UNAVAILABLE');
      } finally {
        await fx.servers.A.start();
      }
    } finally {
      await eager.close();
    }
  });
});
