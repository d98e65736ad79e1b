import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetMetadataAsync } from 'hyparquet';
import { isShardKitError } from '../../src/errors.js';
import { removeStalePartials, removeStalePartialsIn, writeParquetColumns, type ParquetColumn } from '../../src/util/parquet-file.js';
import { duckdb, readExport } from './export-helpers.js';

const COLUMNS: ParquetColumn[] = [
  { name: 'n', type: 'INT64' },
  { name: 'at', type: 'TIMESTAMP' },
  { name: 'text', type: 'STRING', unique: true },
  { name: 'maybe', type: 'DOUBLE', nullable: true },
];

const batch = (from: number, count: number) => {
  const ns = Array.from({ length: count }, (_, i) => from + i);
  return { n: ns.map(BigInt), at: ns.map((n) => new Date(1_764_000_000_000 + n)), text: ns.map((n) => `{"n":${n},"s":"é ✓ ${n}"}`), maybe: ns.map((n) => (n % 3 === 0 ? null : n / 2)) };
};

test('batches across several row groups come back in order with their types, from hyparquet and DuckDB', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-pq-'));
  try {
    const file = join(dir, 'x.parquet');
    const r = await writeParquetColumns(file, COLUMNS, async (append) => {
      for (let i = 0; i < 40; i += 5) await append(batch(i, 5));
      await append(batch(40, 0));
      await append(batch(40, 3));
    }, { rowGroupRows: 7, metadata: { 'k': 'v' } });
    assert.equal(r.rows, 43);
    const meta = await parquetMetadataAsync(await asyncBufferFromFile(file));
    assert.ok(meta.row_groups.length >= 5, `${meta.row_groups.length} row groups`);
    assert.equal(meta.key_value_metadata?.find((kv) => kv.key === 'k')?.value, 'v');
    const rows = await readExport(dir);
    assert.deepEqual(rows.map((x) => x.n), Array.from({ length: 43 }, (_, i) => BigInt(i)));
    assert.deepEqual(rows[4], { n: 4n, at: new Date(1_764_000_000_004), text: '{"n":4,"s":"é ✓ 4"}', maybe: 2, file: 'x.parquet' });
    assert.equal(rows[3]!.maybe, null);
    const db = await duckdb();
    try {
      assert.deepEqual(await db.all(`SELECT count(*), sum(n), count(maybe) FROM '${file}'`), [[43n, 903n, 28n]]);
    } finally {
      db.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a fill that fails leaves neither the file nor its temp; an existing name is refused (ALREADY_EXISTS)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-pq-'));
  try {
    const file = join(dir, 'x.parquet');
    await assert.rejects(writeParquetColumns(file, COLUMNS, async (append) => {
      await append(batch(0, 5));
      throw new Error('the source went away');
    }), /the source went away/);
    assert.deepEqual(readdirSync(dir), []);
    writeFileSync(file, 'someone else\'s');
    await assert.rejects(writeParquetColumns(file, COLUMNS, async () => undefined), (err) => isShardKitError(err, 'ALREADY_EXISTS'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('removeStalePartials removes the temp files of dead writers only', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-pq-'));
  try {
    const target = join(dir, 'db00001.parquet');
    const dead = `${target}.999999999-0a1b.partial`;
    const mine = `${target}.${process.pid}-0a1b.partial`;
    const other = join(dir, 'db00010.parquet.999999999-0a1b.partial');
    for (const f of [dead, mine, other]) writeFileSync(f, '');
    assert.equal(removeStalePartials(target), 1);
    assert.deepEqual([existsSync(dead), existsSync(mine), existsSync(other)], [false, true, true]);
    // A whole run's directory in one listing: every dead writer's temp file, of any target.
    const done = join(dir, 'db00002.parquet');
    writeFileSync(dead, '');
    writeFileSync(done, 'complete');
    assert.equal(removeStalePartialsIn(dir), 2);
    assert.deepEqual([existsSync(dead), existsSync(mine), existsSync(other), existsSync(done)], [false, true, false, true]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
