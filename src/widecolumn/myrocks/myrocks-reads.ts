import type { Cell, ColumnCells } from '../types.js';
import type { SqlValue } from '../../storage/mysql/mysql-host-pool.js';

/** A validated Get Row page request for one row (the embedded engine's ReadQuery, plus where it lives). */
export interface RowRead {
  /** `wc00042`.`events`, from datasetTable(). */
  table: string;
  /** SHA-256 of the row key. */
  rh: Buffer;
  /** Requested columns (raw UTF-8, sorted bytewise, unique, after the marker); null = all. */
  columns: Buffer[] | null;
  /** All columns: resume after this column (raw); null = from the first. */
  after: Buffer | null;
  versions: number;
  maxVersions: number;
  ttlSeconds: number;
  start: number;
  end: number;
  /** Candidate columns this statement looks at (the page size + 1, to know whether more follow). */
  candidates: number;
  now: number;
}

/** What one statement found for one row: the candidate columns it looked at, and their cells. */
export interface RowFound {
  /** Every column looked at, in order, with or without cells (raw). */
  looked: Buffer[];
  /** Whether the row has no columns after the last one looked at. */
  exhausted: boolean;
  /** Columns with cells, in byte order; cells newest first. */
  columns: Array<{ raw: Buffer; cells: Cell[] }>;
}

const MAX_NTS = '9223372036854775807';

/**
 * The cell filter of the embedded engine (row-reader.ts ColumnFilter) as SQL over nts = -timestamp,
 * for the table alias `a`: timestamp < end, timestamp >= start, and not expired (now <= timestamp + ttl).
 * In nts terms these cells are one contiguous run of the column's key range.
 */
function cellConditions(a: string, r: RowRead, params: SqlValue[]): string {
  const out: string[] = [];
  if (r.end !== Infinity) {
    out.push(`${a}.nts > ?`);
    params.push(-r.end);
  }
  let upper = -r.start;
  // Live while now <= timestamp + ttl (row-context.ts isLive).
  if (r.ttlSeconds > 0) upper = Math.min(upper, -(r.now - r.ttlSeconds * 1000));
  if (upper < 0) {
    out.push(`${a}.nts <= ?`);
    params.push(upper);
  }
  return out.length ? ` AND ${out.join(' AND ')}` : '';
}

/**
 * With a time range, cells beyond the newest maxVersions (not compacted yet) must stay hidden even
 * when newer ones fall outside the range: the nts of the column's maxVersions-th cell bounds the
 * cells returned. Without a range the first `versions` (<= maxVersions) cells are the answer anyway.
 */
function rankBound(a: string, table: string, r: RowRead, column: string, params: SqlValue[]): string {
  if (r.end === Infinity && r.start === 0) return '';
  params.push(r.rh);
  return ` AND ${a}.nts <= COALESCE((SELECT k.nts FROM ${table} k WHERE k.rh = ? AND k.col = ${column} ORDER BY k.nts LIMIT 1 OFFSET ${r.maxVersions - 1}), ${MAX_NTS})`;
}

/**
 * One statement reading one page of several rows of one host: the rows' answers come from one
 * MyRocks snapshot (a statement reads one), in one round trip.
 *
 * Named columns: one `(SELECT ... ORDER BY nts LIMIT versions)` per column, reading about
 * `versions` cells whatever the column's depth. All columns: a recursive CTE walks the row's
 * columns with one index seek each (a loose index scan: MIN(col) > previous), at most
 * `candidates` of them, and a second CTE finds per column the nts of the `versions`-th wanted cell;
 * the join then reads exactly the wanted cells. No window function: its cost would grow with depth.
 */
export function buildPageStatement(reads: RowRead[]): { sql: string; values: SqlValue[] } {
  const ctes: string[] = [];
  const cteParams: SqlValue[] = [];
  const branches: string[] = [];
  const branchParams: SqlValue[] = [];
  reads.forEach((r, i) => {
    const t = r.table;
    if (r.columns) {
      for (const col of r.columns) {
        const p: SqlValue[] = [r.rh, col];
        const cond = cellConditions('c', r, p);
        const rank = rankBound('c', t, r, '?', p);
        if (rank) p.push(col);
        branches.push(`(SELECT ${i} AS i, c.col, c.nts, c.v FROM ${t} c WHERE c.rh = ? AND c.col = ?${cond}${rank} ORDER BY c.nts LIMIT ${r.versions})`);
        branchParams.push(...p);
      }
      return;
    }
    const c = `c${i}`;
    const b = `b${i}`;
    ctes.push(`${c}(col, n) AS (SELECT (SELECT MIN(x.col) FROM ${t} x WHERE x.rh = ? AND x.col > ?), 1 UNION ALL SELECT (SELECT MIN(x.col) FROM ${t} x WHERE x.rh = ? AND x.col > ${c}.col), ${c}.n + 1 FROM ${c} WHERE ${c}.col IS NOT NULL AND ${c}.n < ${r.candidates})`);
    cteParams.push(r.rh, r.after ?? Buffer.alloc(0), r.rh);
    const bp: SqlValue[] = [r.rh];
    const vcond = cellConditions('x', r, bp);
    const rankParams: SqlValue[] = [];
    const rank = rankBound('y', t, r, `${c}.col`, rankParams);
    const rb = rank ? `, (SELECT y.nts FROM ${t} y WHERE y.rh = ? AND y.col = ${c}.col ORDER BY y.nts LIMIT 1 OFFSET ${r.maxVersions - 1}) AS rb` : ', NULL AS rb';
    if (rank) bp.push(r.rh);
    ctes.push(`${b} AS (SELECT ${c}.col, (SELECT x.nts FROM ${t} x WHERE x.rh = ? AND x.col = ${c}.col${vcond} ORDER BY x.nts LIMIT 1 OFFSET ${r.versions - 1}) AS vb${rb} FROM ${c} WHERE ${c}.col IS NOT NULL)`);
    cteParams.push(...bp);
    const jp: SqlValue[] = [r.rh];
    const jcond = cellConditions('t', r, jp);
    branches.push(`SELECT ${i} AS i, ${b}.col, t.nts, t.v FROM ${b} JOIN ${t} t ON t.rh = ? AND t.col = ${b}.col${jcond} AND t.nts <= COALESCE(${b}.vb, ${MAX_NTS}) AND t.nts <= COALESCE(${b}.rb, ${MAX_NTS})`);
    branchParams.push(...jp);
    // The columns looked at, empty or not: tells whether the row has more after them.
    branches.push(`SELECT ${i} AS i, ${b}.col, NULL AS nts, NULL AS v FROM ${b}`);
  });
  const sql = `${ctes.length ? `WITH RECURSIVE ${ctes.join(',\n')}\n` : ''}${branches.join('\nUNION ALL\n')}`;
  return { sql, values: [...cteParams, ...branchParams] };
}

interface PageRow {
  i: number | string;
  col: Buffer;
  nts: string | number | null;
  v: Buffer | null;
}

/** Splits a page statement's rows by request and orders them (columns bytewise, cells newest first). */
export function collectPage(reads: RowRead[], rows: PageRow[]): RowFound[] {
  const out: Array<{ looked: Map<string, Buffer>; cells: Map<string, { raw: Buffer; cells: Array<Cell & { nts: number }> }> }> = reads.map(() => ({ looked: new Map(), cells: new Map() }));
  for (const r of rows) {
    const slot = out[Number(r.i)]!;
    const key = r.col.toString('hex');
    if (r.nts === null) {
      slot.looked.set(key, r.col);
      continue;
    }
    let c = slot.cells.get(key);
    if (!c) slot.cells.set(key, (c = { raw: r.col, cells: [] }));
    const nts = Number(r.nts);
    c.cells.push({ timestamp: -nts, value: r.v!, nts });
  }
  return reads.map((r, i) => {
    const slot = out[i]!;
    const columns = [...slot.cells.values()].sort((a, b) => Buffer.compare(a.raw, b.raw)).map((c) => ({
      raw: c.raw,
      cells: c.cells.sort((a, b) => a.nts - b.nts).map(({ timestamp, value }) => ({ timestamp, value })),
    }));
    if (r.columns) return { looked: r.columns, exhausted: true, columns };
    const looked = [...slot.looked.values()].sort(Buffer.compare);
    return { looked, exhausted: looked.length < r.candidates, columns };
  });
}

export function toColumnCells(columns: Array<{ raw: Buffer; cells: Cell[] }>): ColumnCells[] {
  return columns.map((c) => ({ column: c.raw.toString('utf8'), cells: c.cells }));
}
