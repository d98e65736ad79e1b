import { rocksDbNative, type RocksDB } from './rocksdb.js';
import {
  CELL_TAG,
  decodeHead,
  decodeHeadValue,
  encodeHead,
  HEAD_TAG,
  isLogKey,
  META_FLOOR,
  metaRange,
  readInvertedTimestamp,
  prefixEnd,
  unescapeComponent,
} from './key-codec.js';
import type { DatasetConfig } from './dataset-config.js';
import { isLive, rowId } from './row-context.js';
import type { EngineCompactionReport } from './engine.js';
import type { ProgressFn } from './types.js';
import type { StoreInternals } from './store-internals.js';

/** The RocksDB engine's report: the common counters and its own. */
export interface CompactionReport extends EngineCompactionReport {
  /** Cells looked at. */
  scannedCells: number;
  removedExpiredCells: number;
  removedExcessVersions: number;
  removedHeads: number;
  /** Write-log records folded into head records (and removed). */
  foldedLogRecords: number;
  /** Key + value bytes of the removed records (before RocksDB's own compression). */
  removedBytes: number;
  rangeDeletes: number;
  /** SST bytes before and after RocksDB compacted the range deletes away. */
  sstBytesBefore: number;
  sstBytesAfter: number;
  durationMs: number;
}

const FLUSH_EVERY = 1000;
const RECHECK_PARALLEL = 32;

/**
 * The key of the first cell of a column (prefix `colPrefix`) that no read can return at `now`:
 * ranked beyond maxVersions or expired; null when there is none. Reads the live store, so the
 * caller holds the row's exclusive lock until its delete is written.
 */
async function firstRemovable(db: RocksDB, colPrefix: Buffer, ds: DatasetConfig, now: number): Promise<Buffer | null> {
  let rank = 0;
  const limit = ds.maxVersions + 1;
  for await (const { key } of db.iterator({ gte: colPrefix, lt: prefixEnd(colPrefix) }, { limit, capacity: Math.min(limit + 1, 64), values: false })) {
    rank++;
    if (rank > ds.maxVersions || !isLive(ds, readInvertedTimestamp(key, key.length - 8), now)) return Buffer.from(key);
  }
  return null;
}

/**
 * Keeps the heads' lists of newest timestamps (key-codec.ts encodeHead) exact when a column's
 * cells from timestamp `ts` down are range-deleted, in the same batch and under the same row
 * lock: the removed timestamps leave the list, and a list that reached into the removed range
 * now holds every remaining cell the fold knew of (complete). Reads would still be right without
 * this (they check every listed cell they rely on and fall back to the cells when one is gone),
 * but the column would take the slower path until its list is rebuilt. A list whose every entry
 * is removed is left as it is: the head is then older than cells named by the write log, and the
 * next fold rebuilds it from the cells. Returns the heads rewritten.
 */
async function trimHeadLists(db: RocksDB, w: ReturnType<RocksDB['write']>, removed: Array<{ colPrefix: Buffer; ts: number }>): Promise<number> {
  if (removed.length === 0) return 0;
  const headKeys = removed.map(({ colPrefix }) => {
    const k = Buffer.from(colPrefix);
    k[2] = HEAD_TAG;
    return k;
  });
  const read = db.read({ capacity: headKeys.length, autoDestroy: true });
  const pending = headKeys.map((k) => read.get(k));
  read.tryFlush();
  const values = await Promise.all(pending);
  let n = 0;
  values.forEach((v, i) => {
    if (!v) return;
    const head = decodeHead(v);
    if (!head.tops) return;
    const r = removed[i]!.ts;
    const kept = head.tops.filter((t) => t > r);
    if (kept.length === head.tops.length || kept.length === 0) return;
    w.tryPut(headKeys[i]!, encodeHead(kept, true, head.value));
    n++;
  });
  return n;
}

/**
 * The compaction job: RocksDB here has no compaction filter, so expired cells and versions
 * beyond maxVersions are found by one scan over all shards, removed with one range delete per
 * column (from the first removable cell to the column's end: every older cell is removable too),
 * and then RocksDB compacts the whole key space so the data and the tombstones leave the disk.
 * Reads already hide these cells, so the job changes no result, only the disk usage.
 */
export async function compact(store: StoreInternals, options: { onProgress?: ProgressFn } = {}): Promise<CompactionReport> {
  return store.track(async () => {
    const started = Date.now();
    const db = store.db;
    const now = store.clock();
    const report: CompactionReport = {
      scannedCells: 0,
      removedExpiredCells: 0,
      removedExcessVersions: 0,
      removedHeads: 0,
      foldedLogRecords: 0,
      removedBytes: 0,
      rangeDeletes: 0,
      sstBytesBefore: await sstBytes(db),
      sstBytesAfter: 0,
      durationMs: 0,
    };
    let w = db.write({ capacity: 64 });
    let pending = 0;
    // Columns where the scan found a removable cell. The scan reads an older view, so nothing is
    // deleted from it: under the rows' exclusive locks each column is read again, and the range
    // delete starts at the first cell that is removable now (issue 15, defect 1: a delete and a
    // backfill between scan and delete would otherwise lose an acknowledged, visible cell).
    let candidates: Array<{ colPrefix: Buffer; rowId: string; ds: DatasetConfig }> = [];
    const flush = async (): Promise<void> => {
      if (candidates.length > 0) {
        const batch = candidates;
        candidates = [];
        const release = await store.lockRows([...new Set(batch.map((c) => c.rowId))]);
        try {
          for (let i = 0; i < batch.length; i += RECHECK_PARALLEL) {
            const slice = batch.slice(i, i + RECHECK_PARALLEL);
            const starts = await Promise.all(slice.map((c) => firstRemovable(db, c.colPrefix, c.ds, now)));
            const removed: Array<{ colPrefix: Buffer; ts: number }> = [];
            starts.forEach((key, j) => {
              if (!key) return;
              w.tryDeleteRange(key, prefixEnd(slice[j]!.colPrefix));
              removed.push({ colPrefix: slice[j]!.colPrefix, ts: readInvertedTimestamp(key, key.length - 8) });
              report.rangeDeletes++;
              pending++;
            });
            pending += await trimHeadLists(db, w, removed);
          }
          if (pending > 0) await w.flush();
          pending = 0;
        } finally {
          release();
        }
      }
      if (pending === 0) return;
      await w.flush();
      pending = 0;
    };
    try {
      // One pass over every data key (shards are the key prefix; metadata sorts after them).
      let colPrefix: Buffer | null = null;
      let rank = 0;
      let removing: 'expired' | 'versions' | null = null;
      let expiredHeads: Buffer[] = [];
      let lastShard = -1;
      // A put may have replaced a head since the scan: heads are checked again, and deleted in
      // one batch, under their rows' exclusive locks.
      const dropHeads = async (): Promise<void> => {
        if (expiredHeads.length === 0) return;
        const ids = [...new Set(expiredHeads.map((key) => rowId(key.readUInt32BE(3), unescapeComponent(key, 7).raw.toString('utf8'))))];
        const release = await store.lockRows(ids);
        try {
          const read = db.read({ capacity: expiredHeads.length, autoDestroy: true });
          const pendingReads = expiredHeads.map((key) => read.get(key));
          read.tryFlush();
          const values = await Promise.all(pendingReads);
          const del = db.write({ capacity: expiredHeads.length, autoDestroy: true });
          let n = 0;
          expiredHeads.forEach((key, i) => {
            const v = values[i];
            const ds = store.datasetById(key.readUInt32BE(3))!;
            if (v && !isLive(ds, decodeHeadValue(v).ts, now)) {
              del.tryDelete(key);
              n++;
              report.removedBytes += key.length + v.length;
            }
          });
          if (n > 0) await del.flush();
          else del.destroy();
          report.removedHeads += n;
        } finally {
          release();
        }
        expiredHeads = [];
      };
      // Rows with a write log: folded into heads (expired columns lose theirs) under their locks.
      let logRows: Array<{ dsId: number; row: string }> = [];
      let lastLogRow: Buffer | null = null;
      const foldLogs = async (): Promise<void> => {
        if (logRows.length === 0) return;
        const ctxs = logRows.map(({ dsId, row }) => store.context(store.datasetById(dsId)!, row));
        const release = await store.lockRows([...new Set(ctxs.map((c) => c.id))]);
        try {
          const r = await store.foldRows(ctxs, { expiredAt: now });
          report.foldedLogRecords += r.records;
          report.removedHeads += r.removedHeads;
          report.removedBytes += r.removedBytes;
        } finally {
          release();
        }
        logRows = [];
      };
      for await (const { key, value } of db.iterator({ gte: Buffer.from([0x00]), lt: Buffer.from([0xff, 0xff]) }, { capacity: 512 })) {
        const shard = key.readUInt16BE(0);
        if (shard !== lastShard) {
          if (lastShard >= 0) await options.onProgress?.({ phase: 'scan', done: lastShard + 1, total: store.shards });
          lastShard = shard;
        }
        const ds = store.datasetById(key.readUInt32BE(3));
        if (!ds) continue;
        if (key[2] === HEAD_TAG) {
          const row = unescapeComponent(key, 7);
          if (isLogKey(key, row.next)) {
            const rowKey = key.subarray(0, row.next);
            if (!lastLogRow || !rowKey.equals(lastLogRow)) {
              lastLogRow = Buffer.from(rowKey);
              logRows.push({ dsId: ds.id, row: row.raw.toString('utf8') });
              if (logRows.length >= FLUSH_EVERY) await foldLogs();
            }
            continue;
          }
          // An expired head means its whole column expired.
          if (!isLive(ds, decodeHeadValue(value).ts, now)) expiredHeads.push(key);
          if (expiredHeads.length >= FLUSH_EVERY) await dropHeads();
          continue;
        }
        if (key[2] !== CELL_TAG) continue;
        report.scannedCells++;
        const thisCol = key.subarray(0, key.length - 8);
        if (!colPrefix || !thisCol.equals(colPrefix)) {
          colPrefix = Buffer.from(thisCol);
          rank = 0;
          removing = null;
        }
        rank++;
        if (removing === null) {
          if (!isLive(ds, readInvertedTimestamp(key, key.length - 8), now)) removing = 'expired';
          else if (rank > ds.maxVersions) removing = 'versions';
          if (removing !== null) {
            // Everything from the first removable cell to the column's end goes (older cells are
            // removable too), once checked again under the row's lock.
            candidates.push({ colPrefix, rowId: rowId(ds.id, unescapeComponent(key, 7).raw.toString('utf8')), ds });
            if (candidates.length >= FLUSH_EVERY) await flush();
          }
        }
        if (removing === 'expired') report.removedExpiredCells++;
        else if (removing === 'versions') report.removedExcessVersions++;
        if (removing !== null) report.removedBytes += key.length + value.length;
      }
      await flush();
      await dropHeads();
      await foldLogs();
      options.onProgress?.({ phase: 'scan', done: store.shards, total: store.shards });
      // Floors: only the highest matters.
      let first = true;
      for await (const { key } of db.iterator(metaRange(META_FLOOR))) {
        if (first) {
          first = false;
          continue;
        }
        w.tryDeleteRange(key, metaRange(META_FLOOR).lt);
        pending++;
        break;
      }
      await flush();
    } finally {
      w.destroy();
    }
    options.onProgress?.({ phase: 'compact', done: 0, total: 1 });
    await db.compactRange(null, null, { bottommostLevelCompaction: rocksDbNative().constants.bottommostLevelCompaction.FORCE });
    options.onProgress?.({ phase: 'compact', done: 1, total: 1 });
    report.sstBytesAfter = await sstBytes(db);
    report.durationMs = Date.now() - started;
    store.logger?.info({ ...report }, 'wide-column compaction done');
    return report;
  });
}

async function sstBytes(db: RocksDB): Promise<number> {
  const v = await db.getProperty('rocksdb.total-sst-files-size');
  const n = Number(v);
  return Number.isFinite(n) ? n : 0;
}

