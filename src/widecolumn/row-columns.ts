import type { Entry, RocksDB } from './rocksdb.js';
import { cellKey, concat, decodeEscaped, escapeComponent, prefixEnd, readInvertedTimestamp, type Head } from './key-codec.js';
import { isLive, type RowContext } from './row-context.js';
import type { Cell } from './types.js';
import { newestFirst } from './write-log.js';

/*
 * The column reads of a Get Row (row-reader.ts): by the plan a column's head gives, column by
 * column, or bounded cell scans; and the query and the version filter they share.
 */

/** A validated Get Row query. */
export interface ReadQuery {
  /** Requested columns as raw UTF-8 bytes, sorted bytewise and unique; null = all. */
  columns: Buffer[] | null;
  /** Already capped at the dataset's maxVersions. */
  versions: number;
  start: number;
  end: number;
  limit: number;
  /** Raw bytes of the last column of the previous page. */
  marker: Buffer | null;
}

export interface RawColumn {
  raw: Buffer;
  cells: Cell[];
}

export const TS_BYTES = 8;

/**
 * Per-column filter over cells in newest-first order. Returns false once nothing further in the
 * column can be returned (enough versions, past maxVersions, older than start, or expired:
 * all of these only get truer for older cells).
 */
export class ColumnFilter {
  rank = 0;
  cells: Cell[] = [];
  constructor(private readonly ctx: RowContext, private readonly q: ReadQuery, private readonly now: number) {}

  offer(ts: number, value: Buffer): boolean {
    this.rank++;
    if (this.rank > this.ctx.ds.maxVersions) return false;
    if (ts >= this.q.end) return true;
    if (ts < this.q.start || !isLive(this.ctx.ds, ts, this.now)) return false;
    this.cells.push({ timestamp: ts, value });
    return this.cells.length < this.q.versions;
  }
}

/**
 * The cells a read needs from one column, known from its head's list and the write log: the
 * timestamps to fetch (the wanted cells, and the newer ones the read steps over, so that every
 * cell it counts is checked to exist) and, when the first of them is the head's own cell, its
 * value.
 */
export interface Plan {
  fetch: number[];
  headValue: Buffer | null;
}

const NO_VALUE = Buffer.alloc(0);

/**
 * Whether a column's head list, with the timestamps logged since the fold, decides this read
 * exactly, and which cells it needs; null when it does not (a head of the first format or none,
 * a read deeper than the list, a time range reaching past it): the column is read with a bounded
 * iterator then. Every cell of the column with a timestamp >= the list's last entry is in the
 * list or the log (all of them when the list is complete), so the ColumnFilter run over these
 * candidates makes the decisions it makes over the cells: the ones it rejects at the end
 * (ranked past maxVersions, expired, older than `start`) stay rejected for every older cell.
 * Candidates may name cells removed since (compaction): readPlanned checks each fetched one.
 */
export function planFromHead(head: Head | null, logged: number[] | undefined, ctx: RowContext, q: ReadQuery, now: number): Plan | null {
  if (!head || !head.tops) return null;
  let candidates = head.tops;
  if (logged) {
    candidates = newestFirst([...head.tops, ...logged]);
    if (!head.complete) {
      const last = head.tops[head.tops.length - 1]!;
      candidates = candidates.filter((t) => t >= last);
    }
  }
  const sim = new ColumnFilter(ctx, q, now);
  const fetch: number[] = [];
  let decided = false;
  for (const ts of candidates) {
    const before = sim.cells.length;
    const more = sim.offer(ts, NO_VALUE);
    // Kept (a wanted cell), or stepped over (newer than `end`): its existence counts.
    if (more || sim.cells.length > before) fetch.push(ts);
    if (!more) {
      decided = true;
      break;
    }
  }
  if (!decided && !head.complete) return null;
  // The head holds the newest cell's value unless a later put replaced that cell (same timestamp).
  const own = fetch.length > 0 && fetch[0] === head.ts && candidates[0] === head.ts && !(logged && logged.includes(head.ts));
  return { fetch, headValue: own ? head.value : null };
}

/**
 * Reads a page of columns: the planned ones with one multi-get of exact cell keys, the others
 * (and planned ones whose multi-get missed a cell: deleted or compacted since) with one bounded
 * iterator each, in parallel (or the one started early, from the same snapshot); yields those
 * with cells, in order.
 */
export async function* readPlanned(db: RocksDB, ctx: RowContext, colEscs: Buffer[], plans: Array<Plan | null>, q: ReadQuery, now: number, early: Map<string, Promise<Cell[]>> | null = null): AsyncGenerator<RawColumn> {
  let keys = 0;
  for (const p of plans) if (p) keys += p.fetch.length - (p.headValue ? 1 : 0);
  const read = keys > 0 ? db.read({ capacity: keys, autoDestroy: true }) : null;
  const values: Array<Promise<Array<Buffer | null>> | null> = plans.map((p, k) => {
    if (!p) return null;
    return Promise.all(p.fetch.map((ts, j) => (j === 0 && p.headValue ? Promise.resolve(p.headValue) : read!.get(cellKey(ctx.cellPrefix, colEscs[k]!, ts)))));
  });
  read?.tryFlush();
  const results = await Promise.all(plans.map(async (p, k): Promise<Cell[]> => {
    if (!p) return early?.get(colEscs[k]!.toString('latin1')) ?? readColumn(db, ctx, colEscs[k]!, q, now);
    const got = await values[k]!;
    if (got.some((v) => v === null)) return readColumn(db, ctx, colEscs[k]!, q, now);
    const filter = new ColumnFilter(ctx, q, now);
    for (let j = 0; j < got.length; j++) if (!filter.offer(p.fetch[j]!, got[j]!)) break;
    return filter.cells;
  }));
  for (let k = 0; k < results.length; k++) {
    if (results[k]!.length > 0) yield { raw: decodeEscaped(colEscs[k]!), cells: results[k]! };
  }
}

/** Reads columns (escaped names) in parallel and yields those with cells, in order. */
export async function* readColumns(db: RocksDB, ctx: RowContext, colEscs: Buffer[], q: ReadQuery, now: number): AsyncGenerator<RawColumn> {
  const results = await Promise.all(colEscs.map((esc) => readColumn(db, ctx, esc, q, now)));
  for (let i = 0; i < results.length; i++) {
    if (results[i]!.length > 0) yield { raw: decodeEscaped(colEscs[i]!), cells: results[i]! };
  }
}

export async function readColumn(db: RocksDB, ctx: RowContext, colEsc: Buffer, q: ReadQuery, now: number): Promise<Cell[]> {
  const prefix = concat(ctx.cellPrefix, colEsc);
  const filter = new ColumnFilter(ctx, q, now);
  // Without a time range the first `versions` cells are all that can be returned; with one,
  // ranks count from the newest cell, so up to maxVersions are looked at. Capacity above the
  // limit lets the first native read also report the end.
  const limit = q.start === 0 && q.end === Infinity ? q.versions : ctx.ds.maxVersions;
  for (const { key, value } of await collect(db, { gte: prefix, lt: prefixEnd(prefix) }, limit)) {
    if (!filter.offer(readInvertedTimestamp(key, key.length - TS_BYTES), value)) break;
  }
  return filter.cells;
}

/**
 * Up to `limit` entries of a range, resolved when the iterator reports its end, before its
 * close has come back from RocksDB's thread pool (a for-await loop waits for the close too: the
 * third round trip of every bounded read). The close still runs; the snapshot the iterator reads
 * from is released only after it (rocksdb-native counts the snapshot's users).
 */
function collect(db: RocksDB, range: { gte: Buffer; lt: Buffer }, limit: number): Promise<Entry[]> {
  const it = db.iterator(range, { limit, capacity: Math.min(limit + 1, 64) });
  return new Promise((resolve, reject) => {
    const out: Entry[] = [];
    it.on('data', (e: Entry) => out.push(e));
    it.once('end', () => resolve(out));
    it.once('error', reject);
    it.once('close', () => resolve(out));
  });
}

export async function* cellsOf(db: RocksDB, ctx: RowContext, cols: Buffer[], q: ReadQuery, now: number): AsyncGenerator<RawColumn> {
  // Named columns: a page's worth at a time, in parallel, yielded in order.
  const chunkSize = Math.min(q.limit + 1, 64);
  for (let i = 0; i < cols.length; i += chunkSize) {
    const chunk = cols.slice(i, i + chunkSize);
    const escs = chunk.map((raw) => escapeComponent(raw));
    const results = await Promise.all(escs.map((esc) => readColumn(db, ctx, esc, q, now)));
    for (let j = 0; j < chunk.length; j++) if (results[j]!.length > 0) yield { raw: chunk[j]!, cells: results[j]! };
  }
}
