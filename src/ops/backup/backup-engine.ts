import type { ShardMap } from '../../topology/shard-map.js';
import type { BackupTarget } from './backup-target.js';
import type { BackupEngineKind, TableSummary, UnitBackup } from './backup-manifest.js';
import type { AsideRequest } from './restore-aside.js';

/** What a backup unit is before it is copied: a pair (master, the slave read from) or the embedded store. */
export interface BackupUnitSource {
  unit: string;
  source: string;
}

/** Told the bytes copied so far of the unit being backed up. */
export type BytesListener = (bytes: number) => void;

/**
 * One engine's backup steps. The runner (backup-create.ts, backup-restore.ts, backup-verify.ts)
 * is written once above it: ids, resume, manifests, the map checks and progress.
 */
export interface BackupEngine {
  readonly kind: BackupEngineKind;
  /** The map version now (a backup refuses when it changed while it ran). */
  mapVersion(): Promise<number>;
  /** The live shard map: a backup records its layout, a full restore compares it (backup-layout.ts). */
  shardMap?(): Promise<ShardMap>;
  /** What to copy; refuses (PRECONDITION_FAILED) while a shard move or a failover is in progress. */
  units(): Promise<BackupUnitSource[]>;
  /** Copies one unit into the target under `prefix/`; resolves when its files are complete. */
  backupUnit(unit: BackupUnitSource, target: BackupTarget, prefix: string, onBytes: BytesListener): Promise<UnitBackup>;
  /** Undoes what a killed backupUnit left behind on the servers (a slave's stopped applier). */
  recover(target: BackupTarget, prefix: string): Promise<void>;
  /**
   * Puts a unit back in place, on the hosts that hold its ranges now; with `toMs`, then the
   * archived log from the unit's position up to that time (engines with `archivedUntil`).
   */
  restoreUnit(unit: UnitBackup, target: BackupTarget, prefix: string, options: { force: boolean; toMs?: number }): Promise<void>;
  /** Restores a unit into a scratch server and returns what it holds there. */
  drillUnit(unit: UnitBackup, target: BackupTarget, prefix: string, scratchDir: string): Promise<Record<string, TableSummary>>;
  /** Streams every pair's log (binlog, WAL) into the target's archive until `signal` aborts. */
  archive?(target: BackupTarget, signal: AbortSignal, log: (m: string) => void): Promise<void>;
  /**
   * Wall-clock ms up to which the archive can restore a unit (undefined: nothing archived);
   * refuses (INVALID_ARGUMENT) when the archive starts after the unit's copy. Present on the
   * engines that restore to a time.
   */
  archivedUntil?(target: BackupTarget, unit: UnitBackup): Promise<number | undefined>;
  /**
   * Removes the archived log files of `unit` that a restore from none of `positions` (replication
   * positions of kept backups) needs; returns their names.
   */
  pruneArchive?(target: BackupTarget, unit: string, positions: string[]): Promise<string[]>;
  /**
   * `restore --shards --into` (engines with a spare pair to restore onto): the request's shards of
   * `unit` restored aside (to `req.toMs` with the archive) and loaded onto the spare pair, which
   * holds none of their rows; `preamble` is SQL run first in the load's transaction where the
   * engine loads in one. Returns what the restored tables hold (rows, checksum).
   */
  restoreAside?(unit: UnitBackup, target: BackupTarget, prefix: string, req: AsideRequest, preamble: string): Promise<Record<string, TableSummary>>;
  /** Refuses (PRECONDITION_FAILED, nothing changed) while services are connected to `master` (a restore in place needs them stopped, or --force). */
  requireNoServices?(master: string): Promise<void>;
  /** Rows and checksums of the tables in `schemas` on a live host, computed as restoreAside's. */
  summariesOn?(host: string, schemas: readonly string[]): Promise<Record<string, TableSummary>>;
  close(): Promise<void>;
}
