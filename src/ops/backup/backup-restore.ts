import { ShardKitError } from '../../errors.js';
import { createProgress, type ProgressOptions } from '../progress.js';
import type { BackupEngine } from './backup-engine.js';
import { readManifest } from './backup-manifest.js';
import type { BackupTarget } from './backup-target.js';

export interface RestoreOptions {
  /** A backup id (default: the newest complete one). */
  id?: string;
  /** Restore even though services are connected. */
  force?: boolean;
  progress?: ProgressOptions['mode'];
}

export interface RestoreReport {
  id: string;
  units: string[];
  position: Record<string, string>;
}

/**
 * `shardkit backup restore` (latest, in place): each unit is put back on the pair that holds its
 * ranges now. Refused before anything changes when the backup is of another engine.
 */
export async function restoreBackup(engine: BackupEngine, target: BackupTarget, options: RestoreOptions = {}): Promise<RestoreReport> {
  const manifest = await readManifest(target, options.id);
  if (manifest.engine !== engine.kind) throw new ShardKitError('INVALID_ARGUMENT', `backup ${manifest.id} is of a ${manifest.engine} fleet, this one is ${engine.kind}: nothing changed`);
  const progress = createProgress(`restore ${manifest.id}`, manifest.units.length, { unit: 'pairs', ...(options.progress !== undefined ? { mode: options.progress } : {}) });
  const position: Record<string, string> = {};
  for (const [i, u] of manifest.units.entries()) {
    await engine.restoreUnit(u, target, manifest.id, { force: options.force === true });
    position[u.unit] = u.position;
    progress.update(i + 1, { unit: u.unit });
  }
  progress.finish();
  return { id: manifest.id, units: manifest.units.map((u) => u.unit), position };
}
