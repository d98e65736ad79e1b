import { ShardKitError } from '../../errors.js';
import type { BackupEngine } from './backup-engine.js';
import { listBackups, type BackupManifest } from './backup-manifest.js';
import type { BackupTarget } from './backup-target.js';

export interface PruneReport {
  /** The backups kept, oldest first (the newest complete one always among them). */
  kept: string[];
  removed: string[];
  /** Archived log files removed, as `pair/file`. */
  removedLogs: string[];
}

/** A --keep value: a whole number of backups, at least 1 (the newest complete backup is never removed). */
export function parseKeep(text: string): number {
  const n = /^\d{1,6}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(n) || n < 1) throw new ShardKitError('INVALID_ARGUMENT', `--keep must be a whole number of backups, at least 1 (the newest complete backup is never removed), got ${JSON.stringify(text.slice(0, 40))}`);
  return n;
}

/**
 * Retention (`backup create --keep N`): the newest `keep` complete backups of this engine stay;
 * older complete ones are removed, then the archived log files that no kept backup needs (those
 * wholly before each pair's oldest kept position). Incomplete backups are left to the next
 * `create` (it resumes or removes them), and so are archives of pairs no kept backup names.
 */
export async function pruneBackups(engine: BackupEngine, target: BackupTarget, keep: number): Promise<PruneReport> {
  if (!Number.isInteger(keep) || keep < 1) throw new ShardKitError('INVALID_ARGUMENT', `keep must be at least 1, got ${keep}`);
  const complete = (await listBackups(target)).filter((b) => b.complete && b.manifest!.engine === engine.kind);
  const kept = complete.slice(-keep).map((b) => b.manifest!);
  const old = complete.slice(0, -keep);
  const removed: string[] = [];
  for (const b of old) {
    await target.remove(b.id);
    removed.push(b.id);
  }
  const removedLogs: string[] = [];
  if (engine.pruneArchive !== undefined && kept.length > 0) {
    for (const [unit, positions] of oldestPositions(kept)) removedLogs.push(...(await engine.pruneArchive(target, unit, positions)).map((f) => `${unit}/${f}`));
  }
  return { kept: kept.map((m) => m.id), removed, removedLogs };
}

/** Per pair, the positions of the kept backups that hold it (the archive must reach back to every one). */
function oldestPositions(kept: BackupManifest[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const m of kept) for (const u of m.units) if (u.position !== '') out.set(u.unit, [...(out.get(u.unit) ?? []), u.position]);
  return out;
}
