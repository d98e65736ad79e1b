import { changeShardMap } from '../../topology/change-shard-map.js';
import { ShardMap } from '../../topology/shard-map.js';
import { recordDevRoles, slaveOf, type FleetContext } from './failover-context.js';
import { promotedReleasingFreeze } from './failover-freeze.js';
import { adminQuery } from './host-admin.js';
import { fenceAnsweringMaster } from './client-sessions.js';
import { fenceUnreachable } from './stonith.js';
import { gtidVariable, requireReplicating, waitRelayApplied } from './replica.js';

export interface FailoverResult {
  kind: 'planned' | 'emergency';
  oldMaster: string;
  newMaster: string;
  /** The new master's GTID position when it was promoted (everything it got from the old one). */
  position: string;
  /** The map version that names the new master. */
  mapVersion: number;
  /** Emergency: whether the old master answered and was made read-only (else it is down). */
  oldMasterFenced: boolean;
  /** Emergency, MariaDB: how an old master that did not answer was kept from writing (stonith.ts). */
  oldMasterShot?: 'killed' | 'command' | 'unfenced';
  /** Planned: the old master now replicates from the new one. */
  oldMasterIsSlave: boolean;
  /** Milliseconds: planned, from the freeze of the old master's ranges to the map naming the new master; emergency, the whole command. */
  writePauseMs: number;
  /** Planned: how many object ranges were frozen (services held their writes) during the switch. */
  frozenRanges?: number;
  /**
   * PostgreSQL emergency: transactions the old master committed that the new one never received
   * (read from the old master's WAL after it stopped). Without a synchronous standby each may have
   * been acknowledged to a client: the writes the failover lost. With one, none was acknowledged.
   */
  divergedTransactions?: number;
  /** PostgreSQL: whether the pair's commits waited for the standby (dev up --sync). */
  syncStandby?: boolean;
}

export interface FailoverOptions {
  /** How long to wait for the slave to apply its relay log / reach the master's position (default 30 s). */
  timeoutMs?: number;
  /** Planned: the hold budget of the freeze, ms (default DEFAULT_FAILOVER_HOLD_MS). */
  holdMs?: number;
  /**
   * Planned: false fences with read_only alone (writes are refused, not held, during the switch);
   * bench/failover.bench.ts measures both in one run. Default true.
   */
  freeze?: boolean;
  log?: (message: string) => void;
}

/** The map edit shared by both failovers: promote, validated against the config's hosts, compare-and-set. */
export async function casPromote(fleet: FleetContext, master: string): Promise<number> {
  const change = await changeShardMap(fleet.store, (m) => promotedReleasingFreeze(m, master), {
    seed: ShardMap.fromJSON(fleet.config.shardMap),
    hosts: Object.keys(fleet.config.hosts),
  });
  return change.after.version;
}

/**
 * `shardkit failover <master> --emergency`, the master is gone (Vitess EmergencyReparentShard):
 * stop the slave's IO thread, let it apply what it received, promote it, compare-and-set the map,
 * and make it writable. The old master, if it still answers, is made read-only; `dev up` keeps it
 * read-only (the map names it slave), and it needs `pair rebuild-slave` since it may hold writes
 * the slave never got (asynchronous replication; semi-sync AFTER_SYNC bounds that to none).
 */
export async function emergencyFailover(fleet: FleetContext, master: string, options: FailoverOptions = {}): Promise<FailoverResult> {
  const started = Date.now();
  const log = options.log ?? (() => undefined);
  const { admin } = fleet;
  const map = await fleet.map();
  const slave = slaveOf(map, master);
  // The map edit is tried first: one it refuses (a running shard move holds a range of `master`)
  // must be refused before the old master is fenced and the slave stops replicating, or the pair
  // is left with no writable master and no slave a second try could promote.
  promotedReleasingFreeze(map, master);
  await requireReplicating(admin, slave, master, { requireIo: false });

  let oldMasterFenced = false;
  let oldMasterShot: Awaited<ReturnType<typeof fenceUnreachable>> | undefined;
  try {
    // Cut its sessions, then read_only: a commit it holds for its semi-sync slave must not be
    // acknowledged once that slave is master (client-sessions.ts).
    await fenceAnsweringMaster(admin, master);
    oldMasterFenced = true;
  } catch {
    oldMasterShot = await fenceUnreachable(admin, master);
    log(oldMasterShot === 'unfenced'
      ? `${master} does not answer and no fence is configured (SHARDKIT_FENCE_COMMAND): if it is only frozen it may wake up writable`
      : `${master} does not answer: ${oldMasterShot === 'killed' ? 'its process was killed' : 'SHARDKIT_FENCE_COMMAND fenced it'}; it starts read-only and the map no longer names it master`);
  }

  log(`stopping the IO thread of ${slave} and applying its relay log`);
  await adminQuery(admin, slave, 'STOP SLAVE IO_THREAD');
  await waitRelayApplied(admin, slave, options.timeoutMs ?? 30_000);
  const position = await gtidVariable(admin, slave, 'gtid_current_pos');
  await adminQuery(admin, slave, 'STOP SLAVE', 'RESET SLAVE ALL');
  const mapVersion = await casPromote(fleet, master);
  // The new master has no slave until rebuild-slave: a semi-sync master would hold its first
  // commit for rpl_semi_sync_master_timeout (2 s on a dev cluster) before giving up on one.
  await adminQuery(admin, slave, 'SET GLOBAL rpl_semi_sync_master_enabled = 0', 'SET GLOBAL read_only = 0');
  log(`${slave} is master (map version ${mapVersion}) at ${position}`);
  recordDevRoles(admin, slave, master, { rebuild: true });
  return { kind: 'emergency', oldMaster: master, newMaster: slave, position, mapVersion, oldMasterFenced, ...(oldMasterShot !== undefined ? { oldMasterShot } : {}), oldMasterIsSlave: false, writePauseMs: Date.now() - started };
}
