import type { ConfigInput, ShardKitConfig } from '../../config/config.js';
import type { MariadbInstance, MysqldSettings } from '../mariadb/mariadb-instance.js';
import type { DevClusterState, DevServer } from './dev-cluster-state.js';

/**
 * What the dev cluster's helpers (config, status, accounts, replication, fence) and extensions
 * use of a DevCluster. They take this interface, not the class, so that the class can call them
 * without an import circle.
 */
export interface DevClusterView {
  readonly dir: string;
  readonly state: DevClusterState;
  readonly configPath: string;
  save(): void;
  server(name: string): DevServer;
  /** The MariadbInstance of a server (MariaDB clusters). */
  instance(name: string): MariadbInstance;
  serversWithRole(role: string): DevServer[];
  config(): ShardKitConfig;
  /** The config `dev up` writes to D/shardkit.json (the default schema on the masters). */
  buildConfig(extensions?: DevClusterExtension[]): ConfigInput;
}

/**
 * A hook for other kinds of dev servers (ticket servers, ...): `dev up` creates, starts and
 * restarts them with the pairs, and they appear in `dev status` with their own role.
 */
export interface DevClusterExtension {
  name: string;
  /** Servers to add; those already in cluster.json (same name) are kept as they are. */
  servers(cluster: DevClusterView): Array<{ name: string; role: string; settings?: MysqldSettings }>;
  /** After every server runs, on every `dev up`: create databases, tables, users (idempotently). */
  afterStart?(cluster: DevClusterView): Promise<void>;
  /** Adds its section to the config before `D/shardkit.json` is written (first `dev up` only). */
  configure?(config: ConfigInput, cluster: DevClusterView): void;
  /** Extra settings for the pairs' servers, when they are created (e.g. a storage engine plugin). */
  pairSettings?(): MysqldSettings;
}
