import { ShardKitError } from '../../errors.js';
import { readText, type BackupTarget } from './backup-target.js';
import type { ShardLayout } from './backup-layout.js';

/** Row count and checksum of one table as the backup holds it; what `backup verify` checks a restore against. */
export interface TableSummary {
  rows: number;
  checksum: string;
}

/** One unit of a backup: a master/slave pair (taken from its slave) or the embedded store's shard files. */
export interface UnitBackup {
  /** The pair's master at backup time (what a restore puts it back on), or `embedded`. */
  unit: string;
  /** The host it was read from (the slave), or the data directory. */
  source: string;
  /** The replication position of the copy: a GTID list (MariaDB), an LSN (PostgreSQL), '' (embedded). */
  position: string;
  /** Its objects in the target, relative to the backup's folder. */
  files: string[];
  bytes: number;
  /** `schema.table` (MariaDB, PostgreSQL) or `file:table` (embedded) -> rows and checksum. */
  tables: Record<string, TableSummary>;
  /** Wall-clock ms of the copy's consistent point. */
  at: number;
}

export type BackupEngineKind = 'mariadb' | 'postgres' | 'sqlite';

/** `<id>/backup.json`: written first; a backup with it and no manifest is incomplete. */
export interface BackupStart {
  format: 1;
  id: string;
  engine: BackupEngineKind;
  mapVersion: number;
  startedAt: number;
}

/** `<id>/manifest.json`: written last, only when every unit is complete. */
export interface BackupManifest extends BackupStart {
  finishedAt: number;
  units: UnitBackup[];
  /**
   * Which pair (master at backup time, the unit's name) served which object and mod shards, at
   * `mapVersion`: a full restore refuses when shards are served by another pair now
   * (backup-layout.ts). Absent in backups taken before it was recorded (and from engines
   * without a map): those restore as before, unchecked.
   */
  layout?: ShardLayout;
}

export const START_FILE = 'backup.json';
export const MANIFEST_FILE = 'manifest.json';
export const unitFile = (unit: string) => `units/${unit}.json`;

/** A backup id: the UTC start time, sortable (20261128T104233123Z). */
export function backupId(now = Date.now()): string {
  return new Date(now).toISOString().replace(/[-:]/g, '').replace('.', '');
}

export interface BackupListing {
  id: string;
  complete: boolean;
  manifest?: BackupManifest;
  start?: BackupStart;
}

const ID = /^\d{8}T\d{9}Z$/;

/** Every backup in the target, oldest first; incomplete ones (no manifest) flagged. */
export async function listBackups(target: BackupTarget): Promise<BackupListing[]> {
  const out: BackupListing[] = [];
  for (const id of (await target.list('')).filter((n) => ID.test(n))) {
    if (await target.exists(`${id}/${MANIFEST_FILE}`)) out.push({ id, complete: true, manifest: JSON.parse(await readText(target, `${id}/${MANIFEST_FILE}`)) as BackupManifest });
    else {
      const start = (await target.exists(`${id}/${START_FILE}`)) ? JSON.parse(await readText(target, `${id}/${START_FILE}`)) as BackupStart : undefined;
      out.push({ id, complete: false, ...(start ? { start } : {}) });
    }
  }
  return out;
}

/** The manifest of backup `id`, or of the newest complete one; NOT_FOUND when there is none. */
export async function readManifest(target: BackupTarget, id?: string): Promise<BackupManifest> {
  const complete = (await listBackups(target)).filter((b) => b.complete);
  if (id === undefined) {
    const last = complete.at(-1);
    if (!last) throw new ShardKitError('NOT_FOUND', `no complete backup in ${target.location}`);
    return last.manifest!;
  }
  const b = complete.find((x) => x.id === id);
  if (!b) throw new ShardKitError('NOT_FOUND', `no complete backup ${id} in ${target.location}`);
  return b.manifest!;
}
