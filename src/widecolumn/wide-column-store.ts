import { resolve } from 'node:path';
import { openRocks, type RocksDB, type WriteBatch } from './rocksdb.js';
import { backup } from './backup.js';
import { compact, type CompactionReport } from './compaction.js';
import type { StoreInternals } from './store-internals.js';
import type { EngineBackupReport, EngineExportReport, WideColumnEngine } from './engine.js';
import { exportParquet } from './parquet-export.js';
import { ShardKitError } from '../errors.js';
import {
  checkDatasetName,
  decodeStoredDataset,
  DEFAULT_MAX_VERSIONS,
  DEFAULT_TTL_SECONDS,
  parseDatasetSettings,
  type DatasetConfig,
  type DatasetSettings,
} from './dataset-config.js';
import {
  cellKey,
  concat,
  escapeComponent,
  floorKey,
  encodeLog,
  logKey,
  META_DATASET,
  META_FLOOR,
  META_STORE,
  metaKey,
  metaRange,
  prefixEnd,
  readInvertedTimestamp,
} from './key-codec.js';
import { checkCount, checkName, DEFAULT_LIMITS, type WideColumnLimits } from './limits.js';
import type { RowContext } from './row-context.js';
import { RowLocks } from './row-locks.js';
import { readRow, type ReadQuery } from './row-reader.js';
import { BOUNDED_ROW_PARALLEL, budgetOf, inGroups, type BatchGetOptions } from './read-budget.js';
import { WideColumnSnapshot } from './snapshot.js';
import { TimestampOracle } from './timestamp-oracle.js';
import { foldLog, type FoldResult } from './write-log.js';
import { FoldScheduler } from './fold-scheduler.js';
import { RequestChecks, uniqueSorted, type PreparedItem, type PreparedRow } from './request-checks.js';
import type { DeleteRowRequest, GetRowOptions, GetRowRequest, Logger, ProgressFn, PutItem, PutRowRequest, PutRowResult, RowResult } from './types.js';

export interface WideColumnStoreOptions {
  /** Milliseconds since the epoch; injectable for tests. */
  clock?: () => number;
  limits?: Partial<WideColumnLimits>;
  /** How far ahead of the written write-log sequence numbers the persisted floor is kept (default 1000 ms). */
  timestampLeaseMs?: number;
  /** Logical shards (mod shard of the row key); fixed when the store is created (default 4096). */
  shards?: number;
  logger?: Logger;
  /** Puts to a row after which its write log is folded into head records (default 16). */
  foldAfter?: number;
  /** @internal Unwanted cells a scan steps over before it uses the head region (default 32; tests use 0). */
  scanSkipBudget?: number;
}

interface StoreInfo {
  format: 1;
  shards: number;
  createdAt: number;
}

export const DEFAULT_SHARDS = 4096;
const DEFAULT_FOLD_AFTER = 16;
const DEFAULT_SKIP_BUDGET = 32;

const EMPTY = Buffer.alloc(0);

/**
 * The wide-column engine: datasets → rows → columns → cells on one RocksDB. See
 * docs/widecolumn.md for the key format and the guarantees.
 */
export class WideColumnStore implements WideColumnEngine, StoreInternals {
  readonly kind = 'rocksdb';
  readonly path: string;
  readonly shards: number;
  readonly limits: WideColumnLimits;
  private readonly datasets = new Map<string, DatasetConfig>();
  private readonly datasetsById = new Map<number, DatasetConfig>();
  private readonly locks = new RowLocks();
  /** Argument checks, done before anything is stored. */
  private readonly checks: RequestChecks;
  /** Operations in flight; close() waits until it is 0. */
  private active = 0;
  private onIdle: (() => void) | null = null;
  private closing: Promise<void> | null = null;
  private readonly snapshots = new Set<WideColumnSnapshot>();
  private datasetWrites: Promise<unknown> = Promise.resolve();
  /** Background folds of the write logs, and what reads remember between calls. */
  private readonly folds: FoldScheduler;

  private constructor(
    /** Part of StoreInternals (store-internals.ts), for the engine's own jobs. */ readonly db: RocksDB,
    path: string,
    shards: number,
    limits: WideColumnLimits,
    private readonly oracle: TimestampOracle,
    readonly clock: () => number,
    readonly logger: Logger | undefined,
    foldAfter: number,
    skipBudget: number,
  ) {
    this.folds = new FoldScheduler({
      closing: () => this.closing !== null,
      enter: () => this.active++,
      leave: () => this.leave(),
      lockRows: (ids) => this.lockRows(ids),
      foldRows: (ctxs) => this.foldRows(ctxs),
      logger,
    }, foldAfter, skipBudget);
    this.path = path;
    this.shards = shards;
    this.limits = limits;
    this.checks = new RequestChecks(limits, shards, clock);
  }

  /** Opens (creating if needed) the store in `path`; STORE_LOCKED when another process has it. */
  static async open(path: string, options: WideColumnStoreOptions = {}): Promise<WideColumnStore> {
    const db = await openRocks(path);
    try {
      const clock = options.clock ?? Date.now;
      const infoBytes = await db.get(metaKey(META_STORE));
      let info: StoreInfo;
      if (infoBytes) {
        info = JSON.parse(infoBytes.toString('utf8')) as StoreInfo;
        if (options.shards !== undefined && options.shards !== info.shards) {
          throw new ShardKitError('INVALID_CONFIG', `the wide-column store in ${path} was created with ${info.shards} shards; it cannot be opened with ${options.shards}`);
        }
      } else {
        const shards = options.shards ?? DEFAULT_SHARDS;
        if (!Number.isSafeInteger(shards) || shards < 1 || shards > 0xffff) throw new ShardKitError('INVALID_CONFIG', `shards must be an integer in 1..65535, got ${shards}`);
        info = { format: 1, shards, createdAt: clock() };
        await db.put(metaKey(META_STORE), Buffer.from(JSON.stringify(info)));
      }
      const floor = await db.peek(metaRange(META_FLOOR));
      const floorAtOpen = floor ? readInvertedTimestamp(floor.key, 3) : 0;
      const limits = { ...DEFAULT_LIMITS, ...options.limits };
      const foldAfter = options.foldAfter ?? DEFAULT_FOLD_AFTER;
      if (!Number.isSafeInteger(foldAfter) || foldAfter < 1) throw new ShardKitError('INVALID_CONFIG', `foldAfter must be a positive integer, got ${foldAfter}`);
      const store = new WideColumnStore(db, path, info.shards, limits, new TimestampOracle(clock, options.timestampLeaseMs ?? 1000, floorAtOpen), clock, options.logger, foldAfter, options.scanSkipBudget ?? DEFAULT_SKIP_BUDGET);
      for await (const { value } of db.iterator(metaRange(META_DATASET))) {
        const d = decodeStoredDataset(value);
        store.datasets.set(d.name, d);
        store.datasetsById.set(d.id, d);
      }
      return store;
    } catch (err) {
      await db.close().catch(() => undefined);
      throw err;
    }
  }

  get closed(): boolean {
    return this.closing !== null;
  }

  /** Waits for operations in flight, then closes RocksDB. */
  close(): Promise<void> {
    if (!this.closing) {
      this.closing = (async () => {
        if (this.active > 0) await new Promise<void>((resolve) => (this.onIdle = resolve));
        for (const snap of [...this.snapshots]) await snap.close();
        await this.db.close();
      })();
    }
    return this.closing;
  }

  /** Part of StoreInternals (store-internals.ts): Runs one long operation (compaction, backup, export) so close() waits for it. */
  async track<T>(fn: () => Promise<T>): Promise<T> {
    this.enter();
    try {
      return await fn();
    } finally {
      this.leave();
    }
  }

  private enter(): void {
    if (this.closing) throw new ShardKitError('CLOSED', 'the wide-column store is closed');
    this.active++;
  }

  private leave(): void {
    if (--this.active === 0 && this.onIdle) {
      this.onIdle();
      this.onIdle = null;
    }
  }

  /** A consistent read-only view; close it when done (close() of the store closes it too). */
  snapshot(): WideColumnSnapshot {
    if (this.closing) throw new ShardKitError('CLOSED', 'the wide-column store is closed');
    const snap: WideColumnSnapshot = new WideColumnSnapshot(this, this.db.snapshot(), this.clock(), () => this.snapshots.delete(snap));
    this.snapshots.add(snap);
    return snap;
  }

  // ---- datasets -------------------------------------------------------------------------------

  async listDatasets(): Promise<DatasetConfig[]> {
    return [...this.datasets.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((d) => ({ ...d }));
  }

  async getDataset(name: string): Promise<DatasetConfig> {
    return { ...this.dataset(name) };
  }

  /** Creates the dataset, or changes its settings (absent settings keep their value). */
  async putDataset(name: string, settings: DatasetSettings = {}): Promise<{ dataset: DatasetConfig; created: boolean }> {
    checkDatasetName(name);
    const s = parseDatasetSettings(settings);
    // Serialized so two creations cannot take the same id.
    const run = this.datasetWrites.then(() => this.track(async () => {
      const now = this.clock();
      const existing = this.datasets.get(name);
      let next: DatasetConfig;
      if (existing) {
        if (s.latestIndex !== undefined && s.latestIndex !== existing.latestIndex) {
          throw new ShardKitError('INVALID_ARGUMENT', `latestIndex of dataset ${name} is fixed when it is created (it is ${existing.latestIndex})`);
        }
        next = { ...existing, maxVersions: s.maxVersions ?? existing.maxVersions, ttlSeconds: s.ttlSeconds ?? existing.ttlSeconds, updatedAt: now };
      } else {
        let id = 0;
        for (const d of this.datasets.values()) id = Math.max(id, d.id);
        next = { name, id: id + 1, maxVersions: s.maxVersions ?? DEFAULT_MAX_VERSIONS, ttlSeconds: s.ttlSeconds ?? DEFAULT_TTL_SECONDS, latestIndex: s.latestIndex ?? true, createdAt: now, updatedAt: now };
      }
      await this.db.put(metaKey(META_DATASET, Buffer.from(name)), Buffer.from(JSON.stringify(next)));
      this.datasets.set(name, next);
      this.datasetsById.set(next.id, next);
      this.logger?.info({ dataset: name, maxVersions: next.maxVersions, ttlSeconds: next.ttlSeconds, latestIndex: next.latestIndex, created: !existing }, 'wide-column dataset saved');
      return { dataset: { ...next }, created: !existing };
    }));
    this.datasetWrites = run.catch(() => undefined);
    return run;
  }

  /** Part of StoreInternals (store-internals.ts), for the engine's own jobs. */
  dataset(name: string): DatasetConfig {
    if (typeof name !== 'string') throw new ShardKitError('INVALID_ARGUMENT', 'dataset name must be a string');
    const d = this.datasets.get(name);
    if (!d) {
      checkDatasetName(name);
      throw new ShardKitError('UNKNOWN_DATASET', `no wide-column dataset named ${name}`);
    }
    return d;
  }

  /** Part of StoreInternals (store-internals.ts), for the engine's own jobs. */
  datasetById(id: number): DatasetConfig | undefined {
    return this.datasetsById.get(id);
  }

  // ---- long operations ------------------------------------------------------------------------

  compact(options: { onProgress?: ProgressFn } = {}): Promise<CompactionReport> {
    return compact(this, options);
  }

  async backup(dir: string, options: { onProgress?: ProgressFn } = {}): Promise<EngineBackupReport> {
    const m = await backup(this, dir, options);
    return { dir: resolve(dir), records: m.records, bytes: m.bytes, files: m.files.length, snapshotAt: m.snapshotAt };
  }

  exportParquet(dataset: string, file: string, options: { overwrite?: boolean; onProgress?: ProgressFn } = {}): Promise<EngineExportReport> {
    return exportParquet(this, dataset, file, options);
  }

  // ---- reads ----------------------------------------------------------------------------------

  async getRow(dataset: string, row: string, options: GetRowOptions = {}): Promise<RowResult> {
    this.enter();
    try {
      const [ctx, q] = this.prepareRead(this.dataset(dataset), { ...options, row });
      // One RocksDB snapshot per read: every iterator and multi-get of it sees the same instant,
      // so a put (one write batch) is seen whole or not at all (issue 15, defect 2).
      const snap = this.db.snapshot();
      try {
        return await readRow(snap, ctx, q, this.clock(), this.folds.hints);
      } finally {
        await snap.close();
      }
    } finally {
      this.leave();
    }
  }

  async batchGetRows(dataset: string, requests: GetRowRequest[], options?: BatchGetOptions): Promise<RowResult[]> {
    this.enter();
    try {
      const ds = this.dataset(dataset);
      if (!Array.isArray(requests) || requests.length === 0) throw new ShardKitError('INVALID_ARGUMENT', 'a batch needs at least one row');
      checkCount('rows in one batch', requests.length, this.limits.maxBatchRows);
      const prepared = requests.map((r) => this.prepareRead(ds, r));
      const budget = budgetOf(options, requests.length);
      const now = this.clock();
      // One snapshot for the whole batch: a batch put is seen whole across the rows too.
      const snap = this.db.snapshot();
      try {
        // A bounded batch reads a few rows at a time, so that little is in flight once it stops.
        if (budget !== undefined) return await inGroups(prepared, BOUNDED_ROW_PARALLEL, ([ctx, q]) => readRow(snap, ctx, q, now, this.folds.hints, budget));
        return await Promise.all(prepared.map(([ctx, q]) => readRow(snap, ctx, q, now, this.folds.hints)));
      } finally {
        await snap.close();
      }
    } finally {
      this.leave();
    }
  }

  // ---- writes ---------------------------------------------------------------------------------

  async putRow(dataset: string, row: string, items: PutItem[]): Promise<PutRowResult> {
    return (await this.batchPutRows(dataset, [{ row, items }]))[0]!;
  }

  /** All items of all rows go in one RocksDB write batch: they apply together or not at all. */
  async batchPutRows(dataset: string, rows: PutRowRequest[]): Promise<PutRowResult[]> {
    this.enter();
    try {
      const ds = this.dataset(dataset);
      if (!Array.isArray(rows) || rows.length === 0) throw new ShardKitError('INVALID_ARGUMENT', 'a batch needs at least one row');
      checkCount('rows in one batch', rows.length, this.limits.maxBatchRows);
      const prepared = this.checks.puts(ds, rows);
      // Every put writes blindly (cells and one log record), so puts to a row run side by side.
      const { handle, wait } = this.locks.acquire(prepared.length === 1 ? [prepared[0]!.ctx.id] : prepared.map((p) => p.ctx.id), false);
      try {
        if (wait) await wait;
        return await this.writePuts(prepared);
      } finally {
        this.locks.release(handle);
      }
    } finally {
      this.leave();
    }
  }

  private async writePuts(rows: PreparedRow[]): Promise<PutRowResult[]> {
    const results: PutRowResult[] = [];
    const w = this.db.write({ capacity: 16 });
    try {
      let maxSeq = 0;
      for (const { ctx, items, explicit, duplicates } of rows) {
        // Server timestamps are taken only now, after any explicit put to the row has finished.
        let base: number | null = null;
        if (!duplicates) {
          if (explicit < items.length) base = this.oracle.reserve(ctx.id, 1);
          for (const i of items) {
            if (i.ts === null) i.ts = base!;
            w.tryPut(cellKey(ctx.cellPrefix, i.colEsc, i.ts), i.value);
          }
        } else {
          // Repeats of a column in one call get consecutive timestamps, later item = newer.
          const repeats = new Map<string, number>();
          let span = 0;
          for (const i of items) {
            if (!i.server) continue;
            const n = (repeats.get(i.column) ?? -1) + 1;
            repeats.set(i.column, n);
            i.ts = n;
            if (n + 1 > span) span = n + 1;
          }
          if (span > 0) {
            base = this.oracle.reserve(ctx.id, span);
            for (const i of items) if (i.server) i.ts = base + i.ts!;
          }
          // Every cell is logged, not only each column's newest: the fold merges the logged
          // timestamps into the heads' lists of newest timestamps, which must miss none.
          for (const i of items) w.tryPut(cellKey(ctx.cellPrefix, i.colEsc, i.ts!), i.value);
        }
        if (ctx.ds.latestIndex) {
          // One write-log record naming the put's (column, timestamp) pairs in the row's head
          // region: how reads of deep rows find the newest cells until a fold makes them heads.
          const seq = this.oracle.nextSeq(ctx.id);
          if (seq > maxSeq) maxSeq = seq;
          w.tryPut(logKey(ctx.headPrefix, seq), encodeLog(items as Array<PreparedItem & { ts: number }>));
        }
        results.push({ row: ctx.row, timestamp: base });
      }
      const floor = maxSeq > 0 ? this.oracle.floorFor(maxSeq) : null;
      if (floor !== null) w.tryPut(floorKey(floor), EMPTY);
      await w.flush();
      if (floor !== null) this.oracle.floorWritten(floor);
      for (const { ctx } of rows) if (ctx.ds.latestIndex) this.folds.logged(ctx);
      return results;
    } finally {
      w.destroy();
    }
  }

  deleteRow(dataset: string, row: string, columns?: string[]): Promise<void> {
    return this.batchDeleteRows(dataset, [columns === undefined ? { row } : { row, columns }]);
  }

  /** Deletes columns (or whole rows) in one write batch, with range deletes. */
  batchDeleteRows(dataset: string, rows: DeleteRowRequest[]): Promise<void> {
    return this.track(async () => {
      const ds = this.dataset(dataset);
      if (!Array.isArray(rows) || rows.length === 0) throw new ShardKitError('INVALID_ARGUMENT', 'a batch needs at least one row');
      checkCount('rows in one batch', rows.length, this.limits.maxBatchRows);
      const prepared = rows.map((r) => {
        if (r === null || typeof r !== 'object') throw new ShardKitError('INVALID_ARGUMENT', 'each row must be an object');
        const ctx = this.context(ds, r.row);
        if (r.columns === undefined || r.columns === null) return { ctx, columns: null };
        if (!Array.isArray(r.columns) || r.columns.length === 0) throw new ShardKitError('INVALID_ARGUMENT', 'columns must be a non-empty array (omit it to delete the whole row)');
        checkCount('columns in one request', r.columns.length, this.limits.maxItemsPerRow);
        return { ctx, columns: uniqueSorted(r.columns.map((c) => checkName('column name', c, this.limits.maxColumnBytes))) };
      });
      // Deleting columns folds the row's write log first (it may hold cells of those columns),
      // which needs the row to itself; whole rows go with two range deletes.
      const someColumns = prepared.some((p) => p.columns !== null);
      const { handle, wait } = this.locks.acquire([...new Set(prepared.map((p) => p.ctx.id))], someColumns);
      try {
        if (wait) await wait;
        const w = this.db.write({ capacity: 8 });
        try {
          await this.writeDeletes(w, prepared);
          await w.flush();
        } finally {
          w.destroy();
        }
      } finally {
        this.locks.release(handle);
      }
    });
  }

  private async writeDeletes(w: WriteBatch, prepared: Array<{ ctx: RowContext; columns: Buffer[] | null }>): Promise<void> {
    // Rows whose log is already taken care of in this batch: folded, or deleted whole (a fold
    // after that would put heads back).
    const done = new Set<string>();
    for (const { ctx, columns } of prepared) {
      if (!columns) {
        w.tryDeleteRange(ctx.cellPrefix, prefixEnd(ctx.cellPrefix));
        w.tryDeleteRange(ctx.headPrefix, prefixEnd(ctx.headPrefix));
        done.add(ctx.id);
        continue;
      }
      if (ctx.ds.latestIndex && !done.has(ctx.id)) {
        done.add(ctx.id);
        await foldLog(this.db, ctx, w);
      }
      for (const c of columns) {
        const esc = escapeComponent(c);
        const p = concat(ctx.cellPrefix, esc);
        w.tryDeleteRange(p, prefixEnd(p));
        w.tryDelete(concat(ctx.headPrefix, esc));
      }
    }
  }

  /** Settles when the background folds started so far have finished (for tests and benchmarks). */
  foldsSettled(): Promise<void> {
    return this.folds.settled();
  }

  /** Part of StoreInternals (store-internals.ts): Folds the write logs of rows whose exclusive locks the caller holds, in one batch. */
  async foldRows(ctxs: RowContext[], options: { expiredAt?: number } = {}): Promise<FoldResult> {
    const total: FoldResult = { records: 0, removedHeads: 0, removedBytes: 0 };
    const w = this.db.write({ capacity: 16 });
    try {
      for (const ctx of ctxs) {
        const r = await foldLog(this.db, ctx, w, options);
        total.records += r.records;
        total.removedHeads += r.removedHeads;
        total.removedBytes += r.removedBytes;
      }
      if (total.records > 0) await w.flush();
      return total;
    } finally {
      w.destroy();
    }
  }

  /** Part of StoreInternals (store-internals.ts), for the engine's own jobs. */
  context(ds: DatasetConfig, row: unknown): RowContext {
    return this.checks.context(ds, row);
  }

  /** Part of SnapshotSource (snapshot.ts): validates a Get Row request; shared with snapshot reads. */
  prepareRead(ds: DatasetConfig, r: GetRowRequest): [RowContext, ReadQuery] {
    return this.checks.read(ds, r);
  }

  /** Part of StoreInternals (store-internals.ts): Exclusive locks on distinct rows, for compaction's head removal; returns the release. */
  async lockRows(ids: string[]): Promise<() => void> {
    const { handle, wait } = this.locks.acquire(ids, true);
    if (wait) await wait;
    return () => this.locks.release(handle);
  }
}

