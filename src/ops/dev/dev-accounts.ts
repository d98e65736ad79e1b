import type { MariadbInstance } from '../mariadb/mariadb-instance.js';
import type { DevCluster } from './dev-cluster.js';

/** Users every server gets, outside the binlog so that master and slave GTID histories stay equal. */
export async function setupAccounts(cluster: DevCluster, inst: MariadbInstance): Promise<void> {
  const { appUser, appPassword, replUser, replPassword } = cluster.state;
  const conn = await inst.connect();
  try {
    await conn.query('SET SESSION sql_log_bin = 0');
    const [anon] = await conn.query("SELECT Host AS host FROM mysql.user WHERE User = ''");
    for (const r of anon as Array<{ host: string }>) await conn.query("DROP USER ''@?", [r.host]);
    // CREATE then ALTER: the password in cluster.json wins even over an older account.
    const account = async (user: string, host: string, password: string, grant: string) => {
      await conn.query('CREATE USER IF NOT EXISTS ?@? IDENTIFIED BY ?', [user, host, password]);
      await conn.query('ALTER USER ?@? IDENTIFIED BY ?', [user, host, password]);
      await conn.query(`GRANT ${grant} ON *.* TO ?@?`, [user, host]);
    };
    for (const host of ['127.0.0.1', 'localhost']) await account(appUser, host, appPassword, 'ALL PRIVILEGES');
    await account(replUser, '127.0.0.1', replPassword, 'REPLICATION SLAVE');
  } finally {
    await conn.end().catch(() => conn.destroy());
  }
}
