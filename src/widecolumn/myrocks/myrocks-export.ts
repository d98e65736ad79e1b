import type { DatasetConfig } from '../dataset-config.js';
import type { EngineExportReport } from '../engine.js';
import type { ProgressFn } from '../types.js';
import { writeExportFile } from '../parquet-export.js';

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
  let cells = 0;
  let rows = 0;
  let done = 0;
  const target = await writeExportFile(ds.name, file, now, options.overwrite === true, async (append) => {
    await source(async (_shard, list) => {
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
          await append({ row_key: c.row_key.toString('utf8'), column: c.col.toString('utf8'), timestamp: ts, value: c.v });
          cells++;
        }
        if (newRow) lastRow = c.row_key;
        lastCol = c.col;
      }
      options.onProgress?.({ phase: 'export', done: ++done, total: 0 });
    });
  });
  return { dataset: ds.name, file: target, rows, cells, durationMs: Date.now() - started };
}
