import { ShardKitError, isShardKitError } from '../../errors.js';
import type { DatasetConfig } from '../dataset-config.js';
import type { ProgressFn } from '../types.js';
import { CATALOG_SHARD, catalogDdl, datasetTable, datasetTableDdl, shardDatabaseDdl, wcDatabaseName } from './myrocks-ddl.js';
import type { EngineBackupReport, EngineRestoreReport, WideColumnEngine, WideColumnEngineDriver } from '../engine.js';
import { checkBackupTarget, MYROCKS_BACKUP_FORMAT, readMyrocksManifest, readRecords, shardFile, writeManifest, writeRecords, type StoredRecord } from './myrocks-backup.js';
import { exportShardsToParquet, type ShardCell } from './myrocks-export.js';
import { MyrocksRowWrites } from './myrocks-row-writes.js';

import type { MyrocksCompactionReport, MyrocksEngineOptions } from './myrocks-routing.js';

export type { MyrocksCompactionReport, MyrocksEngineOptions } from './myrocks-routing.js';

/**
 * The wide-column engine on MariaDB + MyRocks (docs/widecolumn.md, "One node or a fleet"): the
 * same datasets -> rows -> columns -> cells as the embedded engine, with each row on wide-column
 * shard md5(row key) mod N of the shard map's master for it. Every statement is parameterized;
 * identifiers come from validated dataset names and shard numbers only.
 *
 * Guarantees, and how they differ from the embedded engine:
 * - A Put Row (and a Delete Row) is one statement on one shard: atomic. A batch is one statement
 *   per shard it touches: atomic per shard, NOT across shards (the seed promises atomicity per row).
 * - A Get Row page is one statement (one MyRocks snapshot). A batch get sends one statement per
 *   host; rows on different hosts are read from different snapshots.
 */
export class MyrocksEngine extends MyrocksRowWrites implements WideColumnEngine {
  readonly kind = 'myrocks';

  /**
   * Removes, shard by shard, cells no read can return: expired ones (MyRocks's TTL drops them too,
   * in its own compactions) and versions beyond maxVersions. Each DELETE decides what to remove
   * inside its own statement, from the cells as they are then: a concurrent put only adds cells
   * (ranks grow, never shrink) and time only expires more, so nothing a read could return goes.
   * Head records are left alone: each carries its newest cell's expiry, so MyRocks drops it
   * exactly when the whole column has expired, and a put moves it forward atomically.
   */
  compact(options: { onProgress?: ProgressFn } = {}): Promise<MyrocksCompactionReport> {
    return this.track(async () => {
      const began = Date.now();
      const report: MyrocksCompactionReport = { scannedCells: 0, removedExpiredCells: 0, removedExcessVersions: 0, skippedColumns: 0, durationMs: 0 };
      const datasets = await this.catalog.list();
      let done = 0;
      const total = datasets.length * this.shards;
      for (const ds of datasets) {
        await this.eachShardByHost(async (shard) => {
          await this.compactShard(ds, shard, report);
          options.onProgress?.({ phase: `compact ${ds.name}`, done: ++done, total });
        });
      }
      report.durationMs = Date.now() - began;
      return report;
    });
  }

  /**
   * One shard table: one scan finds the (row, column) pairs with something to remove, then each is
   * cleaned by its own small DELETEs, each deciding from the cells as they are when it runs. Small
   * statements matter: a DELETE meeting a cell changed since it began fails with a snapshot
   * conflict (that is what keeps a column deleted and backfilled meanwhile safe) and is run again;
   * a pair still conflicting after the retries is left for the next run (skippedColumns).
   */
  private async compactShard(ds: DatasetConfig, shard: number, report: MyrocksCompactionReport): Promise<void> {
    const t = datasetTable(shard, ds.name);
    const expiredAbove = ds.ttlSeconds > 0 ? -(this.clock() - ds.ttlSeconds * 1000) : null;
    const groups = await this.onShard<Array<{ rh: Buffer; col: Buffer; n: string | number; expired: string | number }>>(shard,
      `SELECT rh, col, COUNT(*) AS n, SUM(nts > ?) AS expired FROM ${t} WHERE nts <= 0 GROUP BY rh, col`, [expiredAbove ?? 1]);
    for (const g of groups) {
      report.scannedCells += Number(g.n);
      const excess = Number(g.n) > ds.maxVersions;
      if (!excess && !(Number(g.expired) > 0)) continue;
      try {
        if (expiredAbove !== null && Number(g.expired) > 0) {
          const r = await this.onShard<{ affectedRows: number }>(shard, `DELETE FROM ${t} WHERE rh = ? AND col = ? AND nts > ? AND nts <= 0`, [g.rh, g.col, expiredAbove]);
          report.removedExpiredCells += r.affectedRows;
        }
        if (excess) {
          // Older than the maxVersions-th newest cell, all decided inside this one statement.
          const r = await this.onShard<{ affectedRows: number }>(shard,
            `DELETE FROM ${t} WHERE rh = ? AND col = ? AND nts <= 0 AND nts > (SELECT k.nts FROM (SELECT nts FROM ${t} WHERE rh = ? AND col = ? AND nts <= 0 ORDER BY nts LIMIT 1 OFFSET ${ds.maxVersions - 1}) k)`,
            [g.rh, g.col, g.rh, g.col]);
          report.removedExcessVersions += r.affectedRows;
        }
      } catch (err) {
        if (!isShardKitError(err, 'SHARD_UNAVAILABLE') || err.details?.driverCode !== 'ER_LOCK_DEADLOCK') throw err;
        report.skippedColumns++;
      }
    }
  }

  // ---- export, backup, restore ----------------------------------------------------------------

  /** The dataset's live cells from every shard into one Parquet file (each host read from one snapshot). */
  exportParquet(dataset: string, file: string, options: { overwrite?: boolean; onProgress?: ProgressFn } = {}): Promise<import('../engine.js').EngineExportReport> {
    return this.track(async () => {
      const ds = await this.catalog.get(dataset);
      const report = await exportShardsToParquet(ds, file, this.clock(), async (onShard) => {
        await this.perHostSnapshot(false, async (_host, shards, q) => {
          for (const shard of shards) {
            await onShard(shard, await q<ShardCell[]>(`SELECT row_key, col, nts, v FROM ${datasetTable(shard, ds.name)} WHERE nts <= 0 ORDER BY rh, col, nts`));
          }
        });
        return { shards: this.shards };
      }, options);
      this.logger?.info({ ...report }, 'wide-column export written');
      return report;
    });
  }

  /**
   * A logical backup of every dataset (myrocks-backup.ts): each host read from one snapshot, from
   * the slave when the shard map names one (the master then serves traffic undisturbed), so the
   * backup is consistent per host, and as fresh as the slave.
   */
  backup(dir: string, options: { onProgress?: ProgressFn } = {}): Promise<EngineBackupReport> {
    return this.track(async () => {
      checkBackupTarget(dir);
      const datasets = await this.catalog.list();
      const hosts: Record<string, { snapshotAt: number; shards: number[] }> = {};
      let records = 0;
      let bytes = 0;
      let files = 0;
      let done = 0;
      const snapshotAt = this.clock();
      await this.perHostSnapshot(true, async (host, shards, q) => {
        hosts[host] = { snapshotAt: this.clock(), shards };
        for (const shard of shards) {
          for (const d of datasets) {
            const rows = await q<StoredRecord[]>(`SELECT rh, col, nts, row_key, v, exp, hts FROM ${datasetTable(shard, d.name)} ORDER BY rh, col, nts`);
            if (rows.length === 0) continue;
            bytes += await writeRecords(shardFile(dir, wcDatabaseName(shard), d.name), rows);
            records += rows.length;
            files++;
          }
          options.onProgress?.({ phase: 'backup', done: ++done, total: this.shards });
        }
      });
      writeManifest(dir, { format: MYROCKS_BACKUP_FORMAT, shards: this.shards, datasets, hosts, records });
      return { dir, records, bytes, files: files + 1, snapshotAt };
    });
  }

  /** Restores a backup into a fleet whose catalogue is empty (restore is offline). */
  restore(dir: string, options: { onProgress?: ProgressFn } = {}): Promise<EngineRestoreReport> {
    return this.track(async () => {
      const began = Date.now();
      const m = readMyrocksManifest(dir);
      if (m.shards !== this.shards) throw new ShardKitError('INVALID_ARGUMENT', `the backup in ${dir} has ${m.shards} wide-column shards; this fleet has ${this.shards}`);
      await this.onShard(CATALOG_SHARD, shardDatabaseDdl(CATALOG_SHARD));
      await this.onShard(CATALOG_SHARD, catalogDdl());
      if ((await this.catalog.count()) > 0) throw new ShardKitError('ALREADY_EXISTS', 'the wide-column fleet already has datasets; restore needs an empty one');
      let records = 0;
      let bytes = 0;
      let files = 0;
      let done = 0;
      for (const d of m.datasets) {
        await this.catalog.restoreDataset(d);
        await this.eachShardByHost(async (shard) => {
          await this.onShard(shard, shardDatabaseDdl(shard));
          await this.onShard(shard, datasetTableDdl(shard, d.name));
          const file = shardFile(dir, wcDatabaseName(shard), d.name);
          let chunk: Array<Buffer | string>[] = [];
          const flush = async () => {
            if (chunk.length === 0) return;
            await this.onShard(shard, `INSERT INTO ${datasetTable(shard, d.name)} (rh, col, nts, row_key, v, exp, hts) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`, chunk.flat());
            records += chunk.length;
            chunk = [];
          };
          let any = false;
          for await (const rec of readRecords(file)) {
            any = true;
            bytes += rec.reduce((n: number, x) => n + (typeof x === 'string' ? x.length : x.length), 0);
            chunk.push(rec);
            if (chunk.length >= 500) await flush();
          }
          await flush();
          if (any) files++;
        });
        await this.catalog.markReady(d.name);
        options.onProgress?.({ phase: 'restore', done: ++done, total: m.datasets.length });
      }
      return { records, bytes, files, durationMs: Date.now() - began };
    });
  }
}

/** Opens MyRocks engines over a fleet, and restores backups into it (the fleet's catalogue must be empty). */
export function myrocksDriver(options: MyrocksEngineOptions): WideColumnEngineDriver {
  return {
    kind: 'myrocks',
    open: async () => new MyrocksEngine(options),
    restore: async (dir, restoreOptions) => {
      const engine = new MyrocksEngine(options);
      try {
        return await engine.restore(dir, restoreOptions);
      } finally {
        await engine.close();
      }
    },
  };
}
