import type { RocksDB } from './rocksdb.js';
import { concat, decodeEscaped, decodeHeadValue, escapeComponent, prefixEnd, readInvertedTimestamp } from './key-codec.js';
import { isLive, type RowContext } from './row-context.js';
import type { Cell, ColumnCells, RowResult } from './types.js';

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

interface RawColumn {
  raw: Buffer;
  cells: Cell[];
}

const TS_BYTES = 8;

export function encodeMarker(raw: Buffer): string {
  return raw.toString('base64url');
}

/**
 * Reads one page of a row. Versions=1 without a time range is served from the head records
 * (one record per column holding its newest cell), so it costs the same whatever the number of
 * versions; everything else reads the cells, newest first, seeking past unneeded versions.
 */
export async function readRow(db: RocksDB, ctx: RowContext, q: ReadQuery, now: number): Promise<RowResult> {
  const fromHeads = ctx.ds.latestIndex && q.versions === 1 && q.start === 0 && q.end === Infinity;
  let source: AsyncGenerator<RawColumn>;
  if (q.columns) {
    const cols = q.marker ? q.columns.filter((c) => Buffer.compare(c, q.marker!) > 0) : q.columns;
    source = fromHeads ? headsOf(db, ctx, cols, now) : cellsOf(db, ctx, cols, q, now);
  } else {
    source = fromHeads ? scanHeads(db, ctx, q, now) : scanCells(db, ctx, q, now);
  }
  const columns: ColumnCells[] = [];
  let last: Buffer | null = null;
  let more = false;
  try {
    for await (const c of source) {
      if (columns.length === q.limit) {
        more = true;
        break;
      }
      columns.push({ column: c.raw.toString('utf8'), cells: c.cells });
      last = c.raw;
    }
  } finally {
    await source.return(undefined);
  }
  return { row: ctx.row, columns, marker: more && last ? encodeMarker(last) : null };
}

async function* scanHeads(db: RocksDB, ctx: RowContext, q: ReadQuery, now: number): AsyncGenerator<RawColumn> {
  const range = q.marker
    ? { gt: concat(ctx.headPrefix, escapeComponent(q.marker)), lt: prefixEnd(ctx.headPrefix) }
    : { gte: ctx.headPrefix, lt: prefixEnd(ctx.headPrefix) };
  const plen = ctx.headPrefix.length;
  for await (const { key, value } of db.iterator(range, { capacity: Math.min(q.limit + 1, 256) })) {
    const head = decodeHeadValue(value);
    if (!isLive(ctx.ds, head.ts, now)) continue;
    yield { raw: decodeEscaped(key.subarray(plen)), cells: [{ timestamp: head.ts, value: head.value }] };
  }
}

async function* headsOf(db: RocksDB, ctx: RowContext, cols: Buffer[], now: number): AsyncGenerator<RawColumn> {
  // One multi-get per chunk: chunks keep a huge column list from pinning one giant read.
  const CHUNK = 256;
  for (let i = 0; i < cols.length; i += CHUNK) {
    const chunk = cols.slice(i, i + CHUNK);
    const batch = db.read({ capacity: chunk.length, autoDestroy: true });
    const pending = chunk.map((c) => batch.get(concat(ctx.headPrefix, escapeComponent(c))));
    batch.tryFlush();
    const values = await Promise.all(pending);
    for (let j = 0; j < chunk.length; j++) {
      const v = values[j];
      if (!v) continue;
      const head = decodeHeadValue(v);
      if (!isLive(ctx.ds, head.ts, now)) continue;
      yield { raw: chunk[j]!, cells: [{ timestamp: head.ts, value: head.value }] };
    }
  }
}

/**
 * Per-column filter over cells in newest-first order. Returns false once nothing further in the
 * column can be returned (enough versions, past maxVersions, older than start, or expired:
 * all of these only get truer for older cells).
 */
class ColumnFilter {
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
 * All columns, from the cells. One scan while columns hold no more versions than needed (the
 * common shallow row); at the first column with versions to skip it switches to the head
 * records as a column directory and reads the remaining columns in parallel, each with its own
 * bounded iterator: rocksdb-native cannot seek an open iterator, and a new one per column in
 * sequence would make deep rows pay one round trip per column. Datasets without head records
 * (latestIndex false) pay exactly that.
 */
async function* scanCells(db: RocksDB, ctx: RowContext, q: ReadQuery, now: number): AsyncGenerator<RawColumn> {
  const plen = ctx.cellPrefix.length;
  const end = prefixEnd(ctx.cellPrefix);
  let range: { gte?: Buffer; gt?: Buffer; lt: Buffer } = { gte: q.marker ? prefixEnd(concat(ctx.cellPrefix, escapeComponent(q.marker))) : ctx.cellPrefix, lt: end };
  // First one open-ended scan; once a deep column shows up, pages of at most `page` entries,
  // which end after one native read (a scan left early would have read ahead for nothing).
  let page = 0;
  let cur: Buffer | null = null;
  let filter: ColumnFilter | null = null;
  let wanting = true;
  for (;;) {
    let deep = false;
    let n = 0;
    let last: Buffer | null = null;
    const options = page === 0 ? { capacity: 32 } : { limit: page, capacity: page + 1 };
    for await (const { key, value } of db.iterator(range, options)) {
      n++;
      last = key;
      const colEsc = key.subarray(plen, key.length - TS_BYTES);
      if (cur === null || !colEsc.equals(cur)) {
        if (cur && filter!.cells.length > 0) yield { raw: decodeEscaped(cur), cells: filter!.cells };
        cur = Buffer.from(colEsc);
        filter = new ColumnFilter(ctx, q, now);
        wanting = true;
      } else if (!wanting) {
        deep = true;
        break;
      }
      wanting = filter!.offer(readInvertedTimestamp(key, key.length - TS_BYTES), value);
    }
    if (deep) {
      if (filter!.cells.length > 0) yield { raw: decodeEscaped(cur!), cells: filter!.cells };
      if (ctx.ds.latestIndex) {
        yield* fromDirectory(db, ctx, cur!, q, now);
        return;
      }
      // No head records: a new iterator right after the column (no seek on an open one).
      range = { gte: prefixEnd(concat(ctx.cellPrefix, cur!)), lt: end };
      cur = null;
      filter = null;
      page = (q.start === 0 && q.end === Infinity ? q.versions : Math.min(ctx.ds.maxVersions, 63)) + 1;
      continue;
    }
    if (page === 0 || n < page) break;
    range = { gt: Buffer.from(last!), lt: end };
  }
  if (cur && filter!.cells.length > 0) yield { raw: decodeEscaped(cur), cells: filter!.cells };
}

/** The columns after `after` (escaped), listed from the head records, read in parallel. */
async function* fromDirectory(db: RocksDB, ctx: RowContext, after: Buffer, q: ReadQuery, now: number): AsyncGenerator<RawColumn> {
  const PARALLEL = 16;
  let names: Buffer[] = [];
  const hplen = ctx.headPrefix.length;
  for await (const { key } of db.iterator({ gt: concat(ctx.headPrefix, after), lt: prefixEnd(ctx.headPrefix) }, { capacity: 64, values: false })) {
    names.push(Buffer.from(key.subarray(hplen)));
    if (names.length === PARALLEL) {
      yield* readColumns(db, ctx, names, q, now);
      names = [];
    }
  }
  if (names.length > 0) yield* readColumns(db, ctx, names, q, now);
}

/** Reads columns (escaped names) in parallel and yields those with cells, in order. */
async function* readColumns(db: RocksDB, ctx: RowContext, colEscs: Buffer[], q: ReadQuery, now: number): AsyncGenerator<RawColumn> {
  const results = await Promise.all(colEscs.map((esc) => readColumn(db, ctx, esc, q, now)));
  for (let i = 0; i < results.length; i++) {
    if (results[i]!.length > 0) yield { raw: decodeEscaped(colEscs[i]!), cells: results[i]! };
  }
}

async function readColumn(db: RocksDB, ctx: RowContext, colEsc: Buffer, q: ReadQuery, now: number): Promise<Cell[]> {
  const prefix = concat(ctx.cellPrefix, colEsc);
  const filter = new ColumnFilter(ctx, q, now);
  // Without a time range the first `versions` cells are all that can be returned; with one,
  // ranks count from the newest cell, so up to maxVersions are looked at. Capacity above the
  // limit lets the first native read also report the end.
  const limit = q.start === 0 && q.end === Infinity ? q.versions : ctx.ds.maxVersions;
  for await (const { key, value } of db.iterator({ gte: prefix, lt: prefixEnd(prefix) }, { limit, capacity: Math.min(limit + 1, 64) })) {
    if (!filter.offer(readInvertedTimestamp(key, key.length - TS_BYTES), value)) break;
  }
  return filter.cells;
}

async function* cellsOf(db: RocksDB, ctx: RowContext, cols: Buffer[], q: ReadQuery, now: number): AsyncGenerator<RawColumn> {
  // Named columns: a page's worth at a time, in parallel, yielded in order.
  const chunkSize = Math.min(q.limit + 1, 64);
  for (let i = 0; i < cols.length; i += chunkSize) {
    const chunk = cols.slice(i, i + chunkSize);
    const escs = chunk.map((raw) => escapeComponent(raw));
    const results = await Promise.all(escs.map((esc) => readColumn(db, ctx, esc, q, now)));
    for (let j = 0; j < chunk.length; j++) if (results[j]!.length > 0) yield { raw: chunk[j]!, cells: results[j]! };
  }
}
