import type { DatasetConfig } from './dataset-config.js';
import type { RocksDB } from './rocksdb.js';
import type { RowContext } from './row-context.js';
import type { WideColumnSnapshot } from './snapshot.js';
import type { Logger } from './types.js';
import type { FoldResult } from './write-log.js';

/**
 * What the long jobs of the RocksDB engine (compaction, backup, Parquet export) need from the
 * store, and nothing more: they take this narrow interface instead of the store class, so they do
 * not import it (no import circle) and the store's other internals stay its own.
 */
export interface StoreInternals {
  readonly db: RocksDB;
  readonly shards: number;
  readonly clock: () => number;
  readonly logger: Logger | undefined;
  /** Runs one long operation so that close() waits for it; CLOSED once the store is closing. */
  track<T>(fn: () => Promise<T>): Promise<T>;
  /** A consistent read-only view (a RocksDB snapshot). */
  snapshot(): WideColumnSnapshot;
  /** UNKNOWN_DATASET when there is none. */
  dataset(name: string): DatasetConfig;
  datasetById(id: number): DatasetConfig | undefined;
  /** The validated context of a row key. */
  context(ds: DatasetConfig, row: unknown): RowContext;
  /** Exclusive locks on distinct rows; resolves to their release. */
  lockRows(ids: string[]): Promise<() => void>;
  /** Folds the write logs of rows whose exclusive locks the caller holds, in one batch. */
  foldRows(ctxs: RowContext[], options?: { expiredAt?: number }): Promise<FoldResult>;
}
