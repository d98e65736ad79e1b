import { ShardKitError } from '../../errors.js';
import { createProgress, formatBytes, type ProgressOptions } from '../progress.js';
import type { BackupEngine } from './backup-engine.js';
import { backupId, listBackups, MANIFEST_FILE, START_FILE, unitFile, type BackupManifest, type BackupStart, type UnitBackup } from './backup-manifest.js';
import { readText, type BackupTarget } from './backup-target.js';
import { shardLayout } from './backup-layout.js';

export interface BackupCreateOptions {
  progress?: ProgressOptions['mode'];
  log?: (message: string) => void;
  /** Stop after this many units (tests: a run killed between two pairs). */
  stopAfterUnits?: number;
}

/**
 * `shardkit backup create`: every unit (pair) copied from its slave into the target, then the
 * manifest, last. A run that died is resumed when the map did not change since (its complete
 * units are kept), else it is removed and a new backup starts; an incomplete backup never has a
 * manifest. Refused, with the backup removed, when the map changed while it ran (a move or a
 * failover: the copies would not describe one fleet).
 */
export async function createBackup(engine: BackupEngine, target: BackupTarget, options: BackupCreateOptions = {}): Promise<BackupManifest> {
  const log = options.log ?? (() => undefined);
  const mapVersion = await engine.mapVersion();
  const units = await engine.units();
  let start: BackupStart | undefined;
  for (const b of await listBackups(target)) {
    if (b.complete) continue;
    await engine.recover(target, b.id);
    if (start === undefined && b.start?.engine === engine.kind && b.start.mapVersion === mapVersion) {
      start = b.start;
      log(`resuming backup ${b.id}`);
    } else {
      log(`removing incomplete backup ${b.id}`);
      await target.remove(b.id);
    }
  }
  if (start === undefined) {
    start = { format: 1, id: backupId(), engine: engine.kind, mapVersion, startedAt: Date.now() };
    await target.put(`${start.id}/${START_FILE}`, JSON.stringify(start));
  }
  const id = start.id;
  const progress = createProgress(`backup ${id}`, units.length, { unit: 'pairs', ...(options.progress !== undefined ? { mode: options.progress } : {}) });
  const done: UnitBackup[] = [];
  let copied = 0;
  for (const u of units) {
    const name = `${id}/${unitFile(u.unit)}`;
    if (await target.exists(name)) {
      done.push(JSON.parse(await readText(target, name)) as UnitBackup);
      progress.update(done.length, { resumed: u.unit });
      continue;
    }
    if (options.stopAfterUnits !== undefined && copied >= options.stopAfterUnits) throw new ShardKitError('INTERNAL', `stopped after ${copied} unit(s) as asked`);
    let b: UnitBackup;
    try {
      b = await engine.backupUnit(u, target, id, (bytes) => progress.update(done.length, { unit: u.unit, bytes: formatBytes(bytes) }));
    } catch (err) {
      // The slave died, or the tool failed: what was written stays a .partial object, never listed.
      const code = err instanceof ShardKitError && err.code !== 'INTERNAL' ? err.code : 'SHARD_UNAVAILABLE';
      throw new ShardKitError(code, `copying ${u.unit} from ${u.source} failed (${(err as Error).message}): backup ${id} is incomplete (no manifest); run \`backup create\` again once ${u.source} is back: it resumes`, { cause: err });
    }
    await target.put(name, JSON.stringify(b));
    done.push(b);
    copied++;
    progress.update(done.length, { unit: u.unit, bytes: formatBytes(b.bytes) });
    log(`${u.unit}: ${formatBytes(b.bytes)} from ${u.source} at ${b.position || '-'}`);
  }
  // The map read once: the layout recorded is the one of the version checked.
  const endMap = engine.shardMap === undefined ? undefined : await engine.shardMap();
  const after = endMap === undefined ? await engine.mapVersion() : endMap.version;
  if (after !== mapVersion) {
    await target.remove(id);
    throw new ShardKitError('PRECONDITION_FAILED', `the shard map changed while the backup ran (version ${mapVersion} -> ${after}: a move or a failover): backup ${id} removed, run it again`);
  }
  const manifest: BackupManifest = { ...start, finishedAt: Date.now(), units: done, ...(endMap !== undefined ? { layout: shardLayout(endMap) } : {}) };
  await target.put(`${id}/${MANIFEST_FILE}`, JSON.stringify(manifest, null, 2));
  progress.finish({ backup: id });
  return manifest;
}
