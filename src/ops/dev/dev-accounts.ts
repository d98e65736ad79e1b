import type { MariadbInstance } from '../mariadb/mariadb-instance.js';
import type { DevClusterView as DevCluster } from './dev-cluster-view.js';

/**
 * What the application user may do: data and DDL on the shard databases, nothing more. Without
 * SUPER or READ ONLY ADMIN, so read_only fences it: a master the map does not name (a failed one
 * that came back, or one being failed over) refuses its writes.
 */
export const APP_GRANTS = 'SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, CREATE TEMPORARY TABLES, LOCK TABLES, EXECUTE, CREATE VIEW, SHOW VIEW, TRIGGER, REFERENCES, SHOW DATABASES';

/** Users every server gets, outside the binlog so that master and slave GTID histories stay equal. */
export async function setupAccounts(cluster: DevCluster, inst: MariadbInstance): Promise<void> {
  const { appUser, appPassword, replUser, replPassword } = cluster.state;
  const conn = await inst.connect();
  try {
    await conn.query('SET SESSION sql_log_bin = 0');
    const [anon] = await conn.query("SELECT Host AS host FROM mysql.user WHERE User = ''");
    for (const r of anon as Array<{ host: string }>) await conn.query("DROP USER ''@?", [r.host]);
    // CREATE then ALTER: the password in cluster.json wins even over an older account.
    // REVOKE first: clusters made before APP_GRANTS gave the app user ALL PRIVILEGES.
    const account = async (user: string, host: string, password: string, grant: string) => {
      await conn.query('CREATE USER IF NOT EXISTS ?@? IDENTIFIED BY ?', [user, host, password]);
      await conn.query('ALTER USER ?@? IDENTIFIED BY ?', [user, host, password]);
      await conn.query('REVOKE ALL PRIVILEGES, GRANT OPTION FROM ?@?', [user, host]);
      await conn.query(`GRANT ${grant} ON *.* TO ?@?`, [user, host]);
    };
    for (const host of ['127.0.0.1', 'localhost']) await account(appUser, host, appPassword, APP_GRANTS);
    await account(replUser, '127.0.0.1', replPassword, 'REPLICATION SLAVE');
  } finally {
    await conn.end().catch(() => conn.destroy());
  }
}
