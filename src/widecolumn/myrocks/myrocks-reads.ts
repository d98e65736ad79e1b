import type { Cell, ColumnCells } from '../types.js';
import type { SqlValue } from '../../storage/mysql/index.js';

/** A validated Get Row page request for one row (the embedded engine's ReadQuery, plus where it lives). */
export interface RowRead {
  /** `wc00042`.`events`, from datasetTable(). */
  table: string;
  /** Key of the row's cells (cellKey) and of its head records (headKey). */
  rh: Buffer;
  hh: Buffer;
  /** Columns to read (raw UTF-8, sorted bytewise, unique); null = list them after `after`. */
  columns: Buffer[] | null;
  /** All columns: resume after this column (raw); null = from the first. */
  after: Buffer | null;
  versions: number;
  maxVersions: number;
  ttlSeconds: number;
  start: number;
  end: number;
  /** Columns this statement lists at most (the page size + 1, to know whether more follow). */
  candidates: number;
  now: number;
}

/** What one read found for one row: the columns it looked at, and their cells. */
export interface RowFound {
  /** Every column looked at, in order, with or without cells (raw). */
  looked: Buffer[];
  /** Whether the row has no columns after the last one looked at. */
  exhausted: boolean;
  /** Columns with cells, in byte order; cells newest first. */
  columns: Array<{ raw: Buffer; cells: Cell[] }>;
}

/** Whether the read wants only each column's newest cell, which the head records hold. */
export function latestOnly(r: RowRead): boolean {
  return r.versions === 1 && r.start === 0 && r.end === Infinity;
}

/** A column list is needed first (all columns, more than the newest cell, or a time range). */
export function needsDirectory(r: RowRead): boolean {
  return r.columns === null && !latestOnly(r);
}

/** Lowest timestamp still live (row-context.ts isLive: live while now <= timestamp + ttl); 0 without TTL. */
function liveFrom(r: RowRead): number {
  return r.ttlSeconds > 0 ? r.now - r.ttlSeconds * 1000 : 0;
}

/**
 * The cell filter of the embedded engine (row-columns.ts ColumnFilter) on nts = -timestamp:
 * timestamp < end, timestamp >= start, not expired. One contiguous nts range of the column, so
 * with constant bounds MyRocks reads only the cells it returns.
 */
function cellConditions(r: RowRead, params: SqlValue[]): string {
  const out: string[] = [];
  if (r.end !== Infinity) {
    out.push('nts > ?');
    params.push(-r.end);
  }
  const upper = -Math.max(r.start, liveFrom(r));
  out.push('nts <= ?');
  params.push(Math.min(upper, 0));
  return ` AND ${out.join(' AND ')}`;
}

/**
 * One column's cells: `(SELECT ... ORDER BY nts LIMIT versions)`, about `versions` cells whatever
 * the column's depth. With a time range, cells beyond the newest maxVersions (not compacted yet)
 * stay hidden even when newer ones fall outside the range: the maxVersions-th cell bounds them.
 */
function columnBranch(i: number, r: RowRead, col: Buffer, values: SqlValue[]): string {
  values.push(r.rh, col);
  const cond = cellConditions(r, values);
  let rank = '';
  if (r.start !== 0 || r.end !== Infinity) {
    rank = ` AND nts <= COALESCE((SELECT k.nts FROM ${r.table} k WHERE k.rh = ? AND k.col = ? AND k.nts <= 0 ORDER BY k.nts LIMIT 1 OFFSET ${r.maxVersions - 1}), 0)`;
    values.push(r.rh, col);
  }
  return `(SELECT ${i} AS i, col, nts, v FROM ${r.table} WHERE rh = ? AND col = ?${cond}${rank} ORDER BY nts LIMIT ${r.versions})`;
}

/**
 * The statement for rows whose columns are known (named, or listed by directoryStatement) or
 * whose newest cells are wanted: one `UNION ALL` over all of them, one round trip and one MyRocks
 * snapshot. Latest reads of all columns read the head records only: about `limit` records.
 */
export function buildPageStatement(reads: RowRead[]): { sql: string; values: SqlValue[] } {
  const branches: string[] = [];
  const values: SqlValue[] = [];
  reads.forEach((r, i) => {
    if (r.columns) {
      for (const col of r.columns) branches.push(columnBranch(i, r, col, values));
      return;
    }
    values.push(r.hh, r.after ?? Buffer.alloc(0), liveFrom(r));
    branches.push(`(SELECT ${i} AS i, col, -hts AS nts, v FROM ${r.table} WHERE rh = ? AND col > ? AND hts >= ? ORDER BY col LIMIT ${r.candidates})`);
  });
  return { sql: branches.join('\nUNION ALL\n'), values };
}

/**
 * A page statement that sends no more than `maxBytes` (column names and values, as ReadBudget
 * counts them): the server numbers its rows' running size and keeps those that start within the
 * budget, so the first row past it still comes (the reader's budget then refuses the read) and
 * nothing after it crosses the wire into this process's memory.
 */
export function boundedPage(page: { sql: string; values: SqlValue[] }, maxBytes: number): { sql: string; values: SqlValue[] } {
  const size = 'LENGTH(p.col) + LENGTH(p.v) + 8';
  return {
    sql: `SELECT i, col, nts, v FROM (SELECT p.*, SUM(${size}) OVER (ORDER BY p.i, p.col, p.nts ROWS UNBOUNDED PRECEDING) - (${size}) AS before_row FROM (\n${page.sql}\n) p) b WHERE b.before_row <= ?`,
    values: [...page.values, maxBytes],
  };
}

/** Lists up to `candidates` columns after `after` of each row, from the head records. */
export function directoryStatement(reads: RowRead[]): { sql: string; values: SqlValue[] } {
  const values: SqlValue[] = [];
  const sql = reads.map((r, i) => {
    values.push(r.hh, r.after ?? Buffer.alloc(0));
    return `(SELECT ${i} AS i, col FROM ${r.table} WHERE rh = ? AND col > ? ORDER BY col LIMIT ${r.candidates})`;
  }).join('\nUNION ALL\n');
  return { sql, values };
}

export function collectDirectory(reads: RowRead[], rows: Array<{ i: number | string; col: Buffer }>): Buffer[][] {
  const out: Buffer[][] = reads.map(() => []);
  for (const r of rows) out[Number(r.i)]!.push(r.col);
  return out.map((l) => l.sort(Buffer.compare));
}

export interface PageRow {
  i: number | string;
  col: Buffer;
  nts: string | number;
  v: Buffer;
}

/** Splits a page statement's rows by request and orders them (columns bytewise, cells newest first). */
export function collectPage(reads: RowRead[], rows: PageRow[]): RowFound[] {
  const out = reads.map(() => new Map<string, { raw: Buffer; cells: Array<Cell & { nts: number }> }>());
  for (const r of rows) {
    const slot = out[Number(r.i)]!;
    const key = r.col.toString('hex');
    let c = slot.get(key);
    if (!c) slot.set(key, (c = { raw: r.col, cells: [] }));
    const nts = Number(r.nts);
    c.cells.push({ timestamp: -nts, value: r.v, nts });
  }
  return reads.map((r, i) => {
    const columns = [...out[i]!.values()].sort((a, b) => Buffer.compare(a.raw, b.raw)).map((c) => ({
      raw: c.raw,
      cells: c.cells.sort((a, b) => a.nts - b.nts).map(({ timestamp, value }) => ({ timestamp, value })),
    }));
    if (r.columns) return { looked: r.columns, exhausted: true, columns };
    // Head records: every live one listed is a column with its newest cell.
    const looked = columns.map((c) => c.raw);
    return { looked, exhausted: looked.length < r.candidates, columns };
  });
}

export function toColumnCells(columns: Array<{ raw: Buffer; cells: Cell[] }>): ColumnCells[] {
  return columns.map((c) => ({ column: c.raw.toString('utf8'), cells: c.cells }));
}

/**
 * Get Row of the newest cell of every column (the common read): one statement on the row's head
 * records, one record per column, already in column order. Its own statement and decoder, so
 * this path does only what a hand-written mysql2 loop would (no page rounds, no per-column maps).
 */
export function latestStatement(table: string, hh: Buffer, after: Buffer | null, liveFrom: number, candidates: number): { sql: string; values: SqlValue[] } {
  return {
    sql: `SELECT col, hts, v FROM ${table} WHERE rh = ? AND col > ? AND hts >= ? ORDER BY col LIMIT ${candidates}`,
    values: [hh, after ?? EMPTY, liveFrom],
  };
}

const EMPTY = Buffer.alloc(0);

export interface LatestRow {
  col: Buffer;
  hts: string | number;
  v: Buffer;
}

/**
 * The page from latestStatement's rows (`limit` + 1 asked for: one more says more follow). The
 * statement orders by col; rows are checked and sorted only if a server ever answered otherwise.
 */
export function collectLatest(row: string, rows: LatestRow[], limit: number): { row: string; columns: ColumnCells[]; marker: string | null } {
  for (let i = 1; i < rows.length; i++) {
    if (Buffer.compare(rows[i - 1]!.col, rows[i]!.col) >= 0) {
      rows = [...rows].sort((a, b) => Buffer.compare(a.col, b.col));
      break;
    }
  }
  const n = Math.min(rows.length, limit);
  const columns: ColumnCells[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const r = rows[i]!;
    columns[i] = { column: r.col.toString('utf8'), cells: [{ timestamp: Number(r.hts), value: r.v }] };
  }
  return { row, columns, marker: rows.length > limit ? rows[limit - 1]!.col.toString('base64url') : null };
}

/** Lowest timestamp still live for a dataset's TTL at `now` (0 without TTL). */
export function liveFromTtl(ttlSeconds: number, now: number): number {
  return ttlSeconds > 0 ? now - ttlSeconds * 1000 : 0;
}
