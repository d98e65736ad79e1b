import type { ShardInitOptions, ShardInitResult } from '../shard-init.js';
import type { DevCluster } from './dev-cluster.js';
import type { DevClusterExtension } from './dev-cluster-view.js';

export interface DevUpOptions {
  dir: string;
  pairs?: number;
  shards?: number;
  /** Mod shards (lookup fleet); default: same as shards. */
  modShards?: number;
  extensions?: DevClusterExtension[];
  /** mariadb (default) or postgres (first run only; later runs use the cluster's). */
  engine?: 'mariadb' | 'postgres';
  /**
   * Commits wait for the slave on every pair (first run only): semi-synchronous replication
   * (AFTER_SYNC) on MariaDB, a synchronous standby on PostgreSQL (`--sync` or `--semi-sync`).
   */
  semiSync?: boolean;
  /** Skip creating the shards (tests that only need servers). */
  skipInit?: boolean;
  onInitProgress?: ShardInitOptions['onProgress'];
  /** Called with a short message at each step. */
  log?: (message: string) => void;
}

export interface DevUpResult {
  cluster: DevCluster;
  created: boolean;
  /** Servers that were started (not already running). */
  started: string[];
  init?: ShardInitResult;
}
