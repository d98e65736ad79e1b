import type { MysqldSettings } from '../mariadb/mariadb-instance.js';
import type { DevCluster } from './dev-cluster.js';
import type { DevServer } from './dev-cluster-state.js';

/** Binlog + GTID settings every pair member gets; slaves are also read-only. */
export function replicationSettings(role: string): MysqldSettings {
  return {
    log_bin: 'mysql-bin',
    binlog_format: 'ROW',
    log_slave_updates: true,
    gtid_strict_mode: true,
    relay_log: 'relay-bin',
    max_binlog_size: '64M',
    expire_logs_days: 2,
    // Reconnect quickly after the master restarts (default 60 s).
    slave_net_timeout: 10,
    ...(role === 'slave' ? { read_only: true } : {}),
  };
}

/** Points a slave at its master with GTID (slave_pos) the first time; later only makes sure it runs. */
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

