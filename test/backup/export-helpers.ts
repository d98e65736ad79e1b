/** What the export tests share: reading the files with two independent readers and comparing them with what the kit wrote. */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import type { KitObject } from '../../src/kit/kit-object.js';

export type Row = Record<string, unknown>;

/** Every row of every shard file in `dir` (hyparquet), each with the file it came from. */
export async function readExport(dir: string): Promise<Array<Row & { file: string }>> {
  const out: Array<Row & { file: string }> = [];
  for (const name of parquetFiles(dir)) {
    // The files are GZIP-compressed (util/parquet-file.ts); hyparquet decompresses only Snappy itself.
    const rows = await parquetReadObjects({ file: await asyncBufferFromFile(join(dir, name)), compressors: { GZIP: (input: Uint8Array) => new Uint8Array(gunzipSync(input)) } });
    for (const r of rows) out.push({ ...(r as Row), file: name });
  }
  return out;
}

/** The final-named files of an export directory (never a `.partial`). */
export function parquetFiles(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((n) => n.endsWith('.parquet')).sort() : [];
}

/** Temp files an exporter left. */
export function partials(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((n) => n.endsWith('.partial')) : [];
}

/** The outcome users rely on: each object the kit wrote is in the export exactly once, with its values. */
export function assertObjectsExported(rows: Row[], expected: ReadonlyArray<{ obj: KitObject; deleted?: boolean }>, type: string): void {
  const byId = new Map<string, Row[]>();
  for (const r of rows) byId.set(String(r.id), [...(byId.get(String(r.id)) ?? []), r]);
  assert.equal(rows.length, expected.length, 'as many rows as objects written');
  for (const { obj, deleted } of expected) {
    const got = byId.get(obj.id.toString());
    assert.equal(got?.length, 1, `object ${obj.id} exported once`);
    const r = got![0]!;
    assert.equal(r.id, obj.id, 'id as INT64');
    assert.equal(r.shard, obj.shard);
    assert.equal(r.type, type);
    assert.equal((r.created_at as Date).getTime(), obj.createdAt.getTime(), 'created_at as stored');
    assert.equal(r.deleted, deleted === true);
    if (deleted !== true) assert.deepEqual(JSON.parse(String(r.data)), obj.data, 'data as stored');
    assert.equal(r.file, `db${String(obj.shard).padStart(5, '0')}.parquet`, 'in its shard\'s file');
  }
}

/** A DuckDB connection (an independent reader Spark-like engines agree with). */
export async function duckdb(): Promise<{ all(sql: string): Promise<unknown[][]>; close(): void }> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  return {
    all: async (sql) => (await conn.runAndReadAll(sql)).getRows() as unknown[][],
    close: () => {
      conn.closeSync();
      db.closeSync();
    },
  };
}
