import { ShardKitError } from '../../errors.js';
import { recordDevRoles, slaveOf, type FleetContext } from './failover-context.js';
import type { FailoverOptions, FailoverResult } from './emergency-failover.js';
import { DEFAULT_FAILOVER_HOLD_MS } from './failover-freeze.js';
import { FailoverFreeze, undoSteps } from './failover-freeze-steps.js';
import { adminQuery } from './host-admin.js';
import { connectionLiteral, gtidVariable, gtidWait, pointAt, requireReplicating, semiSyncRoles, stopNamedConnections } from './replica.js';

/**
 * `shardkit failover <master>`, the master is alive (Vitess PlannedReparentShard):
 *
 *   1. freeze its object ranges in the map (a failover id and a hold budget): services hold writes
 *      to them instead of failing them;
 *   2. make it read-only (the fence: the services' user has no SUPER; a write that was already on
 *      its way meets it, and the service re-reads the map, holds it and sends it to the new master);
 *   3. wait for the slave to reach its GTID position;
 *   4. stop the slave's replication, make it writable (nothing routes to it yet), and promote it
 *      with one compare-and-set that switches the frozen ranges, forgets the freeze and promotes
 *      the mod-shard ranges: the held writes go to the new master;
 *   5. point the old master at the new one as its slave.
 *
 * Any failure before the compare-and-set undoes what was done (slave replicating and read-only
 * again, master writable, freeze lifted) and nothing changed. A crashed run leaves a freeze that
 * services ignore after its budget and that the next `failover` of the same master lifts first.
 */
export async function plannedFailover(fleet: FleetContext, master: string, options: FailoverOptions = {}): Promise<FailoverResult> {
  const log = options.log ?? (() => undefined);
  const { admin, store } = fleet;
  const hosts = Object.keys(fleet.config.hosts);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const holdMs = options.holdMs ?? DEFAULT_FAILOVER_HOLD_MS;
  const map = await fleet.map();
  const slave = slaveOf(map, master);
  await requireReplicating(admin, slave, master, { requireIo: true });

  const freeze = options.freeze ?? true;
  const frozen = await FailoverFreeze.begin(store, fleet.config.shardMap, hosts, master, slave, { holdMs, freeze, refuseMoveTargets: true, log });
  const ids = frozen.ids;
  const fencedAt = Date.now();
  let fenced = false;
  let moveConnections: string[] = [];
  let slaveStopped = false;
  let slaveWritable = false;
  let position: string;
  let mapVersion: number;
  try {
    await adminQuery(admin, master, 'SET GLOBAL read_only = 1');
    fenced = true;
    // Named connections apply past read_only: whatever they applied after the position below, the
    // slave would never get. A move's would be one, but a move onto the pair refuses the failover.
    moveConnections = await stopNamedConnections(admin, master);
    position = await gtidVariable(admin, master, 'gtid_binlog_pos');
    log(`${master} is read-only at ${position}; waiting for ${slave}`);
    if (!(await gtidWait(admin, slave, position, timeoutMs))) {
      throw new ShardKitError('PRECONDITION_FAILED', `slave ${slave} did not reach ${position} within ${timeoutMs} ms: ${master} is writable again and nothing changed`);
    }
    await adminQuery(admin, slave, 'STOP SLAVE', 'RESET SLAVE ALL');
    slaveStopped = true;
    // Writable before the map names it: the held writes are released by the compare-and-set and
    // must not meet a read-only new master. Nothing routes to it until then.
    await adminQuery(admin, slave, 'SET GLOBAL read_only = 0');
    slaveWritable = true;
    mapVersion = await frozen.switch();
  } catch (err) {
    await undo(fleet, master, slave, frozen, { fenced, moveConnections, slaveStopped, slaveWritable }, log);
    throw err;
  }
  const writePauseMs = Date.now() - fencedAt;
  log(`${slave} is master (map version ${mapVersion}); ${master} becomes its slave`);
  await pointAt(admin, master, slave, 'binlog_pos');
  await semiSyncRoles(admin, slave, master);
  recordDevRoles(admin, slave, master);
  return { kind: 'planned', oldMaster: master, newMaster: slave, position, mapVersion, oldMasterFenced: true, oldMasterIsSlave: true, writePauseMs, frozenRanges: ids.length };
}

/** Best effort, in reverse order; each step is logged when it fails (the operator finishes it by hand). */
async function undo(fleet: FleetContext, master: string, slave: string, frozen: FailoverFreeze, done: { fenced: boolean; moveConnections: string[]; slaveStopped: boolean; slaveWritable: boolean }, log: (m: string) => void): Promise<void> {
  const { admin } = fleet;
  await undoSteps(log, [
    done.slaveWritable && [`make ${slave} read-only again`, () => adminQuery(admin, slave, 'SET GLOBAL read_only = 1')],
    done.slaveStopped && [`restart replication on ${slave}`, () => pointAt(admin, slave, master, 'slave_pos')],
    ...done.moveConnections.map((name) => [`restart the move connection '${name}' on ${master}`, () => adminQuery(admin, master, `START SLAVE ${connectionLiteral(name)}`)] as const),
    done.fenced && [`make ${master} writable again`, () => adminQuery(admin, master, 'SET GLOBAL read_only = 0')],
    ['lift the freeze', () => frozen.release()],
  ]);
}
