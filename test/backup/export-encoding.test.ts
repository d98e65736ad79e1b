import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pinterestId } from '../../src/ids/index.js';
import { declaredFields, objectBatch, objectColumns } from '../../src/ops/backup/export-columns.js';
import { copyObjectPages } from '../../src/ops/backup/export-pg-copy.js';
import type { StoredObject } from '../../src/ops/backup/export-sources.js';
import { isShardKitError } from '../../src/errors.js';
import { writeParquetColumns } from '../../src/util/parquet-file.js';
import { mulberry32 } from '../../src/util/prng.js';
import { duckdb, readExport } from './export-helpers.js';

const TYPE = { name: 'pin', id: 3 };
const SCHEMA = { type: 'object', properties: { title: { type: 'string' }, n: { type: 'integer' }, score: { type: ['number', 'null'] }, ok: { type: 'boolean' } } };

/** Rows as a driver hands them: some data as text, some as the UTF-8 bytes, some soft-deleted, some with fields missing or mistyped. */
function stored(count: number): StoredObject[] {
  return Array.from({ length: count }, (_, i) => {
    const doc = i % 7 === 0 ? { title: 7, pad: 'x'.repeat(300) } : { title: `t ${i} é ✓ 🎉`, n: i * 3, score: i % 5 === 0 ? null : i / 4, ok: i % 2 === 0, active: i % 11 === 0 ? false : true, pad: 'y'.repeat(300) };
    const text = JSON.stringify(doc);
    return { localId: i + 1, data: i % 2 === 0 ? Buffer.from(text) : text, ts: 1_764_000_000_000 + i };
  });
}

test('object rows become the same columns whether data came as text, bytes or a binary COPY page, with exact IDs above 2^53 (shard 40000), across pages and row groups', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-pq-enc-'));
  try {
    const fields = declaredFields(SCHEMA);
    const rows = stored(9_000);
    for (const shard of [5, 40_000]) {
      // 9,000 rows of ~350 bytes: several 1 MiB data pages, and three row groups of 4,000.
      await writeParquetColumns(join(dir, `db${shard}.parquet`), objectColumns(fields), async (append) => {
        for (let i = 0; i < rows.length; i += 1_000) await append(objectBatch(rows.slice(i, i + 1_000), shard, TYPE, fields));
      }, { rowGroupRows: 4_000 });
    }
    // The PostgreSQL reader's pages: columns parsed from a binary COPY, data in PLAIN form.
    const copy = copyBinary(rows.map((r) => ({ localId: r.localId, data: r.data.toString(), ts: r.ts })));
    await writeParquetColumns(join(dir, 'db7.parquet'), objectColumns(fields), async (append) => {
      await copyObjectPages(chunks(copy, () => 65_536), 1_000, async (page) => append(objectBatch(page, 7, TYPE, fields)));
    }, { rowGroupRows: 4_000 });
    const got = await readExport(dir);
    assert.equal(got.length, 27_000);
    for (const r of got) {
      const shard = r.file === 'db5.parquet' ? 5 : r.file === 'db7.parquet' ? 7 : 40_000;
      const i = Number(r.local_id) - 1;
      const doc = JSON.parse(rows[i]!.data.toString()) as Record<string, unknown>;
      assert.equal(r.id, pinterestId.encode({ shard, type: TYPE.id, localId: i + 1 }), `id of shard ${shard} row ${i}`);
      assert.equal(r.shard, shard);
      assert.equal(r.type, 'pin');
      assert.deepEqual(r.created_at, new Date(1_764_000_000_000 + i));
      assert.equal(r.data, rows[i]!.data.toString());
      assert.equal(r.deleted, doc.active === false);
      assert.equal(r.data_title, typeof doc.title === 'string' ? doc.title : null);
      assert.equal(r.data_n, typeof doc.n === 'number' ? BigInt(doc.n) : null);
      assert.equal(r.data_score, typeof doc.score === 'number' ? doc.score : null);
      assert.equal(r.data_ok, typeof doc.ok === 'boolean' ? doc.ok : null);
    }
    const db = await duckdb();
    try {
      const high = pinterestId.encode({ shard: 40_000, type: TYPE.id, localId: 1 });
      assert.ok(high > BigInt(Number.MAX_SAFE_INTEGER));
      const docs = rows.map((r) => JSON.parse(r.data.toString()) as Record<string, unknown>);
      const deleted = BigInt(docs.filter((d) => d.active === false).length);
      const titled = BigInt(docs.filter((d) => typeof d.title === 'string').length);
      assert.ok(deleted > 0n && titled > 0n && titled < 9_000n);
      assert.deepEqual(await db.all(`SELECT min(id), max(id), count(*) FILTER (WHERE deleted), count(data_title) FROM '${join(dir, 'db40000.parquet')}'`), [[high, high + 8_999n, deleted, titled]]);
      // The footer's statistics bound every row group's IDs (readers skip row groups by them).
      const stats = await db.all(`SELECT stats_min_value, stats_max_value FROM parquet_metadata('${join(dir, 'db40000.parquet')}') WHERE path_in_schema = 'id' ORDER BY row_group_id`);
      assert.deepEqual(stats, [[String(high), String(high + 3_999n)], [String(high + 4_000n), String(high + 7_999n)], [String(high + 8_000n), String(high + 8_999n)]]);
    } finally {
      db.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A binary COPY stream of (local_id int8, data text, ts int8) rows, with a header extension as the format allows. */
function copyBinary(rows: ReadonlyArray<{ localId: number; data: string; ts: number }>): Buffer {
  const parts: Buffer[] = [Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1')];
  const head = Buffer.alloc(8 + 3);
  head.writeUInt32BE(0, 0);
  head.writeUInt32BE(3, 4);
  parts.push(head);
  for (const r of rows) {
    const data = Buffer.from(r.data);
    const b = Buffer.alloc(2 + 12 + 4 + data.length + 12);
    b.writeInt16BE(3, 0);
    b.writeInt32BE(8, 2);
    b.writeBigInt64BE(BigInt(r.localId), 6);
    b.writeInt32BE(data.length, 14);
    data.copy(b, 18);
    b.writeInt32BE(8, 18 + data.length);
    b.writeBigInt64BE(BigInt(r.ts), 22 + data.length);
    parts.push(b);
  }
  const trailer = Buffer.alloc(2);
  trailer.writeInt16BE(-1);
  parts.push(trailer);
  return Buffer.concat(parts);
}

async function* chunks(b: Buffer, sizes: () => number): AsyncGenerator<Buffer> {
  for (let at = 0; at < b.length;) {
    const n = Math.min(b.length - at, sizes());
    // A copy, as a socket hands over fresh bytes: the parser rewrites its chunks in place.
    yield Buffer.from(b.subarray(at, at + n));
    at += n;
  }
}

test('binary COPY rows are parsed whole however the stream is cut, in pages of the asked size; a cut-off stream is an error', async () => {
  const seed = Number(process.env.SEED ?? Date.now() % 1_000_000);
  console.log(`seed ${seed} (SEED=${seed} to replay)`);
  const rnd = mulberry32(seed);
  const rows = Array.from({ length: 500 }, (_, i) => ({ localId: 2 ** 36 - 500 + i, data: JSON.stringify({ i, s: 'é✓🎉'.repeat(i % 9) }), ts: 1_764_000_000_000 + i * 1_000 }));
  const bytes = copyBinary(rows);
  for (const [label, size] of [['1-byte', () => 1], ['random', () => 1 + Math.floor(rnd() * 200)], ['whole', () => bytes.length]] as const) {
    const pages: number[] = [];
    const got: Array<{ localId: number; data: string; ts: number }> = [];
    await copyObjectPages(chunks(bytes, size), 64, async (page) => {
      pages.push(page.count);
      for (let i = 0; i < page.count; i++) got.push({ localId: page.localId[i]!, data: page.data.value(i).toString(), ts: page.ts[i]! });
    });
    assert.deepEqual(got, rows, label);
    assert.deepEqual(pages, [...Array.from({ length: 7 }, () => 64), 52], label);
  }
  await assert.rejects(copyObjectPages(chunks(bytes.subarray(0, bytes.length - 40), () => 100), 64, async () => undefined), (err) => isShardKitError(err, 'INTERNAL'));
});
