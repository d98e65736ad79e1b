import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { parseConfig, type ShardKitConfig } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import { changeShardMap } from '../../topology/change-shard-map.js';
import { createTopologyStore } from '../../topology/index.js';
import { ShardMap, type ShardMapJson } from '../../topology/shard-map.js';
import type { TopologyStore } from '../../topology/topology-store.js';
import type { FailoverResult } from './emergency-failover.js';
import { slaveOf } from './failover-context.js';
import { setSlave } from './set-slave.js';
import { runFenceCommand, runHook } from './stonith.js';
import { formatLsn, parseLsn, recordSearchStart } from '../../storage/postgres/index.js';
import { superuserQuery } from '../postgres/postgres-instance.js';
import { DEFAULT_FAILOVER_HOLD_MS, promotedReleasingFreeze } from './failover-freeze.js';
import { FailoverFreeze, undoSteps } from './failover-freeze-steps.js';
import { fenceReadOnly, liftReadOnlyFence, replayedBy, type PgAdminSql } from './pg-read-only-fence.js';

/**
 * Failover and rebuild-slave for a PostgreSQL fleet given by `--config` (#31): servers this
 * machine reaches only over the network, so everything is SQL (pg_promote(), a read-only fence
 * with ALTER SYSTEM, pg_walinspect for what a lost master committed) plus the operator's hooks
 * for what needs the server's own machine (SHARDKIT_FENCE_COMMAND to shoot a master that does not
 * answer, SHARDKIT_REBUILD_COMMAND to rebuild a standby's data directory). The dev cluster's
 * pg-failover.ts stops and restarts servers instead; the map edits are the same.
 */
export interface PgFleet {
  config: ShardKitConfig;
  store: TopologyStore;
  env: NodeJS.ProcessEnv;
  address(host: string): { host: string; port: number };
  /** One statement as the admin user (SHARDKIT_ADMIN_USER, a superuser) on `host`'s postgres database. */
  sql<T extends pg.QueryResultRow = pg.QueryResultRow>(host: string, text: string, values?: unknown[], timeoutMs?: number): Promise<T[]>;
  map(): Promise<ShardMap>;
  close(): Promise<void>;
}

/** A config file's PostgreSQL fleet; INVALID_ARGUMENT without admin credentials, INVALID_CONFIG for another backend. */
export function openPgFleet(options: { config: string; dataDir?: string; env?: NodeJS.ProcessEnv }): PgFleet {
  const env = options.env ?? process.env;
  let config: ShardKitConfig;
  try {
    config = parseConfig(JSON.parse(readFileSync(options.config, 'utf8')));
  } catch (err) {
    if (err instanceof ShardKitError) throw err;
    throw new ShardKitError('INVALID_CONFIG', `cannot read config ${options.config}: ${(err as Error).message}`);
  }
  if (config.storage.backend !== 'postgres') throw new ShardKitError('INVALID_CONFIG', `${options.config} has storage.backend ${config.storage.backend}, not postgres`);
  const user = env.SHARDKIT_ADMIN_USER;
  if (!user) throw new ShardKitError('INVALID_ARGUMENT', 'set SHARDKIT_ADMIN_USER (a PostgreSQL superuser) and SHARDKIT_ADMIN_PASSWORD for failover on a server fleet; the config\'s application user cannot fence or promote');
  const password = env.SHARDKIT_ADMIN_PASSWORD;
  const address = (host: string) => {
    const h = config.hosts[host] as { host?: string; port?: number } | undefined;
    if (!h || h.host === undefined) throw new ShardKitError('INVALID_ARGUMENT', `host ${host} is not a server in the config's hosts`);
    return { host: h.host, port: h.port ?? 5432 };
  };
  const store = createTopologyStore(config.topologyStore, { dataDir: options.dataDir ?? dirname(resolve(options.config)) });
  const seed = ShardMap.fromJSON(config.shardMap);
  return {
    config, store, env, address,
    sql: <T extends pg.QueryResultRow>(host: string, text: string, values?: unknown[], timeoutMs = 5000) =>
      superuserQuery<T>({ ...address(host), database: 'postgres', user, ...(password !== undefined ? { password } : {}), connectTimeoutMs: Math.min(timeoutMs, 10_000), queryTimeoutMs: timeoutMs }, text, values),
    map: async () => (await store.read()) ?? seed,
    close: () => store.close(),
  };
}

/** `host`'s admin statements in the fence's form. */
function adminSql(f: PgFleet, host: string): PgAdminSql {
  return (text, values, timeoutMs) => f.sql(host, text, values, timeoutMs);
}

async function cas(f: PgFleet, edit: (m: ShardMap) => ShardMapJson): Promise<number> {
  return (await changeShardMap(f.store, edit, { seed: ShardMap.fromJSON(f.config.shardMap), hosts: Object.keys(f.config.hosts) })).after.version;
}

/** `standby` is in recovery and its WAL receiver (streaming, when `streaming`) names `master`'s address. */
async function requireStandbyOf(f: PgFleet, standby: string, master: string, streaming: boolean): Promise<void> {
  let row: { rec: boolean; status: string | null; host: string | null; port: number | null } | undefined;
  try {
    [row] = await f.sql(standby, 'SELECT pg_is_in_recovery() AS rec, r.status, r.sender_host AS host, r.sender_port AS port FROM (SELECT 1) x LEFT JOIN pg_stat_wal_receiver r ON true');
  } catch (err) {
    throw new ShardKitError('PRECONDITION_FAILED', `standby ${standby} does not answer (${(err as Error).message}): nothing changed`);
  }
  if (!row?.rec) throw new ShardKitError('PRECONDITION_FAILED', `slave ${standby} is not replicating (it is not in recovery): nothing changed`);
  const want = f.address(master);
  if (row.port !== null && row.port !== want.port) throw new ShardKitError('PRECONDITION_FAILED', `slave ${standby} streams from ${row.host}:${row.port}, not from ${master} (${want.host}:${want.port}): nothing changed`);
  if (streaming && row.status !== 'streaming') throw new ShardKitError('PRECONDITION_FAILED', `slave ${standby} is not streaming from ${master} (WAL receiver: ${row.status ?? 'none'}): nothing changed`);
}

async function promote(f: PgFleet, host: string): Promise<string> {
  const [r] = await f.sql<{ ok: boolean }>(host, 'SELECT pg_promote(true, 60) AS ok', [], 65_000);
  if (!r?.ok) throw new ShardKitError('INTERNAL', `pg_promote() on ${host} did not finish within 60 s`);
  // A promoted standby must not wait for a synchronous standby it does not have (its auto.conf
  // may be a copy of the old master's): no sync standby until rebuild-slave names one.
  await f.sql(host, "ALTER SYSTEM SET synchronous_standby_names = ''");
  await f.sql(host, 'SELECT pg_reload_conf()');
  const [lsn] = await f.sql<{ lsn: string }>(host, 'SELECT pg_current_wal_lsn()::text AS lsn');
  return lsn?.lsn ?? '';
}

/**
 * Planned, as on MariaDB (planned-failover.ts): the master's object ranges frozen in the map
 * (services hold writes to them), the read-only fence (pg-read-only-fence.ts: a write meeting it is
 * held and sent to the new master; the other sessions ended), the standby's replay of everything
 * the master wrote awaited, the standby promoted, the compare-and-set that switches the frozen
 * ranges. The old master stays up and read-only; it is not the new master's standby until
 * `pair rebuild-slave` (that needs its machine: SHARDKIT_REBUILD_COMMAND).
 */
export async function pgFleetPlannedFailover(f: PgFleet, master: string, options: { timeoutMs?: number; holdMs?: number; log?: (m: string) => void } = {}): Promise<FailoverResult> {
  const map = await f.map();
  const slave = slaveOf(map, master);
  // The map edit is tried first (a move holding the master's ranges refuses it): nothing is
  // fenced for a failover that could not be recorded.
  promotedReleasingFreeze(map, master);
  await requireStandbyOf(f, slave, master, true);
  await requireSameCluster(f, slave, master);
  const holdMs = options.holdMs ?? DEFAULT_FAILOVER_HOLD_MS;
  const frozen = await FailoverFreeze.begin(f.store, f.config.shardMap, Object.keys(f.config.hosts), master, slave, { holdMs, ...(options.log ? { log: options.log } : {}) });
  const sql = adminSql(f, master);
  const fencedAt = Date.now();
  const log = options.log ?? (() => undefined);
  try {
    await fenceReadOnly(sql, { drainMs: await frozen.beforeFence(slave, holdMs, log), terminate: true });
    const [at] = await f.sql<{ lsn: string }>(master, 'SELECT pg_current_wal_insert_lsn()::text AS lsn');
    await replayedBy(adminSql(f, slave), slave, at!.lsn, Date.now() + (options.timeoutMs ?? 30_000), `${master} is writable again and nothing changed`);
  } catch (err) {
    // Anything before the promotion leaves the pair as it was: the master writable again, the freeze lifted.
    await undoSteps(log, [[`make ${master} writable again`, () => liftReadOnlyFence(sql)], ['lift the freeze', () => frozen.release()]]);
    throw err;
  }
  const position = await promote(f, slave);
  const mapVersion = await recordPromotion(master, slave, () => frozen.switch());
  return { kind: 'planned', oldMaster: master, newMaster: slave, position, mapVersion, oldMasterFenced: true, oldMasterIsSlave: false, writePauseMs: Date.now() - fencedAt, frozenRanges: frozen.ids.length };
}

/** After the promotion there is no way back: the map is written, retried, and a failure says what to do by hand. */
async function recordPromotion(master: string, slave: string, write: () => Promise<number>): Promise<number> {
  let last: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      return await write();
    } catch (err) {
      last = err;
      await sleep(200 * (attempt + 1));
    }
  }
  throw new ShardKitError('INTERNAL', `${slave} was promoted but the map still names ${master} (${(last as Error).message}): ${master} is read-only; record it by hand with \`shardkit topology\` tools or run the failover again once the store answers`, { cause: last });
}

/** A standby and a master of one cluster (same system identifier): not merely one on the same port elsewhere. */
async function requireSameCluster(f: PgFleet, standby: string, master: string): Promise<void> {
  const id = async (h: string) => (await f.sql<{ id: string }>(h, 'SELECT system_identifier::text AS id FROM pg_control_system()'))[0]?.id;
  const [a, b] = await Promise.all([id(standby), id(master)]);
  if (a === undefined || a !== b) throw new ShardKitError('PRECONDITION_FAILED', `slave ${standby} is not a standby of ${master} (system identifier ${a} vs ${b}): nothing changed`);
}

/**
 * Commit records the old master wrote past what the standby received, read with pg_walinspect on
 * the fenced old master up to its WAL end at the fence (the extension is created after that point,
 * in a session of its own that may write). Undefined when it cannot be read: the loss is then
 * unknown, not zero.
 */
async function divergedCommits(f: PgFleet, old: string, received: string): Promise<number | undefined> {
  try {
    const [end] = await f.sql<{ lsn: string }>(old, 'SELECT pg_current_wal_lsn()::text AS lsn');
    if (parseLsn(received) >= parseLsn(end!.lsn)) return 0;
    await f.sql(old, 'SET default_transaction_read_only = off; CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    // The commits that end past what the standby received, one it got only part of included.
    const from = formatLsn(recordSearchStart(parseLsn(received)));
    const [r] = await f.sql<{ n: string }>(old, "SELECT count(*)::text AS n FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn) WHERE resource_manager = 'Transaction' AND record_type LIKE 'COMMIT%' AND end_lsn > $3::pg_lsn", [from, end!.lsn, received]);
    return r === undefined ? undefined : Number(r.n);
  } catch {
    return undefined;
  }
}

/**
 * Emergency: the master does not serve. If it answers at all it is fenced read-only (and what it
 * committed that the standby lacks is counted); if not, SHARDKIT_FENCE_COMMAND shoots it (a
 * failing command refuses the promotion). Then the standby is promoted and the map switched.
 */
export async function pgFleetEmergencyFailover(f: PgFleet, master: string): Promise<FailoverResult> {
  const started = Date.now();
  const map = await f.map();
  const slave = slaveOf(map, master);
  promotedReleasingFreeze(map, master);
  await requireStandbyOf(f, slave, master, false);
  let oldMasterFenced = false;
  let oldMasterShot: FailoverResult['oldMasterShot'];
  try {
    await fenceReadOnly(adminSql(f, master), { drainMs: 0, terminate: true });
    oldMasterFenced = true;
  } catch {
    oldMasterShot = await runFenceCommand(master, f.address(master), f.env);
  }
  const [recv] = await f.sql<{ lsn: string | null }>(slave, 'SELECT pg_last_wal_receive_lsn()::text AS lsn');
  const divergedTransactions = oldMasterFenced && recv?.lsn ? await divergedCommits(f, master, recv.lsn) : undefined;
  const position = await promote(f, slave);
  const mapVersion = await recordPromotion(master, slave, () => cas(f, (m) => promotedReleasingFreeze(m, master)));
  return {
    kind: 'emergency', oldMaster: master, newMaster: slave, position, mapVersion, oldMasterFenced, oldMasterIsSlave: false, writePauseMs: Date.now() - started,
    ...(oldMasterShot !== undefined ? { oldMasterShot } : {}),
    ...(divergedTransactions !== undefined ? { divergedTransactions } : {}),
  };
}

/**
 * rebuild-slave on a fleet: the operator's SHARDKIT_REBUILD_COMMAND replaces `slave`'s data
 * directory from `master` (pg_basebackup -R, or their own tooling) and starts it; shardkit waits
 * until it streams from the master, optionally makes it the synchronous standby, and records it.
 */
export async function pgFleetRebuildSlave(f: PgFleet, master: string, options: { slave?: string; timeoutMs?: number; sync?: boolean } = {}): Promise<{ master: string; slave: string; mapVersion: number }> {
  const map = await f.map();
  const json = map.toJSON();
  const all = [...json.ranges, ...json.modShards.ranges];
  if (!all.some((r) => r.master === master)) throw new ShardKitError('INVALID_ARGUMENT', `host ${master} is not a master in the shard map (version ${map.version}): nothing changed`);
  const named = new Set(all.filter((r) => r.master === master).map((r) => r.slave).filter((s): s is string => s !== undefined));
  const slave = options.slave ?? (named.size === 1 ? [...named][0]! : undefined);
  if (slave === undefined) throw new ShardKitError('INVALID_ARGUMENT', `the map names no single slave for ${master}: give --slave HOST`);
  if (all.some((r) => r.master === slave)) throw new ShardKitError('INVALID_ARGUMENT', `host ${slave} is a master in the map: it cannot be rebuilt as a slave`);
  const command = f.env.SHARDKIT_REBUILD_COMMAND;
  if (!command) throw new ShardKitError('INVALID_ARGUMENT', `rebuilding ${slave} needs its machine: set SHARDKIT_REBUILD_COMMAND to a command that replaces its data directory from ${master} (pg_basebackup -R) and starts it (SHARDKIT_REBUILD_MASTER/_MASTER_ADDRESS/_MASTER_PORT and SHARDKIT_REBUILD_SLAVE/_SLAVE_ADDRESS/_SLAVE_PORT are set)`);
  const m = f.address(master);
  const s = f.address(slave);
  const code = await runHook(command, {
    ...f.env, SHARDKIT_REBUILD_MASTER: master, SHARDKIT_REBUILD_MASTER_ADDRESS: m.host, SHARDKIT_REBUILD_MASTER_PORT: String(m.port),
    SHARDKIT_REBUILD_SLAVE: slave, SHARDKIT_REBUILD_SLAVE_ADDRESS: s.host, SHARDKIT_REBUILD_SLAVE_PORT: String(s.port),
  });
  if (code !== 0) throw new ShardKitError('PRECONDITION_FAILED', `SHARDKIT_REBUILD_COMMAND failed for ${slave} (${code}): the map is unchanged`);
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    const ok = await requireStandbyOf(f, slave, master, true).then(() => requireSameCluster(f, slave, master)).then(() => true, () => false);
    if (ok) break;
    if (Date.now() > deadline) throw new ShardKitError('INTERNAL', `${slave} was rebuilt but does not stream from ${master}: the map is unchanged`);
    await sleep(100);
  }
  if (options.sync) {
    // Only a standby that streams under its host name can be waited for; naming one that does
    // not would hang every commit on the master.
    const named = await f.sql(master, 'SELECT 1 FROM pg_stat_replication WHERE application_name = $1', [slave]);
    if (named.length === 0) throw new ShardKitError('PRECONDITION_FAILED', `${slave} streams from ${master} but not as application_name=${slave}: not made synchronous (set application_name in its primary_conninfo); the map is unchanged`);
    await f.sql(master, `ALTER SYSTEM SET synchronous_standby_names = ${pg.escapeLiteral(pg.escapeIdentifier(slave))}`);
    await f.sql(master, 'SELECT pg_reload_conf()');
  }
  const mapVersion = await cas(f, (x) => setSlave(x, master, slave));
  return { master, slave, mapVersion };
}
