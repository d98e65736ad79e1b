import type RocksDB from 'rocksdb-native';
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
/**
 * Unwanted versions read in a row before the scan stops and reopens after the column: reading a
 * few buffered entries is cheaper than a new iterator, reading hundreds is not.
 */
const SKIP_TOLERANCE = 16;

export function encodeMarker(raw: Buffer): string {
  return raw.toString('base64url');
}

/**
 * Reads one page of a row. Versions=1 without a time range is served from the head records
 * (one record per column holding its newest cell), so it costs the same whatever the number of
 * versions; everything else reads the cells, newest first, seeking past unneeded versions.
 */
export async function readRow(db: RocksDB, ctx: RowContext, q: ReadQuery, now: number): Promise<RowResult> {
  const fromHeads = q.versions === 1 && q.start === 0 && q.end === Infinity;
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

async function* scanCells(db: RocksDB, ctx: RowContext, q: ReadQuery, now: number): AsyncGenerator<RawColumn> {
  const end = prefixEnd(ctx.cellPrefix);
  const plen = ctx.cellPrefix.length;
  let pos = q.marker ? prefixEnd(concat(ctx.cellPrefix, escapeComponent(q.marker))) : ctx.cellPrefix;
  for (;;) {
    let cur: Buffer | null = null;
    let filter: ColumnFilter | null = null;
    let wanting = true;
    let wasted = 0;
    let reopenAt: Buffer | null = null;
    for await (const { key, value } of db.iterator({ gte: pos, lt: end }, { capacity: 64 })) {
      const colEsc = key.subarray(plen, key.length - TS_BYTES);
      if (cur === null || !colEsc.equals(cur)) {
        if (cur && filter!.cells.length > 0) yield { raw: decodeEscaped(cur), cells: filter!.cells };
        cur = Buffer.from(colEsc);
        filter = new ColumnFilter(ctx, q, now);
        wanting = true;
        wasted = 0;
      }
      if (!wanting) {
        if (++wasted >= SKIP_TOLERANCE) {
          reopenAt = prefixEnd(concat(ctx.cellPrefix, cur));
          break;
        }
        continue;
      }
      wanting = filter!.offer(readInvertedTimestamp(key, key.length - TS_BYTES), value);
    }
    if (cur && filter!.cells.length > 0) yield { raw: decodeEscaped(cur), cells: filter!.cells };
    if (!reopenAt) return;
    pos = reopenAt;
  }
}

async function* cellsOf(db: RocksDB, ctx: RowContext, cols: Buffer[], q: ReadQuery, now: number): AsyncGenerator<RawColumn> {
  // Columns are read in parallel, a page's worth at a time, and yielded in order.
  const chunkSize = Math.min(q.limit + 1, 128);
  // Without a time range the first `versions` cells are all that can be returned.
  const perColumn = q.start === 0 && q.end === Infinity ? q.versions : ctx.ds.maxVersions;
  for (let i = 0; i < cols.length; i += chunkSize) {
    const chunk = cols.slice(i, i + chunkSize);
    const results = await Promise.all(chunk.map(async (raw) => {
      const prefix = concat(ctx.cellPrefix, escapeComponent(raw));
      const filter = new ColumnFilter(ctx, q, now);
      for await (const { key, value } of db.iterator({ gte: prefix, lt: prefixEnd(prefix) }, { limit: perColumn, capacity: Math.min(perColumn, 64) })) {
        if (!filter.offer(readInvertedTimestamp(key, key.length - TS_BYTES), value)) break;
      }
      return { raw, cells: filter.cells };
    }));
    for (const r of results) if (r.cells.length > 0) yield r;
  }
}
