import { ShardKitError } from '../../errors.js';
import { changeShardMap } from '../../topology/change-shard-map.js';
import { ShardMap } from '../../topology/shard-map.js';
import { tsvCopy } from '../../moves/mariadb/index.js';
import { recordDevRoles, type FleetContext } from './failover-context.js';
import { dropSemiSyncMaster, fenceAnsweringMaster } from './client-sessions.js';
import { adminQuery, type HostAdmin } from './host-admin.js';
import { forgetNamedConnections, gtidVariable, gtidWait, parseGtidList, pointAt, semiSyncRoles } from './replica.js';
import { setSlave } from './set-slave.js';
import { userDatabases } from './table-checksums.js';

export interface RebuildResult {
  master: string;
  slave: string;
  /** The GTID position of the copy; replication continues from there. */
  position: string;
  databases: number;
  /**
   * Transactions the rebuilt host had written as a master that its master never received (a
   * diverged old master after an emergency failover): the acknowledged writes that failover lost.
   */
  divergedTransactions: number;
  mapVersion: number;
}

/** Transactions `host` originated (its own server id) past what `master` applied from it. */
async function divergedCount(admin: HostAdmin, host: string, master: string): Promise<number> {
  const [row] = await adminQuery<Array<{ id: string | number }>>(admin, host, 'SELECT @@server_id AS id');
  const id = Number(row?.id);
  const mine = parseGtidList(await gtidVariable(admin, host, 'gtid_binlog_pos'));
  const got = parseGtidList(await gtidVariable(admin, master, 'gtid_current_pos'));
  const applied = parseGtidList(await gtidVariable(admin, master, 'gtid_slave_pos'));
  let n = 0n;
  for (const [domain, g] of mine) {
    if (g.server !== id) continue;
    const seen = applied.get(domain)?.server === id ? applied.get(domain)!.seq : got.get(domain)?.server === id ? got.get(domain)!.seq : undefined;
    if (seen !== undefined && g.seq > seen) n += g.seq - seen;
  }
  return Number(n);
}

/**
 * `shardkit pair rebuild-slave <master> [--slave HOST]`: (re)builds the slave of `master` from a
 * consistent copy (the move's text copy, tsv-copy.ts: one session's snapshot, so no lock on the
 * master; bench/rebuild-slave.bench.ts) while the master keeps taking writes, starts GTID
 * replication from the copy's position, waits for it to catch up, and records it in the map.
 * The slave's own data is dropped first: it also rebuilds a diverged old master.
 * In the dev cluster the slave's server is started when it is down.
 */
export async function rebuildSlave(fleet: FleetContext, master: string, options: { slave?: string; timeoutMs?: number; log?: (m: string) => void } = {}): Promise<RebuildResult> {
  const log = options.log ?? (() => undefined);
  const { admin } = fleet;
  const map = await fleet.map();
  const json = map.toJSON();
  const mastered = [...json.ranges, ...json.modShards.ranges].filter((r) => r.master === master);
  if (mastered.length === 0) throw new ShardKitError('INVALID_ARGUMENT', `host ${master} is not a master in the shard map (version ${map.version}): nothing changed`);
  const named = new Set(mastered.map((r) => r.slave).filter((s): s is string => s !== undefined));
  const slave = options.slave ?? (named.size === 1 ? [...named][0]! : undefined);
  if (slave === undefined) throw new ShardKitError('INVALID_ARGUMENT', `the map names ${named.size === 0 ? 'no slave' : `several slaves (${[...named].join(', ')})`} for ${master}: give --slave HOST`);
  if (slave === master) throw new ShardKitError('INVALID_ARGUMENT', `a host cannot be its own slave (${master})`);
  if (!(slave in fleet.config.hosts)) throw new ShardKitError('INVALID_ARGUMENT', `host ${slave} is not in the config's hosts`);
  const mastersOfSlave = [...json.ranges, ...json.modShards.ranges].filter((r) => r.master === slave);
  if (mastersOfSlave.length > 0) throw new ShardKitError('INVALID_ARGUMENT', `host ${slave} is master of shards ${mastersOfSlave.map((r) => `${r.range[0]}..${r.range[1]}`).join(', ')}: it cannot be rebuilt as a slave`);

  if (admin.dev) {
    const inst = admin.dev.instance(slave);
    if (!inst.isRunning()) {
      log(`starting ${slave}`);
      await inst.start();
    }
  }
  // Read-only first: if it is a failed master that came back, nothing may write to it any more.
  // A failed old master may still hold commits waiting for an ack from its old slave (promoted):
  // they would hold read_only and the DROP below for as long as the semi-sync timeout.
  await fenceAnsweringMaster(admin, slave);
  await dropSemiSyncMaster(admin, slave);
  await forgetNamedConnections(admin, slave);
  const divergedTransactions = await divergedCount(admin, slave, master);
  if (divergedTransactions > 0) log(`${slave} holds ${divergedTransactions} transactions ${master} never received (lost by the failover); they are dropped`);

  const databases = await userDatabases(admin, master);
  const drop = await userDatabases(admin, slave);
  log(`dropping ${drop.length} databases on ${slave}, copying ${databases.length} from ${master}`);
  await adminQuery(admin, slave, 'RESET SLAVE ALL', 'SET SESSION sql_log_bin = 0', ...drop.map((d) => `DROP DATABASE \`${d.replace(/`/g, '``')}\``), 'RESET MASTER');
  const position = await tsvCopy(admin, master, [slave], databases, 1);
  await adminQuery(admin, slave, { sql: 'SET GLOBAL gtid_slave_pos = ?', values: [position] });
  await pointAt(admin, slave, master, 'slave_pos');
  const target = await gtidVariable(admin, master, 'gtid_binlog_pos');
  if (!(await gtidWait(admin, slave, target, options.timeoutMs ?? 60_000))) {
    throw new ShardKitError('INTERNAL', `${slave} replicates from ${master} but did not reach ${target} within ${options.timeoutMs ?? 60_000} ms (see SHOW SLAVE STATUS)`);
  }
  // Semi-sync again once the master has a semi-sync slave (emergency failover turned it off).
  await semiSyncRoles(admin, master, slave);
  const change = await changeShardMap(fleet.store, (m) => setSlave(m, master, slave), {
    seed: ShardMap.fromJSON(fleet.config.shardMap),
    hosts: Object.keys(fleet.config.hosts),
  });
  recordDevRoles(admin, master, slave);
  log(`${slave} replicates from ${master} from ${position} (map version ${change.after.version})`);
  return { master, slave, position, databases: databases.length, divergedTransactions, mapVersion: change.after.version };
}
