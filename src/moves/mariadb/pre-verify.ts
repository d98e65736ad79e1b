import { ShardKitError } from '../../errors.js';
import type { VerifyReport } from '../move-engine.js';
import { addTableResult, emptyReport } from '../move-shared.js';
import type { OnStep } from '../step-timer.js';
import { timedStep } from '../step-timer.js';
import { gtidByDomain, startFiltered } from './move-replication.js';
import { q, type Conn } from './names.js';
import { chunks, compareTable, primaryKey, STATEMENT_TABLES, type VerifyPair } from './verify.js';

/** What the comparison before the freeze saw of one table (`dbNNNNN.t`): its rows, primary key columns and last key at the consistent point. */
export type VerifiedTables = Map<string, { rows: number; keys: string[]; hi: unknown[] | undefined }>;

const pairKey = (p: VerifyPair): string => `${p.dstDb}.${p.table}`;

/** Opens a consistent snapshot on `c` and returns the binlog GTID position it sees (MariaDB's consistent binlog snapshot). */
async function snapshotPosition(c: Conn): Promise<string> {
  await c.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
  const [st] = await c.query("SHOW STATUS LIKE 'binlog_snapshot_%'");
  const status = new Map((st as Array<{ Variable_name: string; Value: string }>).map((r) => [r.Variable_name.toLowerCase(), r.Value]));
  const [g] = await c.query('SELECT BINLOG_GTID_POS(?, ?) AS p', [status.get('binlog_snapshot_file') ?? '', Number(status.get('binlog_snapshot_position') ?? 0)]);
  return String((g as Array<{ p: string | null }>)[0]!.p ?? '');
}

export interface ConsistentPointOptions {
  /**
   * Opens the source master and target master as the app user (both sides decode values alike;
   * each holds one snapshot for the whole comparison), and the target master as admin (stops the
   * move's connection and lets it run up to the source's snapshot). Closed at the end.
   */
  open: () => Promise<[src: Conn, dst: Conn, dstAdmin: Conn]>;
  /** The tables to compare, read on the (app) connections. */
  pairs: (src: Conn, dst: Conn) => Promise<VerifyPair[]>;
  connection: string;
  domain: number;
  doTables: readonly string[];
  waitS: number;
  /** Tables compared so far, of all (the dashboard's verify progress). */
  onVerify?: (done: number, total: number) => void;
  onStep?: OnStep;
}

/**
 * The full comparison before the freeze, while services write: the source's snapshot is taken at
 * a known GTID position, the move's connection is stopped first and then let run exactly up to
 * that position (START SLAVE UNTIL), where the target's snapshot is taken; the connection then
 * runs on. Both snapshots hold the same transactions of the moving tables, so even a table written
 * throughout compares exactly, chunk by chunk, with no retries and nothing held but two read views.
 */
export async function verifyAtConsistentPoint(shards: number, o: ConsistentPointOptions): Promise<{ report: VerifyReport; verified: VerifiedTables }> {
  const report = emptyReport(shards);
  const verified: VerifiedTables = new Map();
  const [src, dst, dstAdmin] = await o.open();
  try {
    const pairs = await o.pairs(src, dst);
    await timedStep(o.onStep, 'pre-verify: consistent point (source snapshot, target up to it)', async () => {
      try {
        await dstAdmin.query(`STOP SLAVE '${o.connection}'`);
        // Read after the stop: the target is at or behind this position, never past it.
        const at = gtidByDomain(await snapshotPosition(src)).get(o.domain)?.text;
        if (at !== undefined) {
          await dstAdmin.query(`START SLAVE '${o.connection}' UNTIL master_gtid_pos = ?`, [at]);
          const [r] = await dstAdmin.query('SELECT MASTER_GTID_WAIT(?, ?) AS w', [at, o.waitS]);
          if (Number((r as Array<{ w: number | string }>)[0]!.w) !== 0) throw new ShardKitError('SHARD_UNAVAILABLE', `the move's connection '${o.connection}' did not reach the source's position ${at} within ${o.waitS} s: not freezing`);
        }
        await dst.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
      } finally {
        // Runs on past the point whatever happened (the filter is set again on every start).
        await startFiltered(dstAdmin, o.connection, o.doTables);
      }
    });
    await timedStep(o.onStep, 'pre-verify: chunks compared (both snapshots)', async () => {
      o.onVerify?.(0, pairs.length);
      for (const p of pairs) {
        report.tables++;
        const r = await compareTable(p.shard, p.table, p.srcDb !== undefined ? { c: src, db: p.srcDb } : undefined, p.b !== undefined ? { c: dst, db: p.dstDb } : undefined, undefined, p.label);
        addTableResult(report, r);
        if (p.a !== undefined && p.b !== undefined && r.mismatches.length === 0) verified.set(pairKey(p), { rows: r.rows, keys: await primaryKey(src, p.srcDb!, p.table), hi: r.last });
        o.onVerify?.(report.tables, pairs.length);
      }
    });
  } finally {
    await Promise.all([src, dst, dstAdmin].map((c) => c.end().catch(() => c.destroy())));
  }
  return { report, verified };
}

/**
 * The lowest and highest primary key of each table (`i` -> `lo`/`hi` as text): two index dives
 * per table, whatever its size. One statement per bound (a session under LOCK TABLES may name a
 * locked table once per statement) and per STATEMENT_TABLES tables.
 */
export async function keyBounds(c: Conn, items: Array<{ name: string; keys: readonly string[]; i: number }>, out: Array<{ lo?: string; hi?: string }>): Promise<void> {
  for (const part of chunks(items, STATEMENT_TABLES)) {
    for (const w of ['lo', 'hi'] as const) {
      const sql = part.map(({ name, keys, i }) => {
        const k = keys.map(q);
        return `(SELECT ${i} AS i, CONCAT_WS(CHAR(31), ${k.join(', ')}) AS k FROM ${name} ORDER BY ${k.map((x) => `${x} ${w === 'lo' ? 'ASC' : 'DESC'}`).join(', ')} LIMIT 1)`;
      }).join(' UNION ALL ');
      const [rows] = await c.query(sql);
      for (const r of rows as Array<{ i: number | string; k: string | null }>) (out[Number(r.i)] ??= {})[w] = String(r.k);
    }
  }
}

/**
 * The check under the freeze after a clean verifyAtConsistentPoint: nothing in it grows with the
 * tables' size. Every table was equal at a consistent point, and catch-up has applied every source
 * transaction since, so per table the lowest and highest primary keys of both sides are compared
 * (index dives), and where the source's highest key moved past the consistent point's, the rows
 * past that key (the tail written since) are compared. A table whose bounds or tail differ, or
 * that the earlier comparison did not settle (new, or on one side only), is compared in full,
 * which names the differing keys.
 */
export async function verifyChangedSince(pairs: readonly VerifyPair[], shards: number, verified: VerifiedTables, srcConn: (p: VerifyPair) => Conn, dst: Conn, onStep?: OnStep): Promise<VerifyReport> {
  const report = emptyReport(shards);
  const known = pairs.filter((p) => p.a !== undefined && p.b !== undefined && verified.has(pairKey(p)));
  const srcBounds: Array<{ lo?: string; hi?: string }> = [];
  const dstBounds: Array<{ lo?: string; hi?: string }> = [];
  await timedStep(onStep, 'verify (fenced): key bounds both sides', async () => {
    // Each source table on the connection that may read it (the lock fence's session), all side by side.
    const bySession = new Map<Conn, Array<{ name: string; keys: string[]; i: number }>>();
    known.forEach((p, i) => {
      const c = srcConn(p);
      bySession.set(c, [...(bySession.get(c) ?? []), { name: p.a!, keys: verified.get(pairKey(p))!.keys, i }]);
    });
    await Promise.all([...[...bySession].map(([c, items]) => keyBounds(c, items, srcBounds)), keyBounds(dst, known.map((p, i) => ({ name: p.b!, keys: verified.get(pairKey(p))!.keys, i })), dstBounds)]);
  });
  const full = (p: VerifyPair) => timedStep(onStep, 'verify (fenced): a table compared in full', () => compareTable(p.shard, p.table, p.srcDb !== undefined ? { c: srcConn(p), db: p.srcDb } : undefined, p.b !== undefined ? { c: dst, db: p.dstDb } : undefined, undefined, p.label));
  await timedStep(onStep, 'verify (fenced): tails written since, tables not settled', async () => {
    for (const p of pairs) {
      report.tables++;
      const i = known.indexOf(p);
      const seen = verified.get(pairKey(p));
      const [a, b] = [srcBounds[i], dstBounds[i]];
      if (i < 0 || seen === undefined || a?.lo !== b?.lo || a?.hi !== b?.hi) {
        addTableResult(report, await full(p));
        continue;
      }
      let rows = seen.rows;
      if (a?.hi !== (seen.hi === undefined ? undefined : seen.hi.map(String).join(String.fromCharCode(31)))) {
        const tail = await compareTable(p.shard, p.table, { c: srcConn(p), db: p.srcDb! }, { c: dst, db: p.dstDb }, undefined, p.label, undefined, false, seen.hi);
        if (tail.mismatches.length > 0) {
          addTableResult(report, await full(p));
          continue;
        }
        rows += tail.rows;
      }
      addTableResult(report, { rows, chunks: 1 });
    }
  });
  return report;
}
