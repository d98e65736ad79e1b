import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { ShardKitError } from '../../errors.js';

/** One statement as a superuser on the master (dev cluster: PostgresServer.sql; fleet: its admin account), with a timeout where one is asked for. */
export type PgAdminSql = <T extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[], timeoutMs?: number) => Promise<T[]>;

const SETTING = 'default_transaction_read_only';

/**
 * The read-only fence of a PostgreSQL planned failover, on a master that answers. New transactions
 * default to read-only: a write gets 25006, a definite "not done" that services take for the
 * fence, so with the master's ranges frozen they hold the write and send it to the new master.
 * The write transactions under way get up to `drainMs` to end as they would have; cut off by the
 * stop or the terminate that follows, their clients would get an answer they cannot trust (503:
 * committed or not?). With `terminate`, every other client session is then ended (a server that
 * stays up), so no transaction begun before the fence commits after it.
 */
export async function fenceReadOnly(sql: PgAdminSql, options: { drainMs: number; terminate: boolean }): Promise<void> {
  await sql(`ALTER SYSTEM SET ${SETTING} = on`);
  await sql('SELECT pg_reload_conf()');
  const deadline = Date.now() + options.drainMs;
  for (;;) {
    const [r] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()");
    if ((r?.n ?? 0) === 0 || Date.now() >= deadline) break;
    await sleep(10);
  }
  // With a timeout, pg_terminate_backend waits until each session is gone (its commit in flight
  // landed or rolled back), so the WAL end read next holds everything acknowledged.
  if (options.terminate) await sql("SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()", [], 15_000);
}

/** The fence lifted on a master that still runs: it takes writes again. */
export async function liftReadOnlyFence(sql: PgAdminSql): Promise<void> {
  await sql(`ALTER SYSTEM RESET ${SETTING}`);
  await sql('SELECT pg_reload_conf()');
}

/** The fence's setting, for a stopped server whose postgresql.auto.conf is edited directly. */
export const READ_ONLY_FENCE_SETTING = SETTING;

/** Waits until the standby `name` (its statements: `sql`) has replayed `lsn`; PRECONDITION_FAILED, naming what was undone, after the deadline. */
export async function replayedBy(sql: PgAdminSql, name: string, lsn: string, deadline: number, undone: string): Promise<void> {
  for (;;) {
    const [r] = await sql<{ ok: boolean }>('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [lsn]);
    if (r?.ok) return;
    if (Date.now() > deadline) throw new ShardKitError('PRECONDITION_FAILED', `standby ${name} did not replay ${lsn} in time: ${undone}`);
    await sleep(20);
  }
}
