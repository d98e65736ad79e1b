import { ShardKitError } from '../../errors.js';
import { DevCluster } from '../../ops/dev-cluster.js';
import {
  compareHosts, emergencyFailover, gtidVariable, gtidWait, isPostgresFleetConfig, openFleet, openPgFleet, pgEmergencyFailover, pgFleetEmergencyFailover,
  pgFleetPlannedFailover, pgFleetRebuildSlave, pgPlannedFailover, pgRebuildSlave, plannedFailover, rebuildSlave, slaveOf, type FleetContext, type PgFleet,
} from '../../ops/failover/index.js';

export interface FleetCliOptions {
  config?: string;
  dir?: string;
  data?: string;
  timeoutMs?: number;
  json?: boolean;
}

const log = (m: string) => process.stderr.write(`shardkit: ${m}\n`);

/** The dev cluster of --dir when it is a PostgreSQL one (failover there uses pg_promote / pg_basebackup). */
async function postgresCluster(opts: FleetCliOptions): Promise<DevCluster | undefined> {
  if (opts.dir === undefined) return undefined;
  const c = DevCluster.require(opts.dir);
  return c.state.engine === 'postgres' ? c : undefined;
}

/** A --config (no --dir) whose storage is PostgreSQL: a server fleet failed over over SQL and hooks (pg-fleet-failover.ts). */
async function postgresFleet(opts: FleetCliOptions): Promise<PgFleet | undefined> {
  if (opts.dir !== undefined || opts.config === undefined || !isPostgresFleetConfig(opts.config)) return undefined;
  return openPgFleet({ config: opts.config, ...(opts.data !== undefined ? { dataDir: opts.data } : {}) });
}

async function withPgFleet<T>(fleet: PgFleet, fn: (f: typeof fleet) => Promise<T>): Promise<T> {
  try {
    return await fn(fleet);
  } finally {
    await fleet.close();
  }
}

async function withFleet<T>(opts: FleetCliOptions, fn: (fleet: FleetContext) => Promise<T>): Promise<T> {
  const fleet = openFleet({ ...(opts.dir !== undefined ? { dir: opts.dir } : {}), ...(opts.config !== undefined ? { config: opts.config } : {}), ...(opts.data !== undefined ? { dataDir: opts.data } : {}) });
  try {
    return await fn(fleet);
  } finally {
    await fleet.close();
  }
}

export async function failoverCommand(master: string, opts: FleetCliOptions & { emergency?: boolean; holdMs?: number }): Promise<void> {
  const options = { log, ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}) };
  const planned = { ...options, ...(opts.holdMs !== undefined ? { holdMs: opts.holdMs } : {}) };
  const pgc = await postgresCluster(opts);
  const pgf = pgc ? undefined : await postgresFleet(opts);
  const r = pgc
    ? await (opts.emergency ? pgEmergencyFailover(pgc, master) : pgPlannedFailover(pgc, master, planned))
    : pgf !== undefined
      ? await withPgFleet(pgf, (f) => (opts.emergency ? pgFleetEmergencyFailover(f, master) : pgFleetPlannedFailover(f, master, planned)))
      : await withFleet(opts, (f) => (opts.emergency ? emergencyFailover(f, master, options) : plannedFailover(f, master, planned)));
  if (opts.json) process.stdout.write(`${JSON.stringify(r)}\n`);
  else {
    process.stdout.write(`${r.kind} failover: ${r.newMaster} is master of the ranges of ${r.oldMaster} (map version ${r.mapVersion}, GTID ${r.position || '-'})\n`);
    if (r.kind === 'planned') process.stdout.write(`${r.frozenRanges ? `writes to ${r.frozenRanges} frozen object range(s) were held` : 'writes were refused'} for ${r.writePauseMs} ms; ${r.oldMasterIsSlave ? `${r.oldMaster} now replicates from ${r.newMaster}` : `${r.oldMaster} is read-only; make it a standby: shardkit pair rebuild-slave ${r.newMaster} --slave ${r.oldMaster}`}\n`);
    else process.stdout.write(`${r.oldMaster} ${r.oldMasterFenced ? 'answered and is read-only' : 'is down'}; rebuild it: shardkit pair rebuild-slave ${r.newMaster}${opts.dir ? ` --dir ${opts.dir}` : ''}\n`);
    if (r.divergedTransactions !== undefined && r.divergedTransactions > 0) {
      process.stdout.write(`${r.oldMaster} committed ${r.divergedTransactions} transaction(s) ${r.newMaster} never received: ${r.syncStandby ? 'none was acknowledged (synchronous standby)' : 'each may have been acknowledged, the writes this failover lost'}\n`);
    }
  }
}

export async function rebuildSlaveCommand(master: string, opts: FleetCliOptions & { slave?: string; sync?: boolean }): Promise<void> {
  const pgf = await postgresFleet(opts);
  if (pgf !== undefined) {
    const p = await withPgFleet(pgf, (f) => pgFleetRebuildSlave(f, master, { ...(opts.slave !== undefined ? { slave: opts.slave } : {}), ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}), sync: opts.sync === true }));
    process.stdout.write(opts.json ? `${JSON.stringify(p)}\n` : `${p.slave} rebuilt from ${p.master} (SHARDKIT_REBUILD_COMMAND), streaming (map version ${p.mapVersion})\n`);
    return;
  }
  const pgc = await postgresCluster(opts);
  if (pgc) {
    const p = await pgRebuildSlave(pgc, master, { ...(opts.slave !== undefined ? { slave: opts.slave } : {}), ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}) });
    process.stdout.write(opts.json ? `${JSON.stringify(p)}\n` : `${p.slave} rebuilt from ${p.master} (pg_basebackup), streaming (map version ${p.mapVersion})\n`);
    return;
  }
  const r = await withFleet(opts, (f) => rebuildSlave(f, master, { log, ...(opts.slave !== undefined ? { slave: opts.slave } : {}), ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}) }));
  if (opts.json) process.stdout.write(`${JSON.stringify(r)}\n`);
  else {
    process.stdout.write(`${r.slave} rebuilt from ${r.master}: ${r.databases} databases copied at ${r.position || '-'}, replicating (map version ${r.mapVersion})\n`);
    if (r.divergedTransactions > 0) process.stdout.write(`${r.slave} held ${r.divergedTransactions} transactions ${r.master} never received: the writes the failover lost\n`);
  }
}

export async function verifyPairCommand(master: string, opts: FleetCliOptions): Promise<void> {
  const r = await withFleet(opts, async (f) => {
    const slave = slaveOf(await f.map(), master);
    const pos = await gtidVariable(f.admin, master, 'gtid_binlog_pos');
    if (!(await gtidWait(f.admin, slave, pos, opts.timeoutMs ?? 30_000))) throw new ShardKitError('PRECONDITION_FAILED', `slave ${slave} did not reach ${master}'s position ${pos}`);
    return { master, slave, ...(await compareHosts(f.admin, master, slave)) };
  });
  if (opts.json) process.stdout.write(`${JSON.stringify(r)}\n`);
  else process.stdout.write(r.differing.length === 0 ? `${r.master} and ${r.slave}: ${r.tables} tables identical\n` : `${r.master} and ${r.slave} differ in ${r.differing.length} of ${r.tables} tables: ${r.differing.join(', ')}\n`);
  if (r.differing.length > 0) process.exitCode = 3;
}
