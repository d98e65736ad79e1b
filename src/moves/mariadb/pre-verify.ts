import { ShardKitError } from '../../errors.js';
import type { VerifyReport } from '../move-engine.js';
import { addTableResult, emptyReport } from '../move-shared.js';
import type { OnStep } from '../step-timer.js';
import { timedStep } from '../step-timer.js';
import { gtidByDomain, startFiltered } from './move-replication.js';
import type { Conn } from './names.js';
import { chunks, compareTable, STATEMENT_TABLES, type VerifyPair } from './verify.js';

/** What the comparison before the freeze saw of one table (`dbNNNNN.t`): its rows and last primary key at the consistent point. */
export type VerifiedTables = Map<string, { rows: number; hi: unknown[] | undefined }>;

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
      for (const p of pairs) {
        report.tables++;
        const r = await compareTable(p.shard, p.table, p.srcDb !== undefined ? { c: src, db: p.srcDb } : undefined, p.b !== undefined ? { c: dst, db: p.dstDb } : undefined, undefined, p.label);
        addTableResult(report, r);
        if (p.a !== undefined && p.b !== undefined && r.mismatches.length === 0) verified.set(pairKey(p), { rows: r.rows, hi: r.last });
      }
    });
  } finally {
    await Promise.all([src, dst, dstAdmin].map((c) => c.end().catch(() => c.destroy())));
  }
  return { report, verified };
}

/**
 * The check under the freeze after a clean verifyAtConsistentPoint: nothing in it reads every
 * row. Every table was equal at a consistent point, and catch-up has applied every source
 * transaction since, so per table the row counts of both sides are compared, and where the
 * source's count moved since the consistent point, the rows past that point's last key (the
 * tail written since) are compared. A table with a differing count or tail, or one the earlier
 * comparison did not settle (new, or on one side only), is compared in full, chunk by chunk,
 * which names the differing keys.
 */
export async function verifyChangedSince(pairs: readonly VerifyPair[], shards: number, verified: VerifiedTables, srcConn: (p: VerifyPair) => Conn, dst: Conn, onStep?: OnStep): Promise<VerifyReport> {
  const report = emptyReport(shards);
  const known = pairs.filter((p) => p.a !== undefined && p.b !== undefined && verified.has(pairKey(p)));
  const count = async (c: Conn, items: Array<{ name: string; i: number }>, out: number[]): Promise<void> => {
    for (const part of chunks(items, STATEMENT_TABLES)) {
      const [rows] = await c.query(part.map(({ name, i }) => `SELECT ${i} AS i, COUNT(*) AS n FROM ${name}`).join(' UNION ALL '));
      for (const r of rows as Array<{ i: number | string; n: number | string }>) out[Number(r.i)] = Number(r.n);
    }
  };
  const srcCounts: number[] = [];
  const dstCounts: number[] = [];
  await timedStep(onStep, 'verify (fenced): COUNT(*) both sides', async () => {
    // Each source table on the connection that may read it (the lock fence's session), all side by side.
    const bySession = new Map<Conn, Array<{ name: string; i: number }>>();
    known.forEach((p, i) => {
      const c = srcConn(p);
      bySession.set(c, [...(bySession.get(c) ?? []), { name: p.a!, i }]);
    });
    await Promise.all([...[...bySession].map(([c, items]) => count(c, items, srcCounts)), count(dst, known.map((p, i) => ({ name: p.b!, i })), dstCounts)]);
  });
  const full = (p: VerifyPair) => timedStep(onStep, 'verify (fenced): a table compared in full', () => compareTable(p.shard, p.table, p.srcDb !== undefined ? { c: srcConn(p), db: p.srcDb } : undefined, p.b !== undefined ? { c: dst, db: p.dstDb } : undefined, undefined, p.label));
  await timedStep(onStep, 'verify (fenced): tails written since, tables not settled', async () => {
    for (const p of pairs) {
      report.tables++;
      const i = known.indexOf(p);
      const seen = verified.get(pairKey(p));
      if (i < 0 || seen === undefined || srcCounts[i] !== dstCounts[i]) {
        addTableResult(report, await full(p));
        continue;
      }
      if (srcCounts[i] !== seen.rows) {
        const tail = await compareTable(p.shard, p.table, { c: srcConn(p), db: p.srcDb! }, { c: dst, db: p.dstDb }, undefined, p.label, undefined, false, seen.hi);
        if (tail.mismatches.length > 0) {
          addTableResult(report, await full(p));
          continue;
        }
      }
      addTableResult(report, { rows: srcCounts[i]!, chunks: 1 });
    }
  });
  return report;
}
