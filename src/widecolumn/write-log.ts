import type { RocksDB, WriteBatch } from './rocksdb.js';
import { cellKey, concat, decodeHead, decodeLog, encodeHead, logRange, prefixEnd, readInvertedTimestamp, type Head, type LoggedCell } from './key-codec.js';
import type { DatasetConfig } from './dataset-config.js';
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
 * How many of a column's newest timestamps its head lists (format 1, key-codec.ts encodeHead):
 * a deep row's versions=N read with N <= this many is one scan of the head region and one
 * multi-get of exact cell keys instead of a bounded iterator per column. 16 covers the usual
 * latest-N reads of user sequences (N 5..16) for 128 bytes per head; larger N reads up to 16 x
 * more cells anyway, where the iterator's fixed cost matters less (versions=50 already reads
 * at the shallow row's speed with iterators, bench/RESULTS.md). Never more than maxVersions: a
 * read never returns a cell ranked beyond it.
 */
export const HEAD_TOPS = 16;

export function topsLength(ds: DatasetConfig): number {
  return Math.min(HEAD_TOPS, ds.maxVersions);
}

/**
 * The newest logged timestamp per column, sorted by escaped column, and every logged timestamp
 * per column (`all`, keyed by the escaped column as latin1). A record may name a cell that is
 * gone (a column deleted, or compacted away after it expired): readers check the cell.
 */
export async function readLog(db: RocksDB, ctx: RowContext): Promise<{ cells: LoggedCell[]; all: Map<string, number[]>; records: number; bytes: number }> {
  const best = new Map<string, LoggedCell>();
  const all = new Map<string, number[]>();
  let records = 0;
  let bytes = 0;
  for await (const { key, value } of db.iterator(logRange(ctx.headPrefix), { capacity: 32 })) {
    records++;
    bytes += key.length + value.length;
    addNewest(best, value, all);
  }
  return { cells: sortedCells(best), all, records, bytes };
}

/** Adds a log record: the newest cell per column to `best`, and with `all`, every timestamp per column. */
export function addNewest(best: Map<string, LoggedCell>, record: Buffer, all?: Map<string, number[]>): void {
  for (const c of decodeLog(record)) {
    const k = c.colEsc.toString('latin1');
    const cur = best.get(k);
    if (cur === undefined || c.ts > cur.ts) best.set(k, c);
    if (all) {
      const list = all.get(k);
      if (list) list.push(c.ts);
      else all.set(k, [c.ts]);
    }
  }
}

/** Distinct timestamps, newest first. */
export function newestFirst(ts: number[]): number[] {
  ts.sort((a, b) => b - a);
  let n = 0;
  for (let i = 0; i < ts.length; i++) if (i === 0 || ts[i] !== ts[n - 1]) ts[n++] = ts[i]!;
  ts.length = n;
  return ts;
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
 * column the head becomes its newest cell (the logged cell when it is as new as the head or
 * newer, read from the cells) and lists the column's newest timestamps (HEAD_TOPS, see
 * columnTops); then the log range is deleted. The caller holds the row's exclusive lock, so no
 * put adds a record meanwhile and the batch replaces exactly what was read. With `expiredAt`
 * (compaction), a column whose newest cell has expired loses its head instead.
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
  const want = topsLength(ctx.ds);
  await Promise.all(logged.map(async (c, i) => {
    const rawHead = heads[i];
    const head = rawHead ? decodeHead(rawHead) : null;
    const key = headKeys[i]!;
    let newest: { ts: number; value: Buffer } | null = head && head.ts > c.ts ? head : cells[i] ? { ts: c.ts, value: cells[i]! } : null;
    let tops = newest ? mergedTops(head, log.all.get(c.colEsc.toString('latin1'))!, want) : null;
    if (newest === null || tops === null || tops.list[0] !== newest.ts) {
      // No usable list (a head of the first format, a list shorter than wanted, or the logged
      // cell is gone: deleted or compacted away): the cells say what the column holds now.
      const listed = await readTops(db, ctx, c.colEsc, want);
      tops = listed.list.length > 0 ? listed : null;
      if (tops === null) newest = null;
      else if (newest === null || newest.ts !== tops.list[0]) newest = { ts: tops.list[0]!, value: (await db.get(cellKey(ctx.cellPrefix, c.colEsc, tops.list[0]!)))! };
    }
    if (newest === null || tops === null || newest.value === null || (options.expiredAt !== undefined && !isLive(ctx.ds, newest.ts, options.expiredAt))) {
      if (rawHead) {
        w.tryDelete(key);
        result.removedHeads++;
        result.removedBytes += key.length + rawHead.length;
      }
      return;
    }
    w.tryPut(key, encodeHead(tops.list, tops.complete, newest.value));
  }));
  w.tryDeleteRange(range.gte, range.lt);
  return result;
}

/**
 * A column's newest timestamps from its format-1 head and the timestamps logged since the head
 * was written. The head's list is exact down to its last entry, and every later cell is in the
 * log, so the merge is exact down to that entry too (all of it when the head was complete);
 * logged backfills older than it are left out (cells between them are unknown). Entries may
 * name cells removed since (compaction removes a column's oldest cells): reads fetch every
 * listed cell they rely on and fall back to the cells when one is missing. Null when the merge
 * cannot give `want` entries (or the whole column): the caller reads the cells.
 */
export function mergedTops(head: Head | null, logged: number[], want: number): { list: number[]; complete: boolean } | null {
  if (!head || !head.tops) return null;
  const base = head.tops;
  const last = base[base.length - 1]!;
  let merged = newestFirst([...base, ...logged]);
  if (!head.complete) merged = merged.filter((t) => t >= last);
  const complete = head.complete && merged.length <= want;
  if (!complete && merged.length < want) return null;
  return { list: merged.slice(0, want), complete };
}

/** A column's newest `want` timestamps read from its cells (keys only), and whether that is all of them. */
async function readTops(db: RocksDB, ctx: RowContext, colEsc: Buffer, want: number): Promise<{ list: number[]; complete: boolean }> {
  const prefix = concat(ctx.cellPrefix, colEsc);
  const list: number[] = [];
  let complete = true;
  for await (const { key } of db.iterator({ gte: prefix, lt: prefixEnd(prefix) }, { limit: want + 1, capacity: Math.min(want + 2, 64), values: false })) {
    if (list.length === want) {
      complete = false;
      break;
    }
    list.push(readInvertedTimestamp(key, key.length - TS_BYTES));
  }
  return { list, complete };
}
