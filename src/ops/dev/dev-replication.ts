import type { MysqldSettings } from '../mariadb/mariadb-instance.js';
import type { DevClusterView as DevCluster } from './dev-cluster-view.js';
import type { DevServer } from './dev-cluster-state.js';

/** How long a semi-sync master waits for its slave's ack before it falls back to async (ms). */
export const SEMI_SYNC_TIMEOUT_MS = 2000;

/**
 * Binlog + GTID settings every pair member gets. Every member starts read-only, masters too:
 * `dev up` makes writable only the servers the live shard map names master (dev-writable.ts), so
 * a failed master that comes back cannot take writes. Each pair has its own gtid_domain_id (its
 * number), so GTIDs of different pairs never collide when one pair replicates from another.
 * Semi-sync (AFTER_SYNC) is configured on both sides of every member, since roles swap on failover;
 * at run time only a master with a slave waits for acks (applyMasterFence, failover: semiSyncRoles).
 */
export function replicationSettings(role: string, options: { pair?: number; semiSync?: boolean } = {}): MysqldSettings {
  return {
    log_bin: 'mysql-bin',
    binlog_format: 'ROW',
    log_slave_updates: true,
    gtid_strict_mode: true,
    relay_log: 'relay-bin',
    max_binlog_size: '64M',
    expire_logs_days: 2,
    // A slave gives up on a silent master after this (default 60 s; the master's heartbeat comes
    // every half of it): the evidence `shardkit heal` waits for before failing over a frozen master.
    slave_net_timeout: 4,
    read_only: true,
    // No replication connection starts with the server: `dev up` starts a slave's own ('')
    // connection, and a shard move's named connection `move_<id>` restarted by the server would
    // run without its table filter (MariaDB keeps per-connection replicate_do_table set by SET
    // GLOBAL in memory only) and apply the source's writes to every table (docs/moves.md).
    'skip-slave-start': true,
    ...(options.pair !== undefined ? { gtid_domain_id: options.pair } : {}),
    ...(options.semiSync ? {
      rpl_semi_sync_master_enabled: true,
      rpl_semi_sync_slave_enabled: true,
      rpl_semi_sync_master_wait_point: 'AFTER_SYNC',
      rpl_semi_sync_master_timeout: SEMI_SYNC_TIMEOUT_MS,
    } : {}),
  };
}

/**
 * Points a slave at its master with GTID (slave_pos) the first time; later only makes sure it
 * runs. START SLAVE starts the default ('') connection only: a move's named connection on the
 * same server stays stopped (skip-slave-start) until the mover starts it with its filter.
 */
export async function setupReplication(cluster: DevCluster, slave: DevServer): Promise<void> {
  const inst = cluster.instance(slave.name);
  const master = cluster.instance(slave.master!);
  const conn = await inst.connect();
  try {
    const [rows] = await conn.query('SHOW SLAVE STATUS');
    if ((rows as unknown[]).length === 0) {
      await conn.query(
        "CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = ?, MASTER_USER = ?, MASTER_PASSWORD = ?, MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1",
        [master.port, cluster.state.replUser, cluster.state.replPassword],
      );
    }
    await conn.query('START SLAVE');
  } finally {
    await conn.end().catch(() => conn.destroy());
  }
}

