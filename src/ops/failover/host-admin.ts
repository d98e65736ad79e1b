import mysql from 'mysql2/promise';
import { ShardKitError } from '../../errors.js';
import type { ShardKitConfig } from '../../config/config.js';
import type { DevCluster } from '../dev/dev-cluster.js';
import { runStatements } from '../mariadb/mariadb-instance.js';
import { passwordOptionFile } from '../mariadb/client-option-file.js';

/** A user and password (the admin account, or the replication account a slave logs in with). */
export interface Credentials {
  user: string;
  password?: string;
}

/** How the fleet tools reach a host as an administrator (SUPER: read_only, CHANGE MASTER, dumps). */
export interface HostAdmin {
  /** An admin connection to `host`; the caller closes it. */
  connect(host: string, options?: { connectTimeoutMs?: number }): Promise<mysql.Connection>;
  /** The host's address as the slaves and the mariadb-dump client reach it. */
  address(host: string): { host: string; port: number };
  /** Client arguments for mariadb / mariadb-dump to log in to `host` as admin. */
  clientArgs(host: string): string[];
  /** The account slaves replicate with. */
  replication: Credentials;
  /** The dev cluster when the hosts are its servers (it can start them and records roles). */
  dev?: DevCluster;
}

/** Runs statements on one admin connection; returns the rows of the last. */
export async function adminQuery<T = Array<Record<string, unknown>>>(admin: HostAdmin, host: string, ...statements: Array<string | { sql: string; values?: unknown[] }>): Promise<T> {
  return runStatements<T>(await admin.connect(host), statements);
}

/** The dev cluster's servers: root over each unix socket, its replication user. */
export function devHostAdmin(cluster: DevCluster): HostAdmin {
  return {
    connect: (host, options = {}) => cluster.instance(host).connect(options.connectTimeoutMs !== undefined ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
    address: (host) => ({ host: '127.0.0.1', port: cluster.instance(host).port }),
    clientArgs: (host) => [`--socket=${cluster.instance(host).socket}`],
    replication: { user: cluster.state.replUser, password: cluster.state.replPassword },
    dev: cluster,
  };
}

/**
 * A fleet named by a config: each host's address from `hosts`, admin and replication accounts
 * from the environment (SHARDKIT_ADMIN_USER / _PASSWORD, SHARDKIT_REPL_USER / _PASSWORD), since
 * the config only holds the application user, which must not have SUPER (docs/failover.md).
 */
export function configHostAdmin(config: ShardKitConfig, env: NodeJS.ProcessEnv = process.env): HostAdmin {
  const adminUser = env.SHARDKIT_ADMIN_USER;
  const replUser = env.SHARDKIT_REPL_USER;
  if (!adminUser || !replUser) {
    throw new ShardKitError('INVALID_ARGUMENT', 'set SHARDKIT_ADMIN_USER (with SUPER) and SHARDKIT_REPL_USER (REPLICATION SLAVE), and their _PASSWORD, for failover on a server fleet; the config\'s application user cannot fence or promote');
  }
  const address = (host: string) => {
    const h = config.hosts[host] as { host?: string; port?: number } | undefined;
    if (!h || h.host === undefined) throw new ShardKitError('INVALID_ARGUMENT', `host ${host} is not a server in the config's hosts`);
    return { host: h.host, port: h.port ?? 3306 };
  };
  const adminPassword = env.SHARDKIT_ADMIN_PASSWORD;
  return {
    connect: (host, options = {}) => mysql.createConnection({ ...address(host), user: adminUser, ...(adminPassword !== undefined ? { password: adminPassword } : {}), connectTimeout: options.connectTimeoutMs ?? 5000 }),
    address,
    clientArgs: (host) => {
      const a = address(host);
      // The option file comes first (the tools read it only there); never --password=, which ps shows.
      return [...(adminPassword !== undefined ? [`--defaults-extra-file=${passwordOptionFile(adminPassword)}`] : []), `--host=${a.host}`, `--port=${a.port}`, `--user=${adminUser}`];
    },
    replication: { user: replUser, ...(env.SHARDKIT_REPL_PASSWORD !== undefined ? { password: env.SHARDKIT_REPL_PASSWORD } : {}) },
  };
}
