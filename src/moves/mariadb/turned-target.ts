import { ShardKitError } from '../../errors.js';
import type { MoveRecord } from '../../topology/shard-map.js';
import { binlogPos, connectionStatus, moveConnectionName, removeConnection, replicatesAsSlave, type ConnectionStatus } from './move-replication.js';
import { q, type Conn } from './names.js';

/** What the target's part of an abort needs of the replicated engine. */
export interface TargetCleanup {
  withAdmin<T>(host: string, fn: (c: Conn) => Promise<T>): Promise<T>;
  /** Our tables present in each of `dbs`. */
  presentMany(c: Conn, dbs: string[]): Promise<Map<string, string[]>>;
  /** The move's copy dropped, logged (its slave replays the drops). */
  dropCopy(c: Conn, move: MoveRecord): Promise<void>;
  /** The move's databases on the target (live and fenced names). */
  databases(move: MoveRecord): string[];
}

/**
 * The move's copy on one server, dropped there unlogged: for what only that server holds (a copy
 * loaded into a slave by a loader of its own, rows a move connection applied past a failover).
 * The target was empty before the move: nothing else of these databases is on it.
 */
export async function dropUnloggedCopy(t: TargetCleanup, c: Conn, move: MoveRecord): Promise<void> {
  const dbs = t.databases(move);
  await c.query('SET SESSION sql_log_bin = 0');
  // A loader still running (its pipe outlived the master) holds the tables' metadata locks.
  await c.query('SET SESSION lock_wait_timeout = 60');
  const [procs] = await c.query(`SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB IN (${dbs.map(() => '?').join(', ')}) AND ID <> CONNECTION_ID() AND USER <> 'system user'`, dbs);
  for (const p of procs as Array<{ id: number }>) await c.query(`KILL ${Number(p.id)}`).catch(() => undefined);
  for (const [db, tables] of await t.presentMany(c, dbs)) {
    if (tables.length > 0) await c.query(`DROP TABLE IF EXISTS ${tables.map((x) => `${q(db)}.${q(x)}`).join(', ')}`);
  }
}

/**
 * The target's part of an abort after the target pair failed over since the move started: its
 * recorded master (`old`, where the move's connection was made) is now the slave of `writable`,
 * or down. Nothing is written on `old` that the pair's master does not binlog first: a root
 * statement passes read_only, and its transaction, missing on the master, would break the pair's
 * replication at the next failover (gtid_strict_mode) or reconnect. So: the connection stops on
 * `old`; the copy is dropped on `writable`, logged, and reaches `old` by replication; what only
 * `old` holds goes unlogged once it applied those drops; the connection is removed last (until
 * then it marks the copy as this move's). `old` keeps the pair's positions: the failover set them.
 * With `old` down, its copy and connection stay until it is rebuilt from the pair's master.
 */
export async function abortOnTurnedTarget(t: TargetCleanup, move: MoveRecord, writable: string): Promise<void> {
  const name = moveConnectionName(move);
  const old = move.target.master;
  // Down means it does not answer; any other failure fails the abort (run again), never skips the stop.
  const up = await t.withAdmin(old, async () => true).catch(() => false);
  const status: ConnectionStatus | undefined = !up ? undefined : await t.withAdmin(old, async (c) => {
    const st = await connectionStatus(c, name);
    if (st !== undefined) await c.query(`STOP SLAVE '${name}'`);
    return st;
  });
  // Only a copy this move made (see undoTarget): without the connection or its record, not ours.
  if (status === undefined && move.detail?.connection === undefined) {
    if (up) return;
    throw new ShardKitError('SHARD_UNAVAILABLE', `the target ${old} of move ${move.id} does not answer and the move recorded no copy: whether the copy on ${writable} is this move's is unknown; start ${old} (or rebuild it as ${writable}'s slave), then run shards move --abort again`);
  }
  const position = await t.withAdmin(writable, async (c) => {
    await t.dropCopy(c, move);
    return binlogPos(c);
  });
  if (!up) return;
  await t.withAdmin(old, async (c) => {
    // The drops reach it only when it replicates (a planned failover's old master); after an
    // emergency one it does not, and what it holds goes unlogged at once (it is rebuilt later).
    if (await replicatesAsSlave(c)) await c.query('SELECT MASTER_GTID_WAIT(?, 30)', [position]);
    await dropUnloggedCopy(t, c, move);
    await removeConnection(c, name);
  });
}
