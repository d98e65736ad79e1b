import { ShardKitError } from '../../errors.js';
import { recordDevRoles, slaveOf, type FleetContext } from './failover-context.js';
import { casPromote, type FailoverOptions, type FailoverResult } from './emergency-failover.js';
import { adminQuery } from './host-admin.js';
import { gtidVariable, gtidWait, pointAt, requireReplicating } from './replica.js';

/**
 * `shardkit failover <master>`, the master is alive (Vitess PlannedReparentShard): make it
 * read-only (the fence: the services' user has no SUPER, so its writes now fail with a retryable
 * SHARD_UNAVAILABLE), wait for the slave to reach its GTID position, promote the slave, compare-
 * and-set the map, make the new master writable, and point the old master at it as its slave.
 * If the slave does not catch up in time, the old master is made writable again and nothing else
 * has changed. No range freeze yet (services do not hold writes): see docs/failover.md.
 */
export async function plannedFailover(fleet: FleetContext, master: string, options: FailoverOptions = {}): Promise<FailoverResult> {
  const log = options.log ?? (() => undefined);
  const { admin } = fleet;
  const slave = slaveOf(await fleet.map(), master);
  await requireReplicating(admin, slave, master, { requireIo: true });

  const fencedAt = Date.now();
  await adminQuery(admin, master, 'SET GLOBAL read_only = 1');
  const pos = await gtidVariable(admin, master, 'gtid_binlog_pos');
  log(`${master} is read-only at ${pos}; waiting for ${slave}`);
  if (!(await gtidWait(admin, slave, pos, options.timeoutMs ?? 30_000))) {
    await adminQuery(admin, master, 'SET GLOBAL read_only = 0');
    throw new ShardKitError('PRECONDITION_FAILED', `slave ${slave} did not reach ${pos} within ${options.timeoutMs ?? 30_000} ms: ${master} is writable again and nothing changed`);
  }
  await adminQuery(admin, slave, 'STOP SLAVE', 'RESET SLAVE ALL');
  const mapVersion = await casPromote(fleet, master);
  await adminQuery(admin, slave, 'SET GLOBAL read_only = 0');
  const writePauseMs = Date.now() - fencedAt;
  log(`${slave} is master (map version ${mapVersion}); ${master} becomes its slave`);
  // current_pos: the old master's own binlog holds exactly what the new master has.
  await pointAt(admin, master, slave, 'current_pos');
  recordDevRoles(admin, slave, master);
  return { kind: 'planned', oldMaster: master, newMaster: slave, position: pos, mapVersion, oldMasterFenced: true, oldMasterIsSlave: true, writePauseMs };
}
