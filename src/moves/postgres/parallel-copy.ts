import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import type { TableProgress } from '../move-engine.js';
import type { Client } from './engine-base.js';

/** One table of the copy: its schema-qualified, quoted name (the same on both sides) and the columns COPY names. */
export interface CopyTable {
  name: string;
  columns: string[];
}

/** What the copy reports per table (rows once its COPY ended; bytes as they stream). */
export interface TableCopyState {
  rows: number;
  bytes: number;
  done: boolean;
  /** The target's backend while the table's COPY FROM runs (its pg_stat_progress_copy counts the rows). */
  pid?: number;
}

export interface ParallelCopyOptions {
  tables: CopyTable[];
  /** The snapshot the source's slot exported: every table is read as of the slot's starting point. */
  snapshot: string;
  /** How many tables are copied at once (one source and one target connection each). */
  streams: number;
  connectSource: () => Promise<Client>;
  connectTarget: () => Promise<Client>;
  /** Run first in each target transaction: a lock that an abort's DROP waits for (copy-engine.ts). */
  guard?: string;
  /** Filled as the copy goes, one entry per table name. */
  state: Map<string, TableCopyState>;
  /** Awaited with the bytes of each piece before it goes on to the target (a rate limit); the pipe's back-pressure pauses the source's COPY meanwhile. */
  throttle?: (rows: number, bytes: number) => Promise<void>;
  /**
   * The group a table belongs to (a move: its shard's schema). A group's tables are copied by one
   * stream, in the order given, after `before` of the group ran in that stream's transaction.
   */
  groupOf?: (table: CopyTable) => string;
  /** SQL run on the target in the stream's transaction before the group's first table (a move makes the shard's tables there, so their DDL overlaps the other streams' copies). */
  before?: (group: string) => string | undefined;
  /** Each table emptied in the stream's transaction before its COPY (what an interrupted copy left). */
  truncate?: boolean;
}

/**
 * Copies every table from the source to the target, `streams` tables at a time, each with a
 * binary COPY TO STDOUT piped into COPY FROM STDIN (no rows in this process's memory beyond the
 * stream's buffers). Every source connection imports the exported snapshot in a REPEATABLE READ
 * transaction, so all tables are read as of the slot's consistent point, and the subscription
 * created on that slot afterwards streams exactly the changes after it. Citus does the same
 * (citusdata/citus#6119): the server's table sync workers start slowly and a few at a time.
 * The target's tables must be empty; a failed copy commits nothing on a stream that failed, but
 * other streams may have committed: a copy tried again sets `truncate`.
 */
export async function copyTablesInParallel(o: ParallelCopyOptions): Promise<void> {
  const groups = new Map<string, CopyTable[]>();
  for (const [i, t] of o.tables.entries()) {
    const g = o.groupOf?.(t) ?? String(i);
    groups.set(g, [...(groups.get(g) ?? []), t]);
  }
  const queue = [...groups];
  for (const t of o.tables) if (!o.state.has(t.name)) o.state.set(t.name, { rows: 0, bytes: 0, done: false });
  const worker = async (): Promise<void> => {
    if (queue.length === 0) return;
    const src = await o.connectSource();
    let dst: Client | undefined;
    try {
      dst = await o.connectTarget();
      const { rows: [p] } = await dst.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // One commit per stream on the target, not one per table (each waits for a synchronous
      // standby's flush; 320 small tables made the commits most of the copy).
      await dst.query('BEGIN');
      if (o.guard !== undefined) await dst.query(o.guard);
      await src.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      await src.query(`SET TRANSACTION SNAPSHOT '${o.snapshot.replace(/'/g, "''")}'`);
      for (let g = queue.shift(); g !== undefined; g = queue.shift()) {
        const [group, tables] = g;
        const before = o.before?.(group);
        if (before !== undefined) await dst.query(before);
        for (const t of tables) {
          if (o.truncate === true) await dst.query(`TRUNCATE ${t.name}`);
          await copyTable(src, dst, p!.pid, t, o.state.get(t.name)!, o.throttle);
        }
      }
      await dst.query('COMMIT');
      await src.query('COMMIT');
    } finally {
      // A connection that failed mid-COPY is in no state to reuse: each worker's are its own.
      await src.end().catch(() => undefined);
      await dst?.end().catch(() => undefined);
    }
  };
  const results = await Promise.allSettled(Array.from({ length: Math.max(1, Math.min(o.streams, queue.length)) }, worker));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}

/** One table's binary COPY from the source's snapshot into the target, in the connections' open transactions. */
async function copyTable(src: Client, dst: Client, pid: number, t: CopyTable, st: TableCopyState, throttle: ParallelCopyOptions['throttle']): Promise<void> {
  st.pid = pid;
  const cols = `(${t.columns.join(', ')})`;
  const out = src.query(copyTo(`COPY ${t.name} ${cols} TO STDOUT (FORMAT binary)`));
  const into = dst.query(copyFrom(`COPY ${t.name} ${cols} FROM STDIN (FORMAT binary)`));
  const count = new Transform({
    transform(chunk: Buffer, _enc, done) {
      st.bytes += chunk.length;
      if (throttle === undefined) done(null, chunk);
      else throttle(0, chunk.length).then(() => done(null, chunk), (err: Error) => done(err));
    },
  });
  await pipeline(out, count, into);
  st.rows = into.rowCount;
  st.done = true;
  delete st.pid;
}

/**
 * The copy's progress from `state`, for the tables `counted` keeps: rows of finished tables, and
 * for tables still copying the target's COPY counter (pg_stat_progress_copy of their backend);
 * bytes as streamed. `running` lists the tables in flight.
 */
export async function copyProgress(dst: Client, state: Map<string, TableCopyState>, counted: (table: string) => boolean): Promise<{ rows: number; bytes: number; running: TableProgress[] }> {
  const tables = [...state].filter(([t]) => counted(t));
  const pids = tables.filter(([, s]) => !s.done && s.pid !== undefined).map(([, s]) => s.pid!);
  const byPid = new Map<number, number>();
  if (pids.length > 0) {
    const { rows } = await dst.query<{ pid: number; n: string }>('SELECT pid, tuples_processed::text AS n FROM pg_stat_progress_copy WHERE pid = ANY($1::int[])', [pids]);
    for (const r of rows) byPid.set(r.pid, Number(r.n));
  }
  let rows = 0;
  let bytes = 0;
  const running: TableProgress[] = [];
  for (const [table, s] of tables) {
    bytes += s.bytes;
    if (s.done) rows += s.rows;
    else if (s.pid !== undefined) {
      const n = byPid.get(s.pid) ?? 0;
      rows += n;
      running.push({ table, rowsCopied: n, bytesCopied: s.bytes });
    }
  }
  return { rows, bytes, running };
}

/** The columns COPY names for `tables` (schema, table) on the source, in their order there (generated columns left out: the target computes them). */
export async function copyColumns(src: Client, tables: Array<{ ns: string; t: string }>, quote: (s: string) => string): Promise<CopyTable[]> {
  const { rows } = await src.query<{ ns: string; t: string; cols: string[] }>(
    `SELECT n.nspname AS ns, c.relname AS t, array_agg(a.attname::text ORDER BY a.attnum) AS cols
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
      WHERE a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
        AND (n.nspname, c.relname) IN (SELECT * FROM unnest($1::text[], $2::text[]))
      GROUP BY n.nspname, c.relname, c.relpages ORDER BY c.relpages DESC`,
    [tables.map((x) => x.ns), tables.map((x) => x.t)]);
  return rows.map((r) => ({ name: `${quote(r.ns)}.${quote(r.t)}`, columns: r.cols.map(quote) }));
}
