/**
 * The wide-column ENGINE interface (SPEC §6, "two engines behind one interface"): what the HTTP
 * routes, the CLI and the service use. The embedded RocksDB store (WideColumnStore) implements it;
 * a MyRocks engine implements it on the object shards' MariaDB pairs. Every implementation runs
 * the same conformance suite (test/widecolumn/engine-suite.ts, `runWideColumnSuite({ factory })`).
 *
 * Contract shared by every engine (docs/widecolumn.md has the full semantics table):
 * - Methods validate their arguments first and throw ShardKitError (INVALID_ARGUMENT,
 *   UNKNOWN_DATASET, TOO_LARGE, CLOSED, ...) with nothing changed.
 * - A Put Row, or a whole batch put/delete, is atomic: every read sees all of it or none of it.
 *   A read of one row (one page) comes from one consistent view; a batch read from one view.
 * - Compaction never removes a cell that a read could still return.
 * - Columns come back in column-name order (UTF-8 bytes), cells newest first; a page's marker
 *   resumes right after the last column of that page.
 * - After close() every call throws CLOSED; close() waits for operations in flight.
 *
 * Keep this file small and stable: other engines are built against it.
 */
import type { DatasetConfig, DatasetSettings } from './dataset-config.js';
import type { WideColumnLimits } from './limits.js';
import type { BatchGetOptions } from './read-budget.js';
import type { DeleteRowRequest, GetRowOptions, GetRowRequest, ProgressFn, PutItem, PutRowRequest, PutRowResult, RowResult } from './types.js';

/** What a compaction run did. Every engine reports these; engines may add counters of their own. */
export interface EngineCompactionReport {
  /** Cells looked at. */
  scannedCells: number;
  removedExpiredCells: number;
  removedExcessVersions: number;
  durationMs: number;
  [detail: string]: number;
}

/** What a backup wrote: `dir` holds a consistent copy of the whole engine (all datasets). */
export interface EngineBackupReport {
  dir: string;
  records: number;
  bytes: number;
  files: number;
  /** Clock time of the consistent view the backup was read from (ms). */
  snapshotAt: number;
}

export interface EngineRestoreReport {
  records: number;
  bytes: number;
  files: number;
  durationMs: number;
}

/** A Parquet export of one dataset's live cells (row_key, column, timestamp, value). */
export interface EngineExportReport {
  dataset: string;
  file: string;
  rows: number;
  cells: number;
  durationMs: number;
}

export interface WideColumnEngine {
  /** Which engine this is ('rocksdb', 'myrocks'): for logs and reports, never for branching. */
  readonly kind: string;
  readonly limits: WideColumnLimits;
  readonly closed: boolean;

  // Datasets: name -> settings (maxVersions, ttlSeconds, ...).
  listDatasets(): Promise<DatasetConfig[]>;
  /** UNKNOWN_DATASET when there is none. */
  getDataset(name: string): Promise<DatasetConfig>;
  /** Creates the dataset, or changes its settings (absent settings keep their value). */
  putDataset(name: string, settings?: DatasetSettings): Promise<{ dataset: DatasetConfig; created: boolean }>;

  // Rows.
  getRow(dataset: string, row: string, options?: GetRowOptions): Promise<RowResult>;
  /**
   * Results in request order; all rows read from one consistent view. With `maxBytes`, the read
   * stops with RESPONSE_TOO_LARGE once it has taken more (read-budget.ts).
   */
  batchGetRows(dataset: string, requests: GetRowRequest[], options?: BatchGetOptions): Promise<RowResult[]>;
  putRow(dataset: string, row: string, items: PutItem[]): Promise<PutRowResult>;
  /** Every item of every row applied atomically. */
  batchPutRows(dataset: string, rows: PutRowRequest[]): Promise<PutRowResult[]>;
  /** The given columns (every version), or the whole row. */
  deleteRow(dataset: string, row: string, columns?: string[]): Promise<void>;
  batchDeleteRows(dataset: string, rows: DeleteRowRequest[]): Promise<void>;

  // Long operations (progress through onProgress; safe while reads and writes go on).
  /** Removes expired cells and versions beyond maxVersions from storage; changes no read. */
  compact(options?: { onProgress?: ProgressFn }): Promise<EngineCompactionReport>;
  /** A consistent backup of the whole engine into `dir` (new or empty). */
  backup(dir: string, options?: { onProgress?: ProgressFn }): Promise<EngineBackupReport>;
  /** The live cells of a dataset as a Parquet file; an existing file only with overwrite. */
  exportParquet(dataset: string, file: string, options?: { overwrite?: boolean; onProgress?: ProgressFn }): Promise<EngineExportReport>;

  /** Waits for operations in flight, then releases the engine's resources. */
  close(): Promise<void>;
}

/**
 * How to reach one engine's data: opens it, and restores a backup into it while no engine has it
 * open (restore is offline: the target must be new or empty, never a live engine).
 */
export interface WideColumnEngineDriver {
  readonly kind: string;
  open(): Promise<WideColumnEngine>;
  restore(backupDir: string, options?: { onProgress?: ProgressFn }): Promise<EngineRestoreReport>;
}
