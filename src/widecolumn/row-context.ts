import { modShard } from '../ids/mod-shard.js';
import type { DatasetConfig } from './dataset-config.js';
import { CELL_TAG, HEAD_TAG, escapeComponent, rowPrefix } from './key-codec.js';

/** Everything derived from (dataset, row key) that the read and write paths need. */
export interface RowContext {
  ds: DatasetConfig;
  row: string;
  shard: number;
  rowEsc: Buffer;
  cellPrefix: Buffer;
  headPrefix: Buffer;
  /** Identity for row locks and the timestamp oracle (see rowId). */
  id: string;
}

export function rowContext(ds: DatasetConfig, row: string, rowRaw: Buffer, shards: number): RowContext {
  const shard = modShard(row, shards);
  const rowEsc = escapeComponent(rowRaw);
  const headPrefix = rowPrefix(HEAD_TAG, shard, ds.id, rowEsc);
  return {
    ds,
    row,
    shard,
    rowEsc,
    cellPrefix: rowPrefix(CELL_TAG, shard, ds.id, rowEsc),
    headPrefix,
    id: rowId(ds.id, row),
  };
}

export function rowId(datasetId: number, row: string): string {
  return `${datasetId}:${row}`;
}

/** True when a cell written at `ts` is still visible at `now` (SPEC: expired if now > ts + TTL). */
export function isLive(ds: DatasetConfig, ts: number, now: number): boolean {
  return ds.ttlSeconds === 0 || now <= ts + ds.ttlSeconds * 1000;
}
