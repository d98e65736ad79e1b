import type { Entry, RocksDB } from './rocksdb.js';
import { cellKey, concat, decodeEscaped, decodeHead, decodeHeadValue, escapeComponent, isLogKey, logRange, prefixEnd, readInvertedTimestamp, type Head, type LoggedCell } from './key-codec.js';
import { isLive, type RowContext } from './row-context.js';
import type { Cell, ColumnCells, RowResult } from './types.js';
import type { ReadBudget } from './read-budget.js';
import { addNewest, newestCell, readLog, sortedCells } from './write-log.js';
import { cellsOf, ColumnFilter, planFromHead, readColumn, readColumns, readPlanned, TS_BYTES, type Plan, type RawColumn, type ReadQuery } from './row-columns.js';

export type { ReadQuery } from './row-columns.js';



/**
 * What the store remembers between reads: rows found deep (columns with more versions than a
 * read wants) skip the cell scan and go to the head region at once; a read that met write-log
 * records there asks for a fold.
 */
export interface ReadHints {
  /** Unwanted cells the first scan of a row steps over before it switches to the head region. */
  skipBudget: number;
  isDeep(ctx: RowContext): boolean;
  markDeep(ctx: RowContext): void;
  logRecords(ctx: RowContext, records: number): void;
  /** The escaped names of the columns of a deep row's first page its heads could not answer last time, if remembered. */
  columnsOf(ctx: RowContext): Buffer[] | undefined;
  rememberColumns(ctx: RowContext, names: Buffer[]): void;
  /** The row's heads answered its last read: no early bounded iterators next time. */
  forgetColumns(ctx: RowContext): void;
}


export function encodeMarker(raw: Buffer): string {
  return raw.toString('base64url');
}

/**
 * Reads one page of a row. Named columns are read with one bounded iterator each, in parallel:
 * no more cells than asked for, whatever the depth of the column. All columns: one scan of the
 * cells while they hold about as many versions as wanted (the common shallow row); for deep rows
 * the head region says which columns exist and, for the latest version, which cell is newest
 * (see latestFromHeads), so the cost does not grow with the number of versions.
 */
export async function readRow(db: RocksDB, ctx: RowContext, q: ReadQuery, now: number, hints?: ReadHints, budget?: ReadBudget): Promise<RowResult> {
  let source: AsyncGenerator<RawColumn>;
  if (q.columns) {
    const cols = q.marker ? q.columns.filter((c) => Buffer.compare(c, q.marker!) > 0) : q.columns;
    source = cellsOf(db, ctx, cols, q, now);
  } else {
    source = scanCells(db, ctx, q, now, hints);
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
      // Counted column by column as the source yields them: a row past the budget is left
      // unread from there on, not read whole and then measured.
      budget?.chargeColumn(c);
      columns.push({ column: c.raw.toString('utf8'), cells: c.cells });
      last = c.raw;
    }
  } finally {
    await source.return(undefined);
  }
  return { row: ctx.row, columns, marker: more && last ? encodeMarker(last) : null };
}


/**
 * All columns. One scan of the cells while columns hold about as many versions as needed (up to
 * hints.skipBudget unwanted cells are stepped over); then, or at once for a row known to be deep,
 * the head region takes over after the last column read: rocksdb-native cannot seek an open
 * iterator, and a new one per column in sequence would make deep rows pay one round trip per
 * column. Datasets without head records (latestIndex false) pay exactly that.
 */
async function* scanCells(db: RocksDB, ctx: RowContext, q: ReadQuery, now: number, hints?: ReadHints): AsyncGenerator<RawColumn> {
  const latest = q.versions === 1 && q.start === 0 && q.end === Infinity;
  if (ctx.ds.latestIndex && hints?.isDeep(ctx)) {
    const after = q.marker ? escapeComponent(q.marker) : null;
    yield* latest ? latestFromHeads(db, ctx, after, q, now, hints) : fromDirectory(db, ctx, after, q, now, hints);
    return;
  }
  const plen = ctx.cellPrefix.length;
  const end = prefixEnd(ctx.cellPrefix);
  let range: { gte?: Buffer; gt?: Buffer; lt: Buffer } = { gte: q.marker ? prefixEnd(concat(ctx.cellPrefix, escapeComponent(q.marker))) : ctx.cellPrefix, lt: end };
  // First one open-ended scan; once a deep column shows up, pages of at most `page` entries,
  // which end after one native read (a scan left early would have read ahead for nothing).
  let page = 0;
  let skipped = 0;
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
        if (page === 0 && ++skipped <= (hints?.skipBudget ?? 0)) continue;
        deep = true;
        break;
      }
      wanting = filter!.offer(readInvertedTimestamp(key, key.length - TS_BYTES), value);
    }
    if (deep) {
      if (filter!.cells.length > 0) yield { raw: decodeEscaped(cur!), cells: filter!.cells };
      if (ctx.ds.latestIndex) {
        hints?.markDeep(ctx);
        yield* latest ? latestFromHeads(db, ctx, cur!, q, now, hints) : fromDirectory(db, ctx, cur!, q, now, hints);
        return;
      }
      // No head records: a new iterator right after the column (no seek on an open one).
      range = { gte: prefixEnd(concat(ctx.cellPrefix, cur!)), lt: end };
      cur = null;
      filter = null;
      page = (latest ? q.versions : Math.min(ctx.ds.maxVersions, 63)) + 1;
      continue;
    }
    if (page === 0 || n < page) break;
    range = { gt: Buffer.from(last!), lt: end };
  }
  if (cur && filter!.cells.length > 0) yield { raw: decodeEscaped(cur), cells: filter!.cells };
}

/** A column's newest cell as the head region knows it; `value` null when it must come from the cell. */
interface Newest {
  colEsc: Buffer;
  ts: number;
  value: Buffer | null;
}

/**
 * The newest cell of every column after `after` (escaped; null = all), from the head region:
 * heads hold (timestamp, value), write-log records the (column, timestamp) of newer cells, whose
 * values are then read with one multi-get per page. Without `after`, one iterator reads both
 * (log records sort first), a consistent view; with it, the log is read before the heads, so a
 * fold committing in between has moved what the log held into the heads read next.
 */
async function* latestFromHeads(db: RocksDB, ctx: RowContext, after: Buffer | null, q: ReadQuery, now: number, hints?: ReadHints): AsyncGenerator<RawColumn> {
  const plen = ctx.headPrefix.length;
  const end = prefixEnd(ctx.headPrefix);
  const capacity = Math.min(q.limit + 1, 256);
  let logged: LoggedCell[];
  let heads: AsyncIterable<Entry>;
  if (after) {
    const log = await readLog(db, ctx);
    hints?.logRecords(ctx, log.records);
    logged = log.cells.filter((c) => Buffer.compare(c.colEsc, after) > 0);
    heads = db.iterator({ gt: concat(ctx.headPrefix, after), lt: end }, { capacity });
  } else {
    const it = db.iterator({ gte: ctx.headPrefix, lt: end }, { capacity })[Symbol.asyncIterator]();
    const best = new Map<string, LoggedCell>();
    let records = 0;
    let first: IteratorResult<Entry>;
    try {
      for (;;) {
        first = await it.next();
        if (first.done || !isLogKey(first.value.key, plen)) break;
        records++;
        addNewest(best, first.value.value);
      }
    } catch (err) {
      await it.return?.();
      throw err;
    }
    hints?.logRecords(ctx, records);
    logged = sortedCells(best);
    heads = resumed(first, it);
  }
  let page: Newest[] = [];
  for await (const n of mergeNewest(logged, heads, plen)) {
    if (!isLive(ctx.ds, n.ts, now)) continue;
    page.push(n);
    if (page.length === capacity) {
      yield* withValues(db, ctx, page, now);
      page = [];
    }
  }
  if (page.length > 0) yield* withValues(db, ctx, page, now);
}

/** An iterator continued after a first result that was already taken from it. */
function resumed(first: IteratorResult<Entry>, it: AsyncIterator<Entry>): AsyncIterable<Entry> {
  let pending: IteratorResult<Entry> | null = first;
  return {
    [Symbol.asyncIterator]: () => ({
      next: () => {
        if (pending) {
          const r = pending;
          pending = null;
          return Promise.resolve(r);
        }
        return it.next();
      },
      return: async () => {
        await it.return?.();
        return { done: true, value: undefined };
      },
    }),
  };
}

/** Heads (in key order) merged with logged cells sorted by column; the log wins a tie (it is newer). */
async function* mergeNewest(log: LoggedCell[], heads: AsyncIterable<Entry>, plen: number): AsyncGenerator<Newest> {
  let i = 0;
  for await (const { key, value } of heads) {
    const colEsc = key.subarray(plen);
    while (i < log.length && Buffer.compare(log[i]!.colEsc, colEsc) < 0) {
      const c = log[i++]!;
      yield { colEsc: c.colEsc, ts: c.ts, value: null };
    }
    const head = decodeHeadValue(value);
    if (i < log.length && log[i]!.colEsc.equals(colEsc)) {
      const c = log[i++]!;
      if (c.ts >= head.ts) {
        yield { colEsc, ts: c.ts, value: null };
        continue;
      }
    }
    yield { colEsc, ts: head.ts, value: head.value };
  }
  for (; i < log.length; i++) yield { colEsc: log[i]!.colEsc, ts: log[i]!.ts, value: null };
}

/** Fills in values from the cells (one multi-get); a logged cell that is gone is looked up again. */
async function* withValues(db: RocksDB, ctx: RowContext, page: Newest[], now: number): AsyncGenerator<RawColumn> {
  const missing = page.filter((n) => n.value === null);
  if (missing.length > 0) {
    const read = db.read({ capacity: missing.length, autoDestroy: true });
    const pending = missing.map((n) => read.get(cellKey(ctx.cellPrefix, n.colEsc, n.ts)));
    read.tryFlush();
    const values = await Promise.all(pending);
    for (let i = 0; i < missing.length; i++) {
      const n = missing[i]!;
      n.value = values[i] ?? null;
      if (n.value !== null) continue;
      // Deleted or compacted away since the record was written: the cells have the answer.
      const cell = await newestCell(db, ctx, n.colEsc);
      if (cell && isLive(ctx.ds, cell.ts, now)) {
        n.ts = cell.ts;
        n.value = cell.value;
      }
    }
  }
  for (const n of page) if (n.value !== null) yield { raw: decodeEscaped(n.colEsc), cells: [{ timestamp: n.ts, value: n.value }] };
}

/** The columns after `after` (escaped; null = all), listed from the write log and the heads, read in parallel. */
async function* fromDirectory(db: RocksDB, ctx: RowContext, after: Buffer | null, q: ReadQuery, now: number, hints?: ReadHints): AsyncGenerator<RawColumn> {
  const PARALLEL = 16;
  if (after === null) {
    yield* fromWholeDirectory(db, ctx, q, now, hints);
    return;
  }
  const log = await readLog(db, ctx);
  hints?.logRecords(ctx, log.records);
  const logged = log.cells.map((c) => c.colEsc).filter((c) => Buffer.compare(c, after) > 0);
  let i = 0;
  let names: Buffer[] = [];
  const add = async function* (name: Buffer): AsyncGenerator<RawColumn> {
    names.push(name);
    if (names.length === PARALLEL) {
      yield* readColumns(db, ctx, names, q, now);
      names = [];
    }
  };
  const hplen = ctx.headPrefix.length;
  const start = after ? { gt: concat(ctx.headPrefix, after) } : { gte: logRange(ctx.headPrefix).lt };
  for await (const { key } of db.iterator({ ...start, lt: prefixEnd(ctx.headPrefix) }, { capacity: 64, values: false })) {
    const name = Buffer.from(key.subarray(hplen));
    while (i < logged.length && Buffer.compare(logged[i]!, name) < 0) yield* add(logged[i++]!);
    if (i < logged.length && logged[i]!.equals(name)) i++;
    yield* add(name);
  }
  while (i < logged.length) yield* add(logged[i++]!);
  if (names.length > 0) yield* readColumns(db, ctx, names, q, now);
}

/**
 * The first page of fromDirectory: the write log and the heads come from one iterator over the
 * head region (log records sort first). A column whose head lists its newest timestamps (format
 * 1, written by the fold) and can answer the read from that list and the logged timestamps is
 * read with one multi-get of exact cell keys, shared by the page (planFromHead); the others
 * with one bounded iterator each, in parallel. Everything reads the same snapshot, so a
 * versions=N read of a deep row costs two rounds of native reads whatever the depth (issue 15,
 * the flagship read), and no iterator per column when the heads can answer.
 */
async function* fromWholeDirectory(db: RocksDB, ctx: RowContext, q: ReadQuery, now: number, hints?: ReadHints): AsyncGenerator<RawColumn> {
  // The columns whose heads could not answer this row's last read are read at once, beside the
  // directory scan, instead of after it: the read then takes one round of native reads instead
  // of two. The directory (read from the same snapshot) decides: a column it does not list, or
  // whose head can answer now, drops its early read.
  const chunk = Math.min(q.limit + 1, 64);
  const guess = hints?.columnsOf(ctx);
  let early: Map<string, Promise<Cell[]>> | null = null;
  if (guess && guess.length <= chunk) {
    early = new Map();
    for (const esc of guess) {
      const p = readColumn(db, ctx, esc, q, now);
      // Dropped reads must not become unhandled rejections; a used one is awaited.
      p.catch(() => {});
      early.set(esc.toString('latin1'), p);
    }
  }
  const hplen = ctx.headPrefix.length;
  const best = new Map<string, LoggedCell>();
  const loggedTs = new Map<string, number[]>();
  const heads: Array<{ name: Buffer; value: Buffer }> = [];
  // Heads beyond a page are left to the paged path below (a wide row is not read whole).
  const wanted = Math.min(q.limit + 1, 256);
  let truncated = false;
  let records = 0;
  for await (const { key, value } of db.iterator({ gte: ctx.headPrefix, lt: prefixEnd(ctx.headPrefix) }, { capacity: 64 })) {
    if (isLogKey(key, hplen)) {
      records++;
      addNewest(best, value, loggedTs);
    } else if (heads.length === wanted) {
      truncated = true;
      break;
    } else {
      heads.push({ name: Buffer.from(key.subarray(hplen)), value });
    }
  }
  // Logged puts make the heads' lists answer less: fold them for the next read.
  hints?.logRecords(ctx, records);
  let logged = sortedCells(best).map((c) => c.colEsc);
  // Logged columns after the last head read are found again by the paged path.
  if (truncated) logged = logged.filter((c) => Buffer.compare(c, heads[heads.length - 1]!.name) <= 0);
  // Heads and logged columns merged in key order, without repeats.
  const names: Buffer[] = [];
  const plans: Array<Plan | null> = [];
  const add = (name: Buffer, head: Head | null): void => {
    names.push(name);
    plans.push(planFromHead(head, loggedTs.get(name.toString('latin1')), ctx, q, now));
  };
  let i = 0;
  for (const h of heads) {
    while (i < logged.length && Buffer.compare(logged[i]!, h.name) < 0) add(logged[i++]!, null);
    if (i < logged.length && logged[i]!.equals(h.name)) i++;
    add(h.name, decodeHead(h.value));
  }
  while (i < logged.length) add(logged[i++]!, null);
  const unplanned = names.filter((_, k) => plans[k] === null);
  if (unplanned.length === 0) hints?.forgetColumns(ctx);
  else if (!truncated) hints?.rememberColumns(ctx, unplanned);
  // A page's worth (and one more, to know whether more follow) at a time.
  for (let k = 0; k < names.length; k += chunk) yield* readPlanned(db, ctx, names.slice(k, k + chunk), plans.slice(k, k + chunk), q, now, early);
  if (truncated) yield* fromDirectory(db, ctx, heads[heads.length - 1]!.name, q, now);
}
