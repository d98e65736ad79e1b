import { lstatSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ShardKitError } from '../errors.js';
import type { EngineBackupReport, EngineExportReport, WideColumnEngine } from './engine.js';
import type { ProgressFn } from './types.js';

/**
 * Backups and exports asked for over HTTP are written only inside one directory chosen by the
 * operator (the service's export directory); the client names an entry in it and never gives a
 * path. The CLI without --url still writes wherever its user says: that user owns the machine.
 */
export const DEFAULT_EXPORT_DIR = 'widecolumn-exports';

/**
 * One path segment: no separators, no NUL, no leading dot (so no `.`, `..` or hidden entries),
 * bounded. `.partial` is refused because exports use it for their unfinished file.
 */
export const EXPORT_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$';
const EXPORT_NAME = new RegExp(EXPORT_NAME_PATTERN);
export const EXPORT_NAME_RULE = '1..128 characters of letters, digits, ".", "_" or "-", starting with a letter or digit, not ending in ".partial"';

/** The entry `name` of the export directory `root`, or INVALID_ARGUMENT; nothing is touched on disk. */
export function resolveExportName(root: string, name: unknown, what: string): string {
  if (typeof name !== 'string' || !EXPORT_NAME.test(name) || name.endsWith('.partial')) {
    const shown = typeof name === 'string' ? JSON.stringify(name.slice(0, 80)) : typeof name;
    throw new ShardKitError('INVALID_ARGUMENT', `${what} ${shown} is not a plain name (${EXPORT_NAME_RULE}); it names an entry of the service's export directory, not a path`);
  }
  const base = resolve(root);
  const target = resolve(base, name);
  // The pattern already rules out escaping; the resolved path is checked again in case it ever changes.
  if (dirname(target) !== base) throw new ShardKitError('INVALID_ARGUMENT', `${what} ${JSON.stringify(name)} leaves the export directory`);
  return target;
}

export interface ConfinedBackupReport {
  name: string;
  dir: string;
  records: number;
  bytes: number;
  files: number;
  snapshotAt: number;
}

/**
 * A backup into the new directory `root/name`. An existing entry of that name is refused
 * (ALREADY_EXISTS), even an empty directory: the service only ever writes into directories it
 * created itself for this backup. A failed backup removes its directory.
 */
export async function backupToExportDir(engine: WideColumnEngine, root: string, name: unknown, options: { onProgress?: ProgressFn } = {}): Promise<ConfinedBackupReport> {
  const dir = resolveExportName(root, name, 'backup name');
  mkdirSync(resolve(root), { recursive: true });
  try {
    mkdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new ShardKitError('ALREADY_EXISTS', `backup ${JSON.stringify(name)} already exists in the export directory; choose a new name`);
    throw err;
  }
  let m: EngineBackupReport;
  try {
    m = await engine.backup(dir, options);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return { name: name as string, dir, records: m.records, bytes: m.bytes, files: m.files, snapshotAt: m.snapshotAt };
}

/**
 * A Parquet export into the file `root/name`. An existing file is replaced only with
 * `overwrite`; anything there that is not a regular file (a backup directory, a link) is refused.
 */
export async function exportToExportDir(engine: WideColumnEngine, root: string, dataset: string, name: unknown, options: { overwrite?: boolean; onProgress?: ProgressFn } = {}): Promise<EngineExportReport & { name: string }> {
  const file = resolveExportName(root, name, 'export name');
  await engine.getDataset(dataset);
  let existing: ReturnType<typeof lstatSync> | undefined;
  try {
    existing = lstatSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (existing && (!existing.isFile() || !options.overwrite)) {
    throw new ShardKitError('ALREADY_EXISTS', `${JSON.stringify(name)} already exists in the export directory${existing.isFile() ? '; pass overwrite to replace it' : ' and is not a file'}`);
  }
  mkdirSync(resolve(root), { recursive: true });
  const report = await engine.exportParquet(dataset, file, options);
  return { ...report, name: name as string };
}

/** The export directory next to a store directory (`<data>/widecolumn` → `<data>/widecolumn-exports`). */
export function defaultExportDir(storePath: string): string {
  return join(dirname(resolve(storePath)), DEFAULT_EXPORT_DIR);
}
