import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { backup, exportParquet, restore, WideColumnStore } from '../../src/widecolumn/index.js';
import { errorCode, openStore, tempDir, TestClock } from './helpers.js';

async function dump(entries: AsyncIterable<{ key: Buffer; value: Buffer }>): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  for await (const { key, value } of entries) out.push([key.toString('hex'), value.toString('hex')]);
  return out;
}

test('backup under write load, restore elsewhere: exactly what the snapshot held', async () => {
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  try {
    await store.putDataset('load', { maxVersions: 50 });
    await store.putDataset('other', { maxVersions: 1, ttlSeconds: 3600 });
    for (let i = 0; i < 500; i++) await store.putRow('load', `u${i % 40}`, [{ column: `c${i % 7}`, value: `pre${i}` }]);
    await store.putRow('other', 'x', [{ column: 'y', value: Buffer.from([0, 1, 2, 255]) }]);

    // A writer keeps going during the backup: sequential 2-row atomic batches, numbered.
    let stop = false;
    let acked = -1;
    const writer = (async () => {
      for (let i = 0; !stop; i++) {
        await store.batchPutRows('load', [{ row: `seq${i}`, items: [{ column: 'n', value: String(i) }] }, { row: `pair${i}`, items: [{ column: 'n', value: String(i) }] }]);
        await store.putRow('load', `u${i % 40}`, [{ column: `c${i % 7}`, value: `during${i}` }]);
        acked = i;
      }
    })();
    while (acked < 50) await new Promise((r) => setTimeout(r, 5));
    const snap = store.snapshot();
    const ackedAtSnapshot = acked;
    // Acknowledged after the snapshot and before the backup reads anything: must not be in it.
    await store.putRow('load', 'after-snapshot', [{ column: 'c', value: 'late' }]);
    await store.deleteRow('load', 'u1');
    const manifest = await backup(store, join(tmp.dir, 'bk'), { snapshot: snap });
    const expected = await dump(snap.entries());
    const expectedRows = await snap.batchGetRows('load', Array.from({ length: 40 }, (_, i) => ({ row: `u${i}`, versions: 50 })));
    await snap.close();
    const ackedAfterBackup = acked;
    stop = true;
    await writer;
    assert.ok(ackedAfterBackup > ackedAtSnapshot, 'writes went on after the snapshot');
    assert.equal(manifest.records, expected.length);
    assert.ok(existsSync(join(tmp.dir, 'bk', 'manifest.json')));

    const restoredDir = join(tmp.dir, 'restored', 'widecolumn');
    const report = await restore(join(tmp.dir, 'bk'), restoredDir);
    assert.equal(report.records, expected.length);
    const restored = await WideColumnStore.open(restoredDir);
    try {
      const rs = restored.snapshot();
      assert.deepEqual(await dump(rs.entries()), expected, 'every record, byte for byte');
      await rs.close();
      assert.deepEqual((await restored.listDatasets()).map((d) => [d.name, d.maxVersions, d.ttlSeconds]), [['load', 50, 0], ['other', 1, 3600]]);
      assert.deepEqual(await restored.batchGetRows('load', Array.from({ length: 40 }, (_, i) => ({ row: `u${i}`, versions: 50 }))), expectedRows);
      // Consistency: the sequential writer's rows form a prefix with no gap, pairs intact.
      const max = ackedAfterBackup + 1;
      const seq = await restored.batchGetRows('load', Array.from({ length: max + 1 }, (_, i) => ({ row: `seq${i}` })));
      const pair = await restored.batchGetRows('load', Array.from({ length: max + 1 }, (_, i) => ({ row: `pair${i}` })));
      const present = seq.map((r) => r.columns.length === 1);
      const k = present.indexOf(false);
      assert.ok(k > ackedAtSnapshot, 'everything acknowledged before the snapshot is in the backup');
      assert.ok(present.slice(k).every((p) => !p), 'no later write leaked into the backup');
      assert.deepEqual(pair.map((r) => r.columns.length === 1), present, 'atomic batches are whole');
      assert.deepEqual((await restored.getRow('other', 'x')).columns[0]!.cells[0]!.value, Buffer.from([0, 1, 2, 255]));
      assert.deepEqual((await restored.getRow('load', 'after-snapshot')).columns, []);
      assert.ok((await restored.getRow('load', 'u1')).columns.length > 0, 'a delete after the snapshot is not in the backup');
      // The restored store works for writes too.
      await restored.putRow('load', 'new', [{ column: 'c', value: 'v' }]);
    } finally {
      await restored.close();
    }

    // Refusals: non-empty targets, damaged or unfinished backups (and the target is left clean).
    assert.equal(await errorCode(backup(store, join(tmp.dir, 'bk'))), 'ALREADY_EXISTS');
    assert.equal(await errorCode(restore(join(tmp.dir, 'bk'), restoredDir)), 'ALREADY_EXISTS');
    const dataFile = join(tmp.dir, 'bk', readdirSync(join(tmp.dir, 'bk')).find((f) => f.endsWith('.kv'))!);
    const bytes = readFileSync(dataFile);
    bytes[bytes.length - 1]! ^= 0xff;
    writeFileSync(dataFile, bytes);
    const target2 = join(tmp.dir, 'restored2');
    mkdirSync(target2);
    assert.equal(await errorCode(restore(join(tmp.dir, 'bk'), target2)), 'INVALID_ARGUMENT');
    assert.deepEqual(readdirSync(target2), [], 'a failed restore leaves the target empty');
    assert.equal(await errorCode(restore(join(tmp.dir, 'nothing-here'), join(tmp.dir, 'r3'))), 'INVALID_ARGUMENT');
  } finally {
    await store.close();
    tmp.cleanup();
  }
});

test('Parquet export: live cells only (TTL, maxVersions), read back with hyparquet, equal to what Get Row returns', async () => {
  const tmp = tempDir();
  const clock = new TestClock();
  const store = await openStore(tmp.dir, { clock: clock.now });
  try {
    await store.putDataset('seq', { maxVersions: 3, ttlSeconds: 3600 });
    await store.putDataset('noise', { maxVersions: 1 });
    const rows = ['user1', 'user2', 'é😀', 'a\u0000b', 'zz'];
    for (const [n, row] of rows.entries()) {
      for (let v = 0; v < 5; v++) await store.putRow('seq', row, [{ column: 'pin', value: `p${n}-${v}`, timestamp: clock.t - 1000 * v }, { column: 'click', value: Buffer.from([n, v, 0xff]), timestamp: clock.t - 1000 * v }]);
      await store.putRow('seq', row, [{ column: 'expired', value: 'old', timestamp: clock.t - 3_601_000 }]);
      await store.putRow('noise', row, [{ column: 'n', value: 'not exported' }]);
    }
    const file = join(tmp.dir, 'seq.parquet');
    const report = await exportParquet(store, 'seq', file);
    assert.equal(report.cells, rows.length * 2 * 3);
    assert.equal(report.rows, rows.length);
    const records = await parquetReadObjects({ file: await asyncBufferFromFile(file), utf8: false }) as Array<{ row_key: string; column: string; timestamp: Date | number | bigint; value: Uint8Array }>;
    const got = records.map((r) => [r.row_key, r.column, Number(r.timestamp instanceof Date ? r.timestamp.getTime() : r.timestamp), Buffer.from(r.value).toString('hex')]).sort();
    const want: Array<[string, string, number, string]> = [];
    for (const row of rows) {
      const r = await store.getRow('seq', row, { versions: 100 });
      for (const c of r.columns) for (const cell of c.cells) want.push([row, c.column, cell.timestamp, cell.value.toString('hex')]);
    }
    assert.deepEqual(got, want.sort());
    assert.equal(await errorCode(exportParquet(store, 'seq', file)), 'ALREADY_EXISTS');
    await exportParquet(store, 'seq', file, { overwrite: true });
    assert.equal(await errorCode(exportParquet(store, 'missing', join(tmp.dir, 'x.parquet'))), 'UNKNOWN_DATASET');
    assert.equal(existsSync(join(tmp.dir, 'x.parquet')), false);
  } finally {
    await store.close();
    tmp.cleanup();
  }
});

test('Parquet export: concurrent exports to one new name: one file, complete, the others ALREADY_EXISTS, no temp files left', async () => {
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  try {
    await store.putDataset('seq', { maxVersions: 1 });
    for (let i = 0; i < 300; i++) await store.putRow('seq', `row${i}`, [{ column: 'c', value: `v${i}` }]);
    const out = join(tmp.dir, 'out');
    mkdirSync(out);
    const file = join(out, 'seq.parquet');
    const results = await Promise.allSettled([1, 2, 3].map(() => exportParquet(store, 'seq', file)));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1, JSON.stringify(results.map((r) => r.status === 'rejected' ? String(r.reason) : 'ok')));
    for (const r of results) if (r.status === 'rejected') assert.equal((r.reason as { code?: string }).code, 'ALREADY_EXISTS');
    const records = await parquetReadObjects({ file: await asyncBufferFromFile(file) }) as Array<{ row_key: string }>;
    assert.equal(records.length, 300);
    assert.deepEqual(readdirSync(out), ['seq.parquet']);
    // With overwrite, concurrent exports all succeed and leave one complete file.
    const again = await Promise.allSettled([1, 2].map(() => exportParquet(store, 'seq', file, { overwrite: true })));
    assert.deepEqual(again.map((r) => r.status), ['fulfilled', 'fulfilled']);
    assert.equal((await parquetReadObjects({ file: await asyncBufferFromFile(file) })).length, 300);
    assert.deepEqual(readdirSync(out), ['seq.parquet']);
  } finally {
    await store.close();
    tmp.cleanup();
  }
});
