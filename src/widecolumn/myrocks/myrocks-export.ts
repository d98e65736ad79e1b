import { existsSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import type { ParquetWriter } from '@dsnp/parquetjs';
import { ShardKitError } from '../../errors.js';
import type { DatasetConfig } from '../dataset-config.js';
import type { EngineExportReport } from '../engine.js';
import type { ProgressFn } from '../types.js';
import { publish } from '../parquet-export.js';

/** One cell as an export or backup reads it from a shard table. */
export interface ShardCell {
  row_key: Buffer;
  col: Buffer;
  nts: string | number;
  v: Buffer;
}

/** What an export needs from the engine: the shards' cells in key order, host by host, each host from one snapshot. */
export type ShardCellSource = (onShard: (shard: number, cells: ShardCell[]) => Promise<void>) => Promise<{ shards: number }>;

/**
 * The Parquet export of the embedded engine (parquet-export.ts), same columns (`row_key`,
 * `column`, `timestamp`, `value`), from every shard of the dataset into one file: live cells only
 * (within maxVersions, unexpired at `now`). The file appears under its name only when complete.
 */
export async function exportShardsToParquet(ds: DatasetConfig, file: string, now: number, source: ShardCellSource, options: { overwrite?: boolean; onProgress?: ProgressFn } = {}): Promise<EngineExportReport> {
  const started = Date.now();
  const target = resolve(file);
  if (!options.overwrite && existsSync(target)) throw new ShardKitError('ALREADY_EXISTS', `${target} exists; remove it or pass overwrite`);
  const tmp = `${target}.${process.pid}-${randomBytes(4).toString('hex')}.partial`;
  let writer: ParquetWriter | null = null;
  let cells = 0;
  let rows = 0;
  let done = 0;
  try {
    const parquet = (await import('@dsnp/parquetjs')).default;
    const schema = new parquet.ParquetSchema({
      row_key: { type: 'UTF8', compression: 'SNAPPY' },
      column: { type: 'UTF8', compression: 'SNAPPY' },
      timestamp: { type: 'TIMESTAMP_MILLIS', compression: 'SNAPPY' },
      value: { type: 'BYTE_ARRAY', compression: 'SNAPPY' },
    });
    writer = await parquet.ParquetWriter.openFile(schema, tmp);
    writer.setMetadata('shardkit.dataset', ds.name);
    writer.setMetadata('shardkit.snapshotAt', String(now));
    const w = writer;
    const { shards } = await source(async (_shard, list) => {
      let lastRow: Buffer | null = null;
      let lastCol: Buffer | null = null;
      let rank = 0;
      let rowCounted = false;
      for (const c of list) {
        const newRow = !lastRow || !c.row_key.equals(lastRow);
        if (newRow) rowCounted = false;
        if (newRow || !c.col.equals(lastCol!)) rank = 0;
        const ts = -Number(c.nts);
        rank++;
        const live = rank <= ds.maxVersions && (ds.ttlSeconds === 0 || now <= ts + ds.ttlSeconds * 1000);
        if (live) {
          if (!rowCounted) rows++;
          rowCounted = true;
          await w.appendRow({ row_key: c.row_key.toString('utf8'), column: c.col.toString('utf8'), timestamp: ts, value: c.v });
          cells++;
        }
        if (newRow) lastRow = c.row_key;
        lastCol = c.col;
      }
      options.onProgress?.({ phase: 'export', done: ++done, total: 0 });
    });
    void shards;
    await writer.close();
    writer = null;
    await publish(tmp, target, options.overwrite === true);
  } catch (err) {
    if (writer) await writer.close().catch(() => undefined);
    rmSync(tmp, { force: true });
    throw err;
  }
  return { dataset: ds.name, file: target, rows, cells, durationMs: Date.now() - started };
}
