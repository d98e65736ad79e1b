import { existsSync } from 'node:fs';
import { ShardKitError } from '../../errors.js';
import { archiveLogs, createBackup, parseKeep, parseTime, pruneBackups, DirectoryTarget, listBackups, openBackupEngine, restoreBackup, verifyBackup, type BackupEngine } from '../../ops/backup/index.js';

export interface BackupCliOptions {
  config?: string;
  dir?: string;
  data?: string;
  json?: boolean;
}

const log = (m: string) => process.stderr.write(`shardkit: ${m}\n`);

async function withEngine<T>(opts: BackupCliOptions, fn: (engine: BackupEngine) => Promise<T>): Promise<T> {
  const engine = await openBackupEngine({ ...(opts.dir !== undefined ? { dir: opts.dir } : {}), ...(opts.config !== undefined ? { config: opts.config } : {}), ...(opts.data !== undefined ? { data: opts.data } : {}) });
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}

const print = (json: boolean | undefined, value: unknown, text: string) => process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);

export async function backupCreateCommand(opts: BackupCliOptions & { to: string; keep?: string }): Promise<void> {
  // Checked before anything is copied: bad input changes nothing.
  const keep = opts.keep === undefined ? undefined : parseKeep(opts.keep);
  const target = new DirectoryTarget(opts.to);
  const { m, pruned } = await withEngine(opts, async (e) => {
    const m = await createBackup(e, target, { log });
    return { m, pruned: keep === undefined ? undefined : await pruneBackups(e, target, keep) };
  });
  const bytes = m.units.reduce((n, u) => n + u.bytes, 0);
  const retention = pruned === undefined ? '' : `\nkept ${pruned.kept.length} backup(s); removed ${pruned.removed.length} older backup(s) and ${pruned.removedLogs.length} archived log file(s)`;
  print(opts.json, pruned === undefined ? m : { ...m, retention: pruned }, `backup ${m.id}: ${m.units.length} pair(s), ${bytes} bytes, map version ${m.mapVersion}\n${m.units.map((u) => `  ${u.unit} from ${u.source}${u.position ? ` at ${u.position}` : ''}`).join('\n')}${retention}`);
}

export async function backupListCommand(opts: { from: string; json?: boolean }): Promise<void> {
  // A mistyped --from is not an empty backup directory.
  if (!existsSync(opts.from)) throw new ShardKitError('NOT_FOUND', `no directory ${opts.from}: give --from the directory backups were written to (backup create --to)`);
  const all = await listBackups(new DirectoryTarget(opts.from));
  const rows = all.map((b) => ({ id: b.id, complete: b.complete, engine: b.manifest?.engine ?? b.start?.engine, mapVersion: b.manifest?.mapVersion ?? b.start?.mapVersion, units: b.manifest?.units.length, bytes: b.manifest?.units.reduce((n, u) => n + u.bytes, 0) }));
  print(opts.json, { backups: rows }, rows.length === 0 ? `no backups in ${opts.from}` : rows.map((r) => `${r.id}  ${r.complete ? `${r.engine} ${r.units} pair(s) ${r.bytes} bytes map v${r.mapVersion}` : 'INCOMPLETE (no manifest)'}`).join('\n'));
}

export async function backupVerifyCommand(opts: BackupCliOptions & { from: string; id?: string }): Promise<void> {
  const r = await withEngine(opts, (e) => verifyBackup(e, new DirectoryTarget(opts.from), opts.id));
  print(opts.json, r, r.differing.length === 0 ? `backup ${r.id}: restored ${r.units} pair(s), ${r.tables} tables, ${r.rows} rows: all match the manifest` : `backup ${r.id}: ${r.differing.length} table(s) differ:\n${r.differing.map((d) => `  ${d}`).join('\n')}`);
  if (r.differing.length > 0) process.exitCode = 3;
}

export async function backupRestoreCommand(opts: BackupCliOptions & { from: string; id?: string; force?: boolean; toTime?: string }): Promise<void> {
  const toTime = opts.toTime === undefined ? undefined : parseTime(opts.toTime);
  const r = await withEngine(opts, (e) => restoreBackup(e, new DirectoryTarget(opts.from), { ...(opts.id !== undefined ? { id: opts.id } : {}), ...(opts.force ? { force: true } : {}), ...(toTime !== undefined ? { toTime } : {}) }));
  print(opts.json, r, `restored backup ${r.id}${r.toTime ? ` and the archived log up to ${r.toTime}` : ''}: ${r.units.map((u) => `${u} from ${r.position[u] || '-'}`).join(', ')}`);
}

export async function backupArchiveCommand(opts: BackupCliOptions & { to: string }): Promise<void> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  try {
    await withEngine(opts, (e) => archiveLogs(e, new DirectoryTarget(opts.to), stop.signal, log));
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}
