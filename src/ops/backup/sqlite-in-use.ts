import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { ShardKitError } from '../../errors.js';

const busy = (err: unknown) => /^SQLITE_(BUSY|LOCKED)/.test(String((err as { code?: unknown }).code ?? ''));

/**
 * Whether another connection (a service, in any process) has the WAL-mode file at `path` open.
 * A `-wal` beside the file says nothing: a read-only reader (a backup, an export) or a killed
 * service leaves one with nobody holding it. SQLite lets a connection take a file out of WAL mode
 * only when it is the file's only connection, so the probe asks for that, without waiting, and
 * puts WAL back, waiting for a reader that opened meanwhile: the file is as it was either way (a
 * leftover WAL is checkpointed into it). Shard files are always WAL; another file counts as not open.
 */
export function sqliteInUse(path: string): boolean {
  if (!existsSync(path)) return false;
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { fileMustExist: true, timeout: 0 });
    if (db.pragma('journal_mode', { simple: true }) !== 'wal') return false;
    let mode: unknown;
    try {
      mode = db.pragma('journal_mode = DELETE', { simple: true });
    } catch (err) {
      if (busy(err)) return true;
      throw err;
    }
    if (mode !== 'delete') return true;
    db.pragma('busy_timeout = 10000');
    db.pragma('journal_mode = WAL');
    return false;
  } catch (err) {
    if (busy(err)) return true;
    throw new ShardKitError('SHARD_UNAVAILABLE', `cannot tell whether ${path} is open (${(err as Error).message}): nothing changed`, { cause: err });
  } finally {
    db?.close();
  }
}
