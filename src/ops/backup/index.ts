import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseConfig, type ShardKitConfig } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import { createTopologyStore } from '../../topology/index.js';
import { DevCluster } from '../dev/dev-cluster.js';
import { openFleet } from '../failover/failover-context.js';
import type { BackupEngine } from './backup-engine.js';
import { MariadbBackupEngine } from './mariadb-backup-engine.js';
import { PostgresBackupEngine } from './postgres-backup-engine.js';
import { devPgAccess, fleetPgAccess } from './postgres-access.js';
import { SqliteBackupEngine } from './sqlite-backup-engine.js';

export { DirectoryTarget, type BackupTarget } from './backup-target.js';
export { listBackups, readManifest, type BackupManifest, type BackupListing, type UnitBackup } from './backup-manifest.js';
export type { BackupEngine } from './backup-engine.js';
export { createBackup, type BackupCreateOptions } from './backup-create.js';
export { restoreBackup, type RestoreOptions, type RestoreReport } from './backup-restore.js';
export { verifyBackup, type VerifyReport } from './backup-verify.js';
export { archiveLogs, parseTime } from './backup-archive.js';
export { parseKeep, pruneBackups, type PruneReport } from './backup-retention.js';

export interface BackupFleetOptions {
  /** A dev cluster directory. */
  dir?: string;
  /** A config file (a fleet: admin accounts from SHARDKIT_ADMIN_USER / _PASSWORD). */
  config?: string;
  /** Where the config's file topology store resolves. */
  data?: string;
}

/** The backup engine of a dev cluster or a config's fleet. */
export async function openBackupEngine(options: BackupFleetOptions): Promise<BackupEngine> {
  const cluster = options.dir !== undefined ? DevCluster.require(options.dir) : undefined;
  if (cluster?.state.engine === 'postgres') return new PostgresBackupEngine(devPgAccess(cluster));
  if (cluster === undefined && options.config !== undefined) {
    const config = readConfig(options.config);
    if (config.storage.backend === 'sqlite') {
      const dataDir = resolve(options.data ?? dirname(resolve(options.config)));
      return new SqliteBackupEngine(config, createTopologyStore(config.topologyStore, { dataDir }), dataDir);
    }
    if (config.storage.backend === 'postgres') return new PostgresBackupEngine(fleetPgAccess({ config: options.config, ...(options.data !== undefined ? { dataDir: options.data } : {}) }));
  }
  const fleet = openFleet({ ...(options.dir !== undefined ? { dir: options.dir } : {}), ...(options.config !== undefined ? { config: options.config } : {}), ...(options.data !== undefined ? { dataDir: options.data } : {}) });
  const storage = fleet.config.storage as { user?: string };
  return new MariadbBackupEngine(fleet, storage.user ?? '');
}

function readConfig(path: string): ShardKitConfig {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ShardKitError('INVALID_CONFIG', `cannot read config ${path}: ${(err as Error).message}`);
  }
  return parseConfig(json);
}
export { exportShards, type ExportLocation, type ExportReport, type ExportRequest } from './export-run.js';
export { parseSince } from './export-sources.js';
export { restoreShardsInPlace, restoreShardsInto, type RestoreInPlaceReport, type RestoreIntoDeps, type RestoreIntoRequest, type RestoreIntoReport, type RestoreInRecord } from './restore-into.js';
