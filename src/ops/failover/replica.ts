import { setTimeout as sleep } from 'node:timers/promises';
import { ShardKitError } from '../../errors.js';
import { adminQuery, type HostAdmin } from './host-admin.js';
import { gtidsNotReached } from '../../storage/mysql/index.js';

/** The fields of SHOW SLAVE STATUS the fleet tools read. */
export interface SlaveStatus {
  masterHost: string;
  masterPort: number;
  ioRunning: string;
  sqlRunning: string;
  masterLogFile: string;
  readPos: number;
  relayMasterLogFile: string;
  execPos: number;
  lastError: string;
}

export async function slaveStatus(admin: HostAdmin, host: string): Promise<SlaveStatus | undefined> {
  const rows = await adminQuery<Array<Record<string, unknown>>>(admin, host, 'SHOW SLAVE STATUS');
  const r = rows[0];
  if (!r) return undefined;
  return {
    masterHost: String(r.Master_Host),
    masterPort: Number(r.Master_Port),
    ioRunning: String(r.Slave_IO_Running),
    sqlRunning: String(r.Slave_SQL_Running),
    masterLogFile: String(r.Master_Log_File),
    readPos: Number(r.Read_Master_Log_Pos),
    relayMasterLogFile: String(r.Relay_Master_Log_File),
    execPos: Number(r.Exec_Master_Log_Pos),
    lastError: String(r.Last_IO_Error || r.Last_SQL_Error || ''),
  };
}

/**
 * The slave must be configured to replicate from `master` (its address), with the SQL thread
 * running; with `requireIo` its IO thread must be connected too (a planned failover). Otherwise
 * PRECONDITION_FAILED, before anything is changed.
 */
export async function requireReplicating(admin: HostAdmin, slave: string, master: string, options: { requireIo: boolean }): Promise<SlaveStatus> {
  const st = await slaveStatus(admin, slave);
  const want = admin.address(master);
  if (!st) throw new ShardKitError('PRECONDITION_FAILED', `slave ${slave} is not replicating (no replication configured): nothing changed`);
  if (st.masterPort !== want.port || (st.masterHost !== want.host && !(isLoopback(st.masterHost) && isLoopback(want.host)))) {
    throw new ShardKitError('PRECONDITION_FAILED', `slave ${slave} replicates from ${st.masterHost}:${st.masterPort}, not from ${master} (${want.host}:${want.port}): nothing changed`);
  }
  if (st.sqlRunning !== 'Yes' || (options.requireIo && st.ioRunning !== 'Yes')) {
    throw new ShardKitError('PRECONDITION_FAILED', `slave ${slave} is not replicating from ${master} (io ${st.ioRunning}, sql ${st.sqlRunning}${st.lastError ? `: ${st.lastError}` : ''}): nothing changed`);
  }
  return st;
}

const isLoopback = (h: string) => h === '127.0.0.1' || h === 'localhost' || h === '::1';

/** Waits until the SQL thread has applied everything the IO thread wrote to the relay log. */
export async function waitRelayApplied(admin: HostAdmin, slave: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const st = await slaveStatus(admin, slave);
    if (!st) throw new ShardKitError('INTERNAL', `slave ${slave} lost its replication configuration`);
    if (st.masterLogFile === st.relayMasterLogFile && st.readPos === st.execPos) return;
    if (st.sqlRunning !== 'Yes') throw new ShardKitError('INTERNAL', `slave ${slave} stopped applying its relay log: ${st.lastError}`);
    if (Date.now() > deadline) throw new ShardKitError('INTERNAL', `slave ${slave} did not apply its relay log within ${timeoutMs} ms`);
    await sleep(20);
  }
}

/** MASTER_GTID_WAIT on `slave` for `pos`; false on timeout. */
export async function gtidWait(admin: HostAdmin, slave: string, wanted: string, timeoutMs: number): Promise<boolean> {
  const pos = gtidsNotReached(wanted, await gtidVariable(admin, slave, 'gtid_current_pos'));
  if (pos === '') return true;
  const [r] = await adminQuery<Array<{ r: number | string | null }>>(admin, slave, { sql: 'SELECT MASTER_GTID_WAIT(?, ?) AS r', values: [pos, timeoutMs / 1000] });
  return Number(r?.r) === 0;
}

export async function gtidVariable(admin: HostAdmin, host: string, name: 'gtid_binlog_pos' | 'gtid_slave_pos' | 'gtid_current_pos'): Promise<string> {
  const [r] = await adminQuery<Array<{ v: string }>>(admin, host, `SELECT @@GLOBAL.${name} AS v`);
  return r?.v ?? '';
}

/** `d-s-n,d-s-n` -> domain -> {server, seq}. */
export function parseGtidList(text: string): Map<number, { server: number; seq: bigint }> {
  const out = new Map<number, { server: number; seq: bigint }>();
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const [d, s, n] = part.split('-');
    out.set(Number(d), { server: Number(s), seq: BigInt(n!) });
  }
  return out;
}

/**
 * Makes `slave` replicate from `master` with GTID and starts it. `pos`: slave_pos, or binlog_pos
 * for an old master after a planned failover: its own binlog holds exactly what the new master
 * has. Not current_pos: a move's connection on it advanced gtid_slave_pos in the source's domain
 * past its binlog (transactions its filter left out), a GTID the new master never had (error 1236).
 */
export async function pointAt(admin: HostAdmin, slave: string, master: string, pos: 'slave_pos' | 'binlog_pos'): Promise<void> {
  const a = admin.address(master);
  const r = admin.replication;
  await adminQuery(admin, slave,
    'STOP SLAVE',
    'RESET SLAVE ALL',
    ...(pos === 'binlog_pos' ? ['SET GLOBAL gtid_slave_pos = @@GLOBAL.gtid_binlog_pos'] : []),
    { sql: 'CHANGE MASTER TO MASTER_HOST = ?, MASTER_PORT = ?, MASTER_USER = ?, MASTER_PASSWORD = ?, MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1', values: [a.host, a.port, r.user, r.password ?? ''] },
    'START SLAVE');
}

/**
 * Semi-sync follows the roles: the master waits for its slave's ack when that slave acks
 * (rpl_semi_sync_slave_enabled), the slave never waits (its SQL thread would hold each applied
 * transaction for rpl_semi_sync_master_timeout, having no slave of its own).
 */
export async function semiSyncRoles(admin: HostAdmin, master: string, slave: string): Promise<void> {
  const [r] = await adminQuery<Array<{ on: number | string }>>(admin, slave, 'SELECT @@rpl_semi_sync_slave_enabled AS `on`');
  await adminQuery(admin, slave, 'SET GLOBAL rpl_semi_sync_master_enabled = 0');
  await adminQuery(admin, master, `SET GLOBAL rpl_semi_sync_master_enabled = ${Number(r?.on) === 1 ? 1 : 0}`);
}

/**
 * Stops the named replication connections running on `host` and returns their names: a planned
 * failover stops them under its fence, so the position it hands the slave is final.
 */
export async function stopNamedConnections(admin: HostAdmin, host: string): Promise<string[]> {
  const rows = await adminQuery<Array<Record<string, unknown>>>(admin, host, 'SHOW ALL SLAVES STATUS');
  const running = rows.filter((r) => String(r.Connection_name ?? '') !== '' && (r.Slave_SQL_Running === 'Yes' || r.Slave_IO_Running === 'Yes')).map((r) => String(r.Connection_name));
  for (const name of running) await adminQuery(admin, host, `STOP SLAVE ${connectionLiteral(name)}`);
  return running;
}

/** A replication connection's name as the string literal STOP/START/RESET SLAVE take. */
export function connectionLiteral(name: string): string {
  return `'${name.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

/**
 * Stops every replication connection of `host` and forgets the named ones: a server rebuilt as a
 * slave must not keep a move's connection (left on an old master that failed), which a restart
 * without skip-slave-start would run with no table filter.
 */
export async function forgetNamedConnections(admin: HostAdmin, host: string): Promise<void> {
  await adminQuery(admin, host, 'STOP ALL SLAVES');
  const rows = await adminQuery<Array<Record<string, unknown>>>(admin, host, 'SHOW ALL SLAVES STATUS');
  for (const r of rows) {
    const name = String(r.Connection_name ?? '');
    if (name !== '') await adminQuery(admin, host, `RESET SLAVE ${connectionLiteral(name)} ALL`);
  }
}
