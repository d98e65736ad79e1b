import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { autoIncrements } from '../../moves/mariadb/index.js';
import type { SequenceRow } from '../../moves/postgres/index.js';
import { SEQUENCE_SQL } from '../../storage/sqlite/index.js';
import { adminQuery, type HostAdmin } from '../failover/host-admin.js';

/**
 * The id counters of shards a restore replaces (AUTO_INCREMENT, sequences, sqlite_sequence): read
 * on the live shard before, and set back after the restore (and any log replay) to the higher of
 * the two. A local id is part of a public ID, so no id handed out after the restore point may be
 * handed out again. Used by every restore in place: the full one (`backup restore`, each engine's
 * restoreUnit) and `--shards` (restore-aside-*.ts). No margin: the restored data gives out ids
 * only after the restore ended, past the live counter.
 */

const q = (n: string) => `\`${n.replace(/`/g, '``')}\``;
const literal = (s: string) => `'${s.replace(/'/g, "''")}'`;

/**
 * AUTO_INCREMENT of each `db.table` of `names` on `host` (those that have one); without `names`,
 * of every table of the shard databases (`dbNNNNN`) that has one.
 */
export async function mariadbCounters(admin: HostAdmin, host: string, names?: readonly string[]): Promise<Map<string, bigint>> {
  const all = names ?? (await adminQuery<Array<{ n: string }>>(admin, host,
    "SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA REGEXP '^db[0-9]{5}$' AND AUTO_INCREMENT IS NOT NULL")).map((r) => r.n);
  if (all.length === 0) return new Map();
  const c = await admin.connect(host);
  try {
    const got = await autoIncrements(c, all);
    return new Map([...got].flatMap(([n, v]) => (v === undefined ? [] : [[n, v] as const])));
  } finally {
    await c.end().catch(() => c.destroy());
  }
}

/**
 * Raises each counter of `before` on `host` where the table holds a lower one now (tables gone
 * since are skipped). An ALTER never lowers it: InnoDB keeps max(id) + 1 at least, and a counter
 * higher now is left alone. `binlog: false`: not replicated (each host of the pair is set itself).
 */
export async function raiseMariadbCounters(admin: HostAdmin, host: string, before: Map<string, bigint>, options: { binlog: boolean }): Promise<void> {
  if (before.size === 0) return;
  const now = await mariadbCounters(admin, host, [...before.keys()]);
  const alters = [...now].flatMap(([name, n]) => {
    const want = before.get(name)!;
    return n < want ? [`ALTER TABLE ${name.split('.').map(q).join('.')} AUTO_INCREMENT = ${want}`] : [];
  });
  if (alters.length === 0) return;
  await adminQuery(admin, host, ...(options.binlog ? [] : ['SET SESSION sql_log_bin = 0']), ...alters);
}

/** The shard schemas (`dbNNNNN`) of a PostgreSQL database, for SEQUENCES_SQL's $1. */
export const PG_SHARD_SCHEMAS_SQL = "SELECT nspname AS n FROM pg_namespace WHERE nspname ~ '^db[0-9]{5}$' ORDER BY 1";

/**
 * One statement setting each used sequence of `before` (SEQUENCES_SQL rows read on the live
 * master) to the higher of its value then and its value now; sequences gone since are skipped
 * (joined by name), so it can end a load's transaction. Empty when there is nothing to set.
 */
export function raiseSequencesSql(before: readonly SequenceRow[]): string {
  const used = before.filter((r) => r.last !== null);
  if (used.length === 0) return '';
  const values = used.map((r) => `(${literal(r.ns)}, ${literal(r.seq)}, ${BigInt(r.last!)}::bigint)`).join(', ');
  // pg_sequence_last_value is null for a sequence never used since it was made: GREATEST skips it.
  return `SELECT setval(c.oid::regclass, GREATEST(v.last, pg_sequence_last_value(c.oid)), true) FROM (VALUES ${values}) AS v(ns, seq, last)
  JOIN pg_namespace n ON n.nspname = v.ns JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = v.seq AND c.relkind = 'S';`;
}

/** sqlite_sequence of a shard file (table -> last id given out); empty when the file or the table is missing. */
export function sqliteCounters(path: string): Map<string, number> {
  if (!existsSync(path)) return new Map();
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const has = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'").get() !== undefined;
    if (!has) return new Map();
    const rows = db.prepare('SELECT name, seq FROM sqlite_sequence').all() as Array<{ name: string; seq: number }>;
    return new Map(rows.filter((r) => r.seq > 0).map((r) => [r.name, r.seq]));
  } finally {
    db.close();
  }
}

/**
 * Raises the counters of the file at `path` (created empty when missing: a file holding only
 * sqlite_sequence, no fleet) to `counters` where they are lower. A table the file lacks keeps its
 * row: SQLite reads it when a writer creates the table and inserts. The last connection's close
 * checkpoints a WAL file away.
 */
export function raiseSqliteCounters(path: string, counters: Map<string, number>): void {
  if (counters.size === 0) return;
  const db = new Database(path);
  try {
    // SQLite makes sqlite_sequence with the first AUTOINCREMENT table, and never drops it.
    db.exec('CREATE TABLE IF NOT EXISTS "shardkit_counters" (id INTEGER PRIMARY KEY AUTOINCREMENT); DROP TABLE "shardkit_counters";');
    // The SQLite backend's own raise.
    const raise = db.prepare(SEQUENCE_SQL.raise);
    const insert = db.prepare(SEQUENCE_SQL.insert);
    db.transaction(() => {
      for (const [name, seq] of counters) {
        raise.run(seq, name, seq);
        insert.run(name, seq, name);
      }
    }).immediate();
  } finally {
    db.close();
  }
}
