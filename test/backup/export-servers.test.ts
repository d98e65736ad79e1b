import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetMetadataAsync } from 'hyparquet';
import type { KitObject } from '../../src/kit/kit-object.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { exportShards } from '../../src/ops/backup/index.js';
import { openExportSource } from '../../src/ops/backup/export-run.js';
import { PG_DATABASE, pgServer } from '../../src/ops/dev/dev-postgres.js';
import { cli } from '../cli/cli-harness.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { until } from './backup-helpers.js';
import { assertObjectsExported, duckdb, parquetFiles, readExport, type Row } from './export-helpers.js';

type Fixture = Awaited<ReturnType<typeof startTestCluster>>;

for (const engine of ['mariadb', 'postgres'] as const) {
  describe(`shardkit export on a ${engine} dev cluster, read from the slaves`, () => {
    let fx: Fixture;
    let out: string;
    let kit: ShardKit;
    let n = 0;
    const written: Array<{ obj: KitObject; deleted?: boolean }> = [];
    /** Exports into a fresh directory until the slaves have replicated `rows` rows (a condition, not a sleep); returns them. */
    const exported = async (args: string[], rows: number): Promise<{ rows: Row[]; dir: string }> => {
      let got: { rows: Row[]; dir: string } | undefined;
      await until(`the slaves to hold ${rows} rows`, async () => {
        const to = join(out, `run-${n++}`);
        const r = await cli([...args, '--dir', fx.dir, '--to', to, '--json']);
        assert.equal(r.code, 0, r.stderr);
        const dir = (JSON.parse(r.stdout) as { dir: string }).dir;
        got = { rows: await readExport(dir), dir };
        return got.rows.length >= rows;
      });
      return got!;
    };
    before(async () => {
      fx = await startTestCluster({ engine, pairs: 1, shards: 4, prefix: `shardkit-export-${engine}-` });
      out = mkdtempSync(join(tmpdir(), `shardkit-export-${engine}-out-`));
      kit = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
      for (let i = 0; i < 40; i++) written.push({ obj: await kit.objects.create('pin', { title: `pin ${i}`, n: i, text: 'é ✓ "quoted"' }, { shard: i % 4 }) });
      await kit.objects.delete(written[5]!.obj.id);
      written[5]!.deleted = true;
    });
    after(async () => {
      await kit?.close();
      rmSync(out, { recursive: true, force: true });
      await fx?.stop();
    });

    test('every pin written through the kit appears once with its values, one file per shard, read from the slave; DuckDB reads the files', async () => {
      const { rows, dir } = await exported(['export', 'objects', '--type', 'pin'], written.length);
      assertObjectsExported(rows, written, 'pin');
      const files = parquetFiles(dir);
      assert.deepEqual(files, ['db00000.parquet', 'db00001.parquet', 'db00002.parquet', 'db00003.parquet']);
      const slave = engine === 'postgres' ? 'PG001B' : 'MySQL001B';
      for (const f of files) {
        const meta = await parquetMetadataAsync(await asyncBufferFromFile(join(dir, f)));
        assert.equal(meta.key_value_metadata?.find((kv) => kv.key === 'shardkit.host')?.value, slave, `${f} read from the slave`);
      }
      const db = await duckdb();
      try {
        const [[count, sum]] = (await db.all(`SELECT count(*), sum(CAST(json_extract(data, '$.n') AS BIGINT)) FILTER (WHERE NOT deleted) FROM '${join(dir, '*.parquet')}'`)) as [[bigint, bigint | number]];
        assert.equal(count, 40n);
        assert.equal(Number(sum), (39 * 40) / 2 - 5);
      } finally {
        db.close();
      }
    });

    test('--since exports only the pins created at or after it; mappings export every pair', async () => {
      const since = Math.max(...written.map((w) => w.obj.createdAt.getTime())) + 1;
      await until('the clock past the first pins', () => Date.now() > since);
      const later: Array<{ obj: KitObject }> = [];
      for (let i = 0; i < 9; i++) later.push({ obj: await kit.objects.create('pin', { title: `later ${i}` }, { shard: i % 4 }) });
      const { rows } = await exported(['export', 'objects', '--type', 'pin', '--since', new Date(since).toISOString()], later.length);
      assertObjectsExported(rows, later, 'pin');
      // At the boundary: --since equal to a row's created_at (ms) includes that row.
      const first = Math.min(...later.map((l) => l.obj.createdAt.getTime()));
      const exact = await exported(['export', 'objects', '--type', 'pin', '--since', String(first)], later.length);
      assertObjectsExported(exact.rows, later, 'pin');
      written.push(...later);

      const board = await kit.objects.create('board', { name: 'b' }, { shard: 2 });
      for (const [i, w] of written.slice(0, 15).entries()) await kit.mappings.add('board_has_pins', board.id, w.obj.id, { sequence: 500 + i });
      const maps = await exported(['export', 'mappings', '--type', 'board_has_pins'], 15);
      assert.deepEqual(maps.rows.map((r) => [r.from_id, r.to_id, r.sequence]).sort((a, b) => Number(a[2]) - Number(b[2])), written.slice(0, 15).map((w, i) => [board.id, w.obj.id, BigInt(500 + i)]));
      assert.deepEqual(maps.rows.map((r) => r.file), ['db00002.parquet', ...Array(14).fill('db00002.parquet')].slice(0, 15), 'on the shard of from_id');
    });

    test('read in pages of 3 rows (local ids 1..12 per shard cross many page boundaries): every pin and pair once', async () => {
      // Regression: PostgreSQL ordered pages by the text of local_id ('10' < '2'), repeating and skipping rows past the first page.
      const objects = await exportShards({ dir: fx.dir }, { what: 'objects', name: 'pin', to: join(out, 'paged'), pageRows: 3 });
      assertObjectsExported(await readExport(objects.dir), written, 'pin');
      const maps = await exportShards({ dir: fx.dir }, { what: 'mappings', name: 'board_has_pins', to: join(out, 'paged'), pageRows: 4 });
      const pairs = (await readExport(maps.dir)).map((r) => String(r.to_id));
      assert.deepEqual([...pairs].sort(), written.slice(0, 15).map((w) => String(w.obj.id)).sort());
    });

    if (engine === 'mariadb') {
      test('--config FILE (a fleet by address, the admin account from the environment): every pin once, read from the slave', async () => {
        const c = fx.cluster;
        const password = 'export-admin-pw';
        for (const host of ['MySQL001A', 'MySQL001B']) {
          await c.instance(host).admin('SET SESSION sql_log_bin = 0', `CREATE USER IF NOT EXISTS 'export_admin'@'%' IDENTIFIED BY '${password}'`, "GRANT ALL PRIVILEGES ON *.* TO 'export_admin'@'%'");
        }
        const file = join(out, 'prod.json');
        writeFileSync(file, readFileSync(c.configPath, 'utf8'));
        const env = { SHARDKIT_ADMIN_USER: 'export_admin', SHARDKIT_ADMIN_PASSWORD: password, SHARDKIT_REPL_USER: c.state.replUser, SHARDKIT_REPL_PASSWORD: c.state.replPassword };
        const r = await cli(['export', 'objects', '--config', file, '--data', fx.dir, '--type', 'pin', '--to', join(out, 'by-config'), '--json'], env);
        assert.equal(r.code, 0, r.stderr);
        const dir = (JSON.parse(r.stdout) as { dir: string }).dir;
        assertObjectsExported(await readExport(dir), written, 'pin');
        const meta = await parquetMetadataAsync(await asyncBufferFromFile(join(dir, 'db00000.parquet')));
        assert.equal(meta.key_value_metadata?.find((kv) => kv.key === 'shardkit.host')?.value, 'MySQL001B');
      });
    }

    if (engine === 'postgres') {
      test('a read whose page handler fails (disk full) ends and frees its connection: close() returns, the next read on the host gets every row', async () => {
        // Regression: the binary COPY left half read held the connection, and close()'s COMMIT waited for it forever.
        // A table of its own (the reader takes any object table), big enough that the COPY is still streaming when the handler fails.
        const master = pgServer(fx.cluster, 'PG001A');
        await master.sql('CREATE TABLE db00001.bulk (local_id BIGINT PRIMARY KEY, data TEXT NOT NULL, ts BIGINT NOT NULL)', [], PG_DATABASE);
        await master.sql(`INSERT INTO db00001.bulk SELECT g, '{"pad":"' || repeat(md5(g::text), 8) || '"}', g FROM generate_series(1, 50000) g`, [], PG_DATABASE);
        const { source } = openExportSource({ dir: fx.dir });
        try {
          const shard = (await source.shards()).shards.find((s) => s.shard === 1)!;
          const count = async (): Promise<number> => {
            const r = await source.open(shard, 'bulk', 1000);
            let n = 0;
            await r?.objects('bulk', undefined, async (page) => void (n += Array.isArray(page) ? page.length : page.count));
            await r?.close();
            return n;
          };
          await until('the standby to hold the 50,000 rows', async () => (await count()) === 50_000);
          const reader = (await source.open(shard, 'bulk', 1000))!;
          await assert.rejects(reader.objects('bulk', undefined, async () => {
            throw new Error('disk full');
          }), /disk full/);
          await reader.close();
          assert.equal(await count(), 50_000);
        } finally {
          await source.close();
        }
      });
    }
  });
}
