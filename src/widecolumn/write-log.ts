import type { RocksDB, WriteBatch } from './rocksdb.js';
import { cellKey, concat, decodeHeadValue, decodeLog, headValue, logRange, prefixEnd, readInvertedTimestamp, type LoggedCell } from './key-codec.js';
import { isLive, type RowContext } from './row-context.js';

/**
 * The write log of a row (docs/widecolumn.md, "Head records and the write log"): every put of a
 * dataset with latestIndex adds one small record naming the (column, timestamp) of its cells,
 * next to the row's head records. Reads of deep rows merge the log with the heads and take the
 * values from the cells; a fold turns the log into heads again. A put thus costs one extra key
 * of a few bytes per column however many columns it writes: a head per column doubled the keys
 * of a batch, and keys are what a write costs in rocksdb-native.
 */

const TS_BYTES = 8;

/**
 * The newest logged timestamp per column, sorted by escaped column. A record may name a cell
 * that is gone (a column deleted, or compacted away after it expired): readers check the cell.
 */
export async function readLog(db: RocksDB, ctx: RowContext): Promise<{ cells: LoggedCell[]; records: number; bytes: number }> {
  const best = new Map<string, LoggedCell>();
  let records = 0;
  let bytes = 0;
  for await (const { key, value } of db.iterator(logRange(ctx.headPrefix), { capacity: 32 })) {
    records++;
    bytes += key.length + value.length;
    addNewest(best, value);
  }
  return { cells: sortedCells(best), records, bytes };
}

export function addNewest(best: Map<string, LoggedCell>, record: Buffer): void {
  for (const c of decodeLog(record)) {
    const k = c.colEsc.toString('latin1');
    const cur = best.get(k);
    if (cur === undefined || c.ts > cur.ts) best.set(k, c);
  }
}

export function sortedCells(best: Map<string, LoggedCell>): LoggedCell[] {
  return [...best.values()].sort((a, b) => Buffer.compare(a.colEsc, b.colEsc));
}

/** The newest cell of a column, read from the cells (one bounded iterator). */
export async function newestCell(db: RocksDB, ctx: RowContext, colEsc: Buffer): Promise<{ ts: number; value: Buffer } | null> {
  const prefix = concat(ctx.cellPrefix, colEsc);
  for await (const { key, value } of db.iterator({ gte: prefix, lt: prefixEnd(prefix) }, { limit: 1, capacity: 2 })) {
    return { ts: readInvertedTimestamp(key, key.length - TS_BYTES), value };
  }
  return null;
}

export interface FoldResult {
  /** Log records folded (and deleted). */
  records: number;
  /** Heads removed because their column's newest cell had expired or was gone. */
  removedHeads: number;
  removedBytes: number;
}

/**
 * Folds a row's write log into its heads, inside the caller's write batch: for each logged
 * column newer than (or as new as) its head, the head becomes that cell, read from the cells;
 * then the log range is deleted. The caller holds the row's exclusive lock, so no put adds a
 * record meanwhile and the batch replaces exactly what was read. With `expiredAt` (compaction),
 * a column whose newest cell has expired loses its head instead.
 */
export async function foldLog(db: RocksDB, ctx: RowContext, w: WriteBatch, options: { expiredAt?: number } = {}): Promise<FoldResult> {
  const log = await readLog(db, ctx);
  const result: FoldResult = { records: log.records, removedHeads: 0, removedBytes: log.bytes };
  if (log.records === 0) return result;
  const range = logRange(ctx.headPrefix);
  const logged = log.cells;
  const headKeys = logged.map((c) => concat(ctx.headPrefix, c.colEsc));
  const read = db.read({ capacity: 2 * logged.length, autoDestroy: true });
  const pendingHeads = headKeys.map((k) => read.get(k));
  const pendingCells = logged.map((c) => read.get(cellKey(ctx.cellPrefix, c.colEsc, c.ts)));
  read.tryFlush();
  const [heads, cells] = await Promise.all([Promise.all(pendingHeads), Promise.all(pendingCells)]);
  for (let i = 0; i < logged.length; i++) {
    const c = logged[i]!;
    const head = heads[i];
    if (head && decodeHeadValue(head).ts > c.ts) continue;
    let newest: { ts: number; value: Buffer } | null = cells[i] ? { ts: c.ts, value: cells[i]! } : null;
    // The logged cell is gone: the column was compacted away (or is older than we thought);
    // the cells say what its newest version is now.
    if (newest === null) newest = await newestCell(db, ctx, c.colEsc);
    const key = headKeys[i]!;
    if (newest === null || (options.expiredAt !== undefined && !isLive(ctx.ds, newest.ts, options.expiredAt))) {
      if (head) {
        w.tryDelete(key);
        result.removedHeads++;
        result.removedBytes += key.length + head.length;
      }
      continue;
    }
    w.tryPut(key, headValue(newest.ts, newest.value));
  }
  w.tryDeleteRange(range.gte, range.lt);
  return result;
}
