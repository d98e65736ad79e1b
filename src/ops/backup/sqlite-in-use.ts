import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';

/**
 * Whether another connection (a service, in any process) has the WAL-mode file at `path` open.
 * A `-wal` beside the file says nothing: a read-only reader (a backup, an export) or a killed
 * service leaves one with nobody holding it. SQLite lets a connection take a file out of WAL mode
 * only when it is the file's only connection, so the probe asks for that, without waiting, and
 * puts WAL back: the file is as it was either way (a leftover WAL is checkpointed into it).
 */
export function sqliteInUse(path: string): boolean {
  if (!existsSync(path)) return false;
  const db = new Database(path, { fileMustExist: true, timeout: 0 });
  try {
    if (db.pragma('journal_mode', { simple: true }) !== 'wal') return false;
    if (db.pragma('journal_mode = DELETE', { simple: true }) !== 'delete') return true;
    db.pragma('journal_mode = WAL');
    return false;
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_BUSY' || (err as { code?: string }).code === 'SQLITE_LOCKED') return true;
    throw err;
  } finally {
    db.close();
  }
}
