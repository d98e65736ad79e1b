import { existsSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ParquetSchema, ParquetWriter } from '@dsnp/parquetjs';
import { ShardKitError } from '../errors.js';
import { importOptional } from '../util/optional-dependency.js';
import { partialName, publish } from '../util/parquet-file.js';
import { CELL_TAG, datasetShardRange, parseCellKey, decodeEscaped } from './key-codec.js';
import { isLive } from './row-context.js';
import type { ProgressFn } from './types.js';
import type { StoreInternals } from './store-internals.js';

export interface ExportReport {
  dataset: string;
  file: string;
  rows: number;
  cells: number;
  durationMs: number;
}

/**
 * The Parquet schema of an export: one record per live cell. A @dsnp/parquetjs `ParquetSchema`,
 * typed as `object` in what we publish: that package's declarations import `json-schema` types
 * it does not depend on, so naming it here would break consumers' type checks without
 * skipLibCheck.
 */
export function exportSchema(): Promise<object> {
  return parquetSchema();
}

/** The finished file takes its name (shared with the object fleet's export: util/parquet-file.ts). */
export { publish };

/** @dsnp/parquetjs is loaded on first use (heavy). */
async function parquetSchema(): Promise<ParquetSchema> {
  const parquet = (await importOptional('@dsnp/parquetjs', 'Parquet export', () => import('@dsnp/parquetjs'))).default;
  return new parquet.ParquetSchema({
    row_key: { type: 'UTF8', compression: 'SNAPPY' },
    column: { type: 'UTF8', compression: 'SNAPPY' },
    timestamp: { type: 'TIMESTAMP_MILLIS', compression: 'SNAPPY' },
    value: { type: 'BYTE_ARRAY', compression: 'SNAPPY' },
  });
}

/**
 * Writes the live cells of a dataset (unexpired, within maxVersions: what reads return) from one
 * RocksDB snapshot as Parquet, columns `row_key`, `column`, `timestamp`, `value`, in shard then
 * key order. The file appears under its name only when complete.
 */
export function exportParquet(store: StoreInternals, dataset: string, file: string, options: { overwrite?: boolean; onProgress?: ProgressFn } = {}): Promise<ExportReport> {
  return store.track(() => runExport(store, dataset, file, options));
}

/** One record of an export file. */
export interface ExportCell {
  row_key: string;
  column: string;
  timestamp: number;
  value: Buffer;
}

/**
 * Writes an export file for any engine: `fill` appends the cells to a temp file of its own (two
 * exports to one name must not share, and delete, one), which takes the name only when complete.
 * Returns the absolute path.
 */
export async function writeExportFile(dataset: string, file: string, snapshotAt: number, overwrite: boolean, fill: (append: (cell: ExportCell) => Promise<void>) => Promise<void>): Promise<string> {
  const target = resolve(file);
  if (!overwrite && existsSync(target)) throw new ShardKitError('ALREADY_EXISTS', `${target} exists; remove it or pass overwrite`);
  const tmp = partialName(target);
  let writer: ParquetWriter | null = null;
  try {
    const parquet = (await importOptional('@dsnp/parquetjs', 'Parquet export', () => import('@dsnp/parquetjs'))).default;
    writer = await parquet.ParquetWriter.openFile(await parquetSchema(), tmp);
    writer.setMetadata('shardkit.dataset', dataset);
    writer.setMetadata('shardkit.snapshotAt', String(snapshotAt));
    const w = writer;
    await fill((cell) => w.appendRow(cell as unknown as Record<string, unknown>));
    await writer.close();
    writer = null;
    await publish(tmp, target, overwrite);
  } catch (err) {
    if (writer) await writer.close().catch(() => undefined);
    rmSync(tmp, { force: true });
    throw err;
  }
  return target;
}

async function runExport(store: StoreInternals, dataset: string, file: string, options: { overwrite?: boolean; onProgress?: ProgressFn }): Promise<ExportReport> {
  const started = Date.now();
  const ds = store.dataset(dataset);
  const snap = store.snapshot();
  const now = snap.takenAt;
  let cells = 0;
  let rows = 0;
  let target: string;
  try {
    target = await writeExportFile(ds.name, file, now, options.overwrite === true, async (append) => {
      for (let shard = 0; shard < store.shards; shard++) {
        let lastRow: Buffer | null = null;
        let lastCol: Buffer | null = null;
        let rank = 0;
        let rowCounted = false;
        let rowKey = '';
        let column = '';
        for await (const { key, value } of snap.session.iterator(datasetShardRange(CELL_TAG, shard, ds.id), { capacity: 512 })) {
          const k = parseCellKey(key);
          if (!lastRow || !k.rowEsc.equals(lastRow)) {
            lastRow = Buffer.from(k.rowEsc);
            rowKey = decodeEscaped(lastRow).toString('utf8');
            lastCol = null;
            rowCounted = false;
          }
          if (!lastCol || !k.colEsc.equals(lastCol)) {
            lastCol = Buffer.from(k.colEsc);
            column = decodeEscaped(lastCol).toString('utf8');
            rank = 0;
          }
          rank++;
          if (rank > ds.maxVersions || !isLive(ds, k.ts, now)) continue;
          await append({ row_key: rowKey, column, timestamp: k.ts, value });
          cells++;
          if (!rowCounted) {
            rowCounted = true;
            rows++;
          }
        }
        if (shard % 64 === 63 || shard === store.shards - 1) options.onProgress?.({ phase: 'export', done: shard + 1, total: store.shards });
      }
    });
  } finally {
    await snap.close();
  }
  const report = { dataset: ds.name, file: target, rows, cells, durationMs: Date.now() - started };
  store.logger?.info({ ...report }, 'wide-column export written');
  return report;
}
