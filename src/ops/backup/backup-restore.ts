import { ShardKitError } from '../../errors.js';
import { createProgress, type ProgressOptions } from '../progress.js';
import type { BackupEngine } from './backup-engine.js';
import { listBackups, readManifest, type BackupManifest } from './backup-manifest.js';
import type { BackupTarget } from './backup-target.js';
import { refuseMovedShards } from './backup-layout.js';

export interface RestoreOptions {
  /** A backup id (default: the newest complete one). */
  id?: string;
  /** Restore even though services are connected. */
  force?: boolean;
  progress?: ProgressOptions['mode'];
  /** Restore to this wall-clock time (ms): the newest backup before it, then the archived logs up to it. */
  toTime?: number;
}

export interface RestoreReport {
  id: string;
  /** Restored to this time (with --to-time). */
  toTime?: string;
  units: string[];
  position: Record<string, string>;
}

/**
 * `shardkit backup restore` (latest, in place): each unit is put back on the pair that holds its
 * ranges now. Refused before anything changes when the backup is of another engine, and when
 * shards moved to another pair since the backup (VERSION_CONFLICT, backup-layout.ts).
 */
export async function restoreBackup(engine: BackupEngine, target: BackupTarget, options: RestoreOptions = {}): Promise<RestoreReport> {
  const manifest = options.toTime === undefined ? await readManifest(target, options.id) : await baseFor(engine, target, options.toTime);
  if (manifest.engine !== engine.kind) throw new ShardKitError('INVALID_ARGUMENT', `backup ${manifest.id} is of a ${manifest.engine} fleet, this one is ${engine.kind}: nothing changed`);
  // Shards moved since the backup would get their old rows on their old pair: refused, nothing changed.
  if (engine.shardMap !== undefined) refuseMovedShards(manifest, await engine.shardMap());
  const progress = createProgress(`restore ${manifest.id}`, manifest.units.length, { unit: 'pairs', ...(options.progress !== undefined ? { mode: options.progress } : {}) });
  const position: Record<string, string> = {};
  for (const [i, u] of manifest.units.entries()) {
    await engine.restoreUnit(u, target, manifest.id, { force: options.force === true, ...(options.toTime !== undefined ? { toMs: options.toTime } : {}) });
    position[u.unit] = u.position;
    progress.update(i + 1, { unit: u.unit });
  }
  progress.finish();
  return { id: manifest.id, ...(options.toTime !== undefined ? { toTime: new Date(options.toTime).toISOString() } : {}), units: manifest.units.map((u) => u.unit), position };
}

/**
 * The newest complete backup whose every copy is from before `toMs`, when the archive reaches
 * `toMs` for each of its pairs; INVALID_ARGUMENT (nothing changed) when the time is outside the
 * archived window.
 */
export async function baseFor(engine: BackupEngine, target: BackupTarget, toMs: number): Promise<BackupManifest> {
  if (engine.archivedUntil === undefined) throw new ShardKitError('INVALID_ARGUMENT', `restore --to-time needs a log archive, which ${engine.kind === 'sqlite' ? 'the embedded default has none of (docs/backups.md: take backups as often as the data you can lose; or run a server engine)' : `is not built for ${engine.kind}`}: nothing changed`);
  const complete = (await listBackups(target)).filter((b) => b.complete && b.manifest!.engine === engine.kind).map((b) => b.manifest!);
  const base = complete.filter((m) => m.units.every((u) => u.at < toMs)).at(-1);
  if (!base) throw new ShardKitError('INVALID_ARGUMENT', `no backup in ${target.location} was taken before ${new Date(toMs).toISOString()}${complete[0] ? ` (the first is from ${new Date(complete[0].startedAt).toISOString()})` : ''}: nothing changed`);
  for (const u of base.units) {
    const until = await engine.archivedUntil(target, u);
    if (until === undefined || until < toMs) throw new ShardKitError('INVALID_ARGUMENT', `the archived log of ${u.unit} ends ${until === undefined ? 'before it starts (nothing archived; run `shardkit backup archive`)' : `at ${new Date(until).toISOString()}`}, before ${new Date(toMs).toISOString()}: nothing changed`);
  }
  return base;
}
