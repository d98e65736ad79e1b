import pg from 'pg';
import { AGGREGATE, replicaThenSource, sameAggregate, type Aggregate } from './postgres-verify.js';

/** Rows per chunk when a table written throughout is compared chunk by chunk before the freeze. */
export const SETTLE_CHUNK_ROWS = 1000;

/** Key types a chunk's bounds are cast to (the cast names a type, so only these). */
const KEY_TYPES = new Set(['bigint', 'integer', 'smallint']);

const qi = (s: string): string => pg.escapeIdentifier(s);

/**
 * A table compared chunk by chunk on the first column of its primary key. Its chunks are the
 * buckets of `bounds` (width_bucket's): 0 below bounds[0], i from bounds[i-1] up to bounds[i],
 * the last from the last bound up; together they hold every key, those written later included.
 */
export interface ChunkedTable {
  /** `${shard}.${table}`, as in the verify reports. */
  name: string;
  shard: number;
  table: string;
  col: string;
  type: string;
  bounds: string[];
  /** Buckets not (yet) equal at a consistent point: compared under the freeze. */
  open: number[];
  /** Rows of the buckets found equal. */
  rows: number;
}

/** A chunked table's qualified, quoted name on one side. */
export type WhereIs = (t: ChunkedTable) => string;

/** The first primary-key column of each table (`table`: qualified and quoted), when its type is one KEY_TYPES names. */
export async function firstKeyColumns(c: pg.Client, tables: string[]): Promise<Map<string, { col: string; type: string }>> {
  const out = new Map<string, { col: string; type: string }>();
  if (tables.length === 0) return out;
  const { rows } = await c.query<{ rel: string; col: string; type: string }>(
    `SELECT t.rel, a.attname AS col, format_type(a.atttypid, a.atttypmod) AS type
       FROM unnest($1::text[]) AS t(rel) JOIN pg_index i ON i.indrelid = t.rel::regclass AND i.indisprimary
       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]`, [tables]);
  for (const r of rows) if (KEY_TYPES.has(r.type)) out.set(r.rel, { col: r.col, type: r.type });
  return out;
}

/** Every SETTLE_CHUNK_ROWS-th key of `col` in `table`, ascending, without repeats (an index-only scan of the primary key). */
export async function chunkBounds(c: pg.Client, table: string, col: string): Promise<string[]> {
  const { rows } = await c.query<{ k: string }>(
    `SELECT y.k::text AS k FROM (SELECT x.${qi(col)} AS k, row_number() OVER (ORDER BY x.${qi(col)}) AS r FROM ${table} x) y WHERE y.r % ${SETTLE_CHUNK_ROWS} = 0 ORDER BY y.r`);
  const out: string[] = [];
  for (const r of rows) if (out.at(-1) !== r.k) out.push(r.k);
  return out;
}

/**
 * The hash aggregate of each of `buckets` per table, one statement for all tables (one snapshot
 * on `c`). Each table is read over the key range from its first bucket's lower bound to its last
 * bucket's upper one only: the open buckets of a table written at its end are its last ones, so
 * the statement reads what was written since, not the table.
 */
export async function bucketAggregates(c: pg.Client, tables: ChunkedTable[], where: WhereIs, buckets: (t: ChunkedTable) => number[]): Promise<Map<string, Map<number, Aggregate>>> {
  const out = new Map<string, Map<number, Aggregate>>();
  const parts: string[] = [];
  const params: unknown[] = [];
  const param = (v: unknown): string => {
    params.push(v);
    return `$${params.length}`;
  };
  tables.forEach((t, i) => {
    const want = buckets(t);
    out.set(t.name, new Map());
    if (want.length === 0) return;
    const lo = Math.min(...want);
    const hi = Math.max(...want);
    const col = `x.${qi(t.col)}`;
    const range: string[] = [];
    if (lo > 0) range.push(`${col} >= ${param(t.bounds[lo - 1])}::${t.type}`);
    if (hi < t.bounds.length) range.push(`${col} < ${param(t.bounds[hi])}::${t.type}`);
    parts.push(`SELECT ${i} AS i, width_bucket(${col}, ${param(t.bounds)}::${t.type}[]) AS w, ${AGGREGATE} FROM ${where(t)} x${range.length > 0 ? ` WHERE ${range.join(' AND ')}` : ''} GROUP BY 2`);
  });
  if (parts.length === 0) return out;
  // The key range is an index range scan; a planner without statistics (a table just filled by
  // COPY, never analyzed) picks a scan of the whole table instead: 1.1 s for 32 open chunks at 1M
  // rows, against a few ms. A bucket range open at both ends is the whole table either way. The
  // same estimates (a million rows, for a few hundred) made it plan a parallel query and JIT-compile
  // it on the move's target: 110-160 ms under the freeze before the first row (EXPLAIN ANALYZE,
  // 1M rows), on the source as well once its tails were small.
  await c.query('SET enable_seqscan = off; SET max_parallel_workers_per_gather = 0; SET jit = off');
  const { rows } = await c.query<{ i: number; w: number; n: string; h: string }>(parts.join(' UNION ALL '), params).finally(() => c.query('RESET enable_seqscan; RESET max_parallel_workers_per_gather; RESET jit'));
  for (const r of rows) out.get(tables[r.i]!.name)!.set(Number(r.w), { rows: Number(r.n), hash: r.h });
  return out;
}

/**
 * Compares the buckets of tables written throughout between `a` (the source) and `b` (its
 * replica) while both still change, as settleTables does for whole tables: `a`'s aggregates,
 * `sync` (the replica has applied at least that much), `b`'s and `a`'s again (at once:
 * replicaThenSource). A bucket whose `a`
 * aggregates are the same before and after held still across the comparison, so `b` must hold
 * the same rows: it leaves `open` when they are equal (its rows counted); one that differs stays
 * open and is named in the result (a real difference, for the caller to name its rows). A bucket
 * written meanwhile takes part in the next round; the rounds stop when one settles nothing.
 * What stays open is what the services wrote during the last round (a table's hot end).
 */
export async function settleChunks(a: pg.Client, b: pg.Client, tables: ChunkedTable[], whereA: WhereIs, whereB: WhereIs, sync: () => Promise<void>, rounds: number): Promise<{ differ: Set<string> }> {
  const differ = new Set<string>();
  const pending = new Map(tables.map((t) => [t.name, new Set(t.open)]));
  for (let round = 0; round < rounds; round++) {
    const live = tables.filter((t) => pending.get(t.name)!.size > 0);
    if (live.length === 0) break;
    await splitTails(a, live.filter((t) => pending.get(t.name)!.has(t.bounds.length)), whereA, (t, w) => pending.get(t.name)!.add(w));
    const want = (t: ChunkedTable) => [...pending.get(t.name)!];
    const before = await bucketAggregates(a, live, whereA, want);
    await sync();
    const [replica, after] = await replicaThenSource(b, a, () => bucketAggregates(b, live, whereB, want), () => bucketAggregates(a, live, whereA, want));
    let settled = 0;
    for (const t of live) {
      for (const w of pending.get(t.name)!) {
        const x = before.get(t.name)!.get(w);
        if (!sameAggregate(x, after.get(t.name)!.get(w))) continue;
        pending.get(t.name)!.delete(w);
        settled++;
        if (sameAggregate(x, replica.get(t.name)!.get(w))) {
          t.open = t.open.filter((o) => o !== w);
          t.rows += x?.rows ?? 0;
        } else {
          differ.add(t.name);
        }
      }
    }
    if (settled === 0) break;
  }
  return { differ };
}

/**
 * A table written at its end keeps its last bucket open for good: it is cut at the table's
 * highest key now (an index dive per table, one statement), so that the rows already there can
 * settle in this round and only what is written from now on stays open. `add`: the new bucket.
 */
async function splitTails(c: pg.Client, tables: ChunkedTable[], where: WhereIs, add: (t: ChunkedTable, bucket: number) => void): Promise<void> {
  if (tables.length === 0) return;
  const { rows } = await c.query<{ i: number; k: string | null }>(
    tables.map((t, i) => `SELECT ${i} AS i, (SELECT max(x.${qi(t.col)}) FROM ${where(t)} x)::text AS k`).join(' UNION ALL '));
  for (const r of rows) {
    const t = tables[r.i]!;
    const last = t.bounds.at(-1);
    if (r.k === null || (last !== undefined && BigInt(r.k) <= BigInt(last))) continue;
    t.bounds.push(r.k);
    t.open.push(t.bounds.length);
    add(t, t.bounds.length);
  }
}

/** The open buckets' aggregates of `a` (the source, read under the fence's locks) against `b`'s (the target, caught up): the tables that differ, and the rows and chunks compared. */
export function compareOpen(onA: Map<string, Map<number, Aggregate>>, onB: Map<string, Map<number, Aggregate>>, tables: ChunkedTable[]): { differ: Set<string>; rows: number; chunks: number } {
  const out = { differ: new Set<string>(), rows: 0, chunks: 0 };
  for (const t of tables) {
    for (const w of t.open) {
      const x = onA.get(t.name)?.get(w);
      out.rows += x?.rows ?? 0;
      out.chunks++;
      if (!sameAggregate(x, onB.get(t.name)?.get(w))) out.differ.add(t.name);
    }
  }
  return out;
}
