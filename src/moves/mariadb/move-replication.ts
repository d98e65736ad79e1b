import type mysql from 'mysql2/promise';
import { ShardKitError } from '../../errors.js';
import type { MoveAdmin } from './move-admin.js';
import type { MoveRecord } from '../../topology/shard-map.js';

/**
 * The named replication connection a MariaDB move runs on the target master (multi-source
 * replication: it sits beside the target's own '' connection, if any). The name is derived from
 * the move id, so a resumed mover finds it.
 */
export function moveConnectionName(move: MoveRecord): string {
  return `move_${move.id.replace(/[^A-Za-z0-9_]/g, '_')}`.slice(0, 63);
}

type Conn = mysql.Connection;

export interface ConnectionStatus {
  ioRunning: boolean;
  sqlRunning: boolean;
  lastError: string;
  doTables: string;
  /** DO_DOMAIN_IDS (the source's domain), kept in master.info: known without reaching the source. */
  doDomains: number[];
}

/** SHOW ALL SLAVES STATUS, the row of `name` (connection names compare without case). */
export async function connectionStatus(c: Conn, name: string): Promise<ConnectionStatus | undefined> {
  const [rows] = await c.query('SHOW ALL SLAVES STATUS');
  const row = (rows as Array<Record<string, unknown>>).find((r) => String(r.Connection_name).toLowerCase() === name.toLowerCase());
  if (row === undefined) return undefined;
  const err = [row.Last_IO_Error, row.Last_SQL_Error].map((x) => String(x ?? '')).filter((x) => x !== '').join('; ');
  return { ioRunning: row.Slave_IO_Running === 'Yes', sqlRunning: row.Slave_SQL_Running === 'Yes', lastError: err, doTables: String(row.Replicate_Do_Table ?? ''),
    doDomains: String(row.Replicate_Do_Domain_Ids ?? '').split(',').map((x) => x.trim()).filter((x) => /^\d+$/.test(x)).map(Number),
  };
}

/** Other replication connections that run on this server (gtid_slave_pos can only be set with all of them stopped). */
export async function runningConnections(c: Conn): Promise<string[]> {
  const [rows] = await c.query('SHOW ALL SLAVES STATUS');
  return (rows as Array<Record<string, unknown>>).filter((r) => r.Slave_IO_Running === 'Yes' || r.Slave_SQL_Running === 'Yes').map((r) => String(r.Connection_name));
}

/** Parses `1-101-42,2-201-7` into domain -> `d-s-n`. */
export function gtidByDomain(pos: string): Map<number, { text: string; seq: bigint }> {
  const out = new Map<number, { text: string; seq: bigint }>();
  for (const part of pos.split(',').map((x) => x.trim()).filter((x) => x !== '')) {
    const m = /^(\d+)-(\d+)-(\d+)$/.exec(part);
    if (m === null) throw new ShardKitError('INTERNAL', `unreadable GTID position part "${part}" in "${pos}"`);
    out.set(Number(m[1]), { text: part, seq: BigInt(m[3]!) });
  }
  return out;
}

const str = (c: Conn, sql: string) => c.query(sql).then(([r]) => String(Object.values((r as Array<Record<string, unknown>>)[0]!)[0] ?? ''));

export async function sourceDomain(c: Conn): Promise<number> {
  return Number(await str(c, 'SELECT @@GLOBAL.gtid_domain_id'));
}

export async function binlogPos(c: Conn): Promise<string> {
  return str(c, 'SELECT @@GLOBAL.gtid_binlog_pos');
}

export async function slavePos(c: Conn): Promise<string> {
  return str(c, 'SELECT @@GLOBAL.gtid_slave_pos');
}

/**
 * Creates the connection (stopped): GTID from slave_pos, only the source's own domain
 * (DO_DOMAIN_IDS, kept across restarts in the connection's master.info).
 */
export async function createConnection(c: Conn, admin: MoveAdmin, name: string, source: string, domain: number): Promise<void> {
  const addr = admin.address(source);
  await c.query(
    `CHANGE MASTER '${name}' TO MASTER_HOST = ?, MASTER_PORT = ?, MASTER_USER = ?, MASTER_PASSWORD = ?, MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1, DO_DOMAIN_IDS = (${domain})`,
    [addr.host, addr.port, admin.replication.user, admin.replication.password ?? ''],
  );
}

/**
 * Sets the connection's table filter (replicate_do_table is per connection in multi-source
 * replication, set through default_master_connection) and starts it. The filter is not persisted
 * by the server: every (re)start goes through here.
 *
 * A target master restarted without skip-slave-start starts the connection by itself with no
 * filter, and applies the source's whole GTID domain (docs/moves.md, "A master died during a
 * move"). The mover never runs it with an empty filter, so one found running that way ran
 * unfiltered: it is stopped at once and the move refused (abort it), not quietly re-filtered.
 */
export async function startFiltered(c: Conn, name: string, doTables: readonly string[]): Promise<void> {
  await refuseReplicatingTarget(c, `its move connection '${name}' stays stopped`);
  const st = await connectionStatus(c, name);
  if (st !== undefined && (st.ioRunning || st.sqlRunning) && st.doTables.trim() === '') {
    await c.query(`STOP SLAVE '${name}'`);
    throw new ShardKitError('SHARD_UNAVAILABLE', `replication '${name}' was running without its table filter (the target master restarted without skip-slave-start): it may have applied the source's writes to tables outside the move. It is stopped now; abort the move (shards move --abort) and check the target's own shards (docs/moves.md, "A master died during a move")`);
  }
  await c.query(`STOP SLAVE '${name}'`);
  await c.query('SET @@SESSION.default_master_connection = ?', [name]);
  try {
    await c.query('SET GLOBAL replicate_do_table = ?', [doTables.join(',')]);
  } finally {
    await c.query("SET @@SESSION.default_master_connection = ''");
  }
  await c.query(`START SLAVE '${name}'`);
}

/** Whether the server replicates from another one (its default connection is configured): a slave. */
export async function replicatesAsSlave(c: Conn): Promise<boolean> {
  const [rows] = await c.query('SHOW SLAVE STATUS');
  return (rows as unknown[]).length > 0;
}

/**
 * A move's target master that replicates from another server now (its default connection): the
 * pair was failed over since the move recorded it. Nothing of the move may write there any more
 * (read_only lifted, the source's rows applied): the slave would hold transactions its master
 * never has. VERSION_CONFLICT; the move aborts. The server's side of move-state.ts
 * refuseTurnedTarget, which reads the map.
 */
export async function refuseReplicatingTarget(c: Conn, what: string): Promise<void> {
  if (!(await replicatesAsSlave(c))) return;
  throw new ShardKitError('VERSION_CONFLICT', `the move's target master replicates from another server: its pair was failed over since the move started, and the range never switches to a host failed away from; ${what} (the move aborts; move again to the pair's master)`);
}

/** Stops and forgets the connection (its relay logs go with it). */
export async function removeConnection(c: Conn, name: string): Promise<void> {
  if ((await connectionStatus(c, name)) === undefined) return;
  await c.query(`STOP SLAVE '${name}'`);
  await c.query(`RESET SLAVE '${name}' ALL`);
}

/**
 * Sets gtid_slave_pos to the source's snapshot position only. MariaDB 10.11 checks every domain
 * of a connecting slave's position against the master's binlog, DO_DOMAIN_IDS notwithstanding
 * (MDEV-28213): a target whose own domain also appears in the source's binlog (shards moved the
 * other way before, binlogged there by log_slave_updates with gaps) would be refused with error
 * 1236. So the position holds the source's domain alone, which gtid_strict_mode refuses to set
 * (the target's own binlog domains are missing): strict mode is lifted for that one statement.
 */
export async function setMovePosition(c: Conn, entry: string | undefined): Promise<void> {
  const strict = await str(c, 'SELECT @@GLOBAL.gtid_strict_mode');
  await c.query('SET GLOBAL gtid_strict_mode = 0');
  try {
    await c.query('SET GLOBAL gtid_slave_pos = ?', [entry ?? '']);
  } finally {
    await c.query(`SET GLOBAL gtid_strict_mode = ${strict === '1' ? 1 : 0}`);
  }
}

/**
 * After the connection is gone: gtid_slave_pos back to a position strict mode accepts (the
 * target's own binlog for every domain, the applied position for the source's), so a later
 * CHANGE MASTER ... slave_pos or current_pos (a failover of the target pair) starts right.
 */
export async function restoreSlavePosition(c: Conn, domain: number): Promise<void> {
  // The source's domain: the applied position, or the target's binlog if that is further (the
  // connection is stopped: neither moves any more).
  const applied = gtidByDomain(await slavePos(c)).get(domain);
  const fromBinlog = gtidByDomain(await binlogPos(c)).get(domain);
  const entry = applied !== undefined && (fromBinlog === undefined || applied.seq >= fromBinlog.seq) ? applied.text : fromBinlog?.text;
  // Every other domain: the binlog's position, read by the SET itself. The target keeps serving
  // its other shards, and a commit between a separate read and the SET would make strict mode
  // refuse the position (error 1947; under a steady write load that happened on every retry).
  const others = `TRIM(BOTH ',' FROM REGEXP_REPLACE(@@GLOBAL.gtid_binlog_pos, '(^|,)${Math.trunc(domain)}-[0-9]+-[0-9]+', ''))`;
  for (let attempt = 1; ; attempt++) {
    try {
      await c.query(`SET GLOBAL gtid_slave_pos = CONCAT_WS(',', NULLIF(${others}, ''), ?)`, [entry ?? null]);
      return;
    } catch (err) {
      // Still possible between the statement's read and its check: a few microseconds.
      if ((err as { errno?: number }).errno !== 1947 || attempt >= 20) throw err;
    }
  }
}

/** Does the connection's filter list hold exactly these tables (order aside)? */
export function filterMatches(status: ConnectionStatus, doTables: readonly string[]): boolean {
  const have = status.doTables.split(',').map((x) => x.trim()).filter((x) => x !== '').sort();
  const want = [...doTables].sort();
  return have.length === want.length && have.every((x, i) => x === want[i]);
}

/**
 * The dump is loaded into the target's slave directly (binlog off), beside that slave's own
 * replication from the target master. Anything the master binlogged before (a resumed prepare's
 * DROP of an old copy, say) must be applied on the slave first: applied later, it would land on
 * the freshly loaded tables (a drop removes them under the loader: ER_NO_SUCH_TABLE).
 */
export async function slaveCaughtUp(admin: MoveAdmin, master: string, slave: string, timeoutS: number): Promise<void> {
  const on = async <T>(host: string, fn: (c: Conn) => Promise<T>): Promise<T> => {
    const c = await admin.connect(host);
    try {
      return await fn(c);
    } finally {
      await c.end().catch(() => c.destroy());
    }
  };
  const pos = await on(master, binlogPos);
  if (pos === '') return;
  const w = await on(slave, async (c) => Number(((await c.query('SELECT MASTER_GTID_WAIT(?, ?) AS w', [pos, timeoutS]))[0] as Array<{ w: number | string }>)[0]!.w));
  if (w !== 0) throw new ShardKitError('SHARD_UNAVAILABLE', `the target's slave ${slave} did not reach its master ${master}'s position ${pos} within ${timeoutS} s: it must replicate its master before a move loads a copy into it`);
}

/**
 * A move without a target slave loads its copy into the target master alone, binlog off: a slave
 * replicating from that master would never get the tables and stop at the first write to them
 * (an operator's review: `shards move --to X` without `--to-slave` broke X's slave). Refused
 * while one is attached, before anything is created.
 */
export async function refuseUnnamedSlave(c: Conn, master: string): Promise<void> {
  const [rows] = await c.query("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'");
  const n = Number((rows as Array<{ n: number | string }>)[0]!.n);
  if (n > 0) throw new ShardKitError('INVALID_ARGUMENT', `the target ${master} has ${n === 1 ? 'a slave' : `${n} slaves`} replicating from it: name it with --to-slave (the copy is loaded into each host of the target pair, outside the binlog, so a slave not named would never get it): nothing changed`);
}
