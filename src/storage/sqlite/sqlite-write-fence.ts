import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';

/**
 * A write fence on one shard file, for `shardkit migrate --final` (src/migrate): triggers on
 * every table abort each INSERT, UPDATE and DELETE with a message that starts with
 * READ_ONLY_MARK, so every process that writes the file (a service, a script using the library)
 * is refused from the commit of the fence on; SqliteBackend turns the message into a retryable
 * SHARD_MOVING. With `until` the triggers only fire before that wall-clock time (ms): a migrator
 * that crashes mid-cutover leaves a fence that lifts itself. Without it the file stays read-only.
 */
export const READ_ONLY_MARK = 'shardkit read-only:';
const TRIGGER_PREFIX = 'shardkit_fence_';

export interface WriteFence {
  /** Wall-clock ms until which writes are refused; undefined: for good. */
  until?: number;
  /** Said to every refused writer, after READ_ONLY_MARK. */
  reason: string;
}

function sqlText(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

export interface FenceTables {
  /**
   * CREATE TABLE IF NOT EXISTS statements of every table a writer could create in the file
   * (both fleets), run in the fence's transaction: a trigger only guards a table that exists, and
   * a service's first write of the other fleet to a fenced file would otherwise create its tables
   * unguarded.
   */
  ddl: string;
  /** Make the file when it is missing (with `ddl`'s tables), so no writer creates it unguarded. */
  create?: boolean;
}

/** Puts (or replaces) the fence on the file at `path`; a missing file is left alone (false) unless `tables.create`. */
export function fenceShardFile(path: string, fence: WriteFence, busyTimeoutMs = 5000, tables?: FenceTables): boolean {
  if (!existsSync(path) && tables?.create !== true) return false;
  const db = new Database(path, { fileMustExist: tables?.create !== true, timeout: busyTimeoutMs });
  try {
    // What a service's ShardFile.open sets; a no-op on a file it made.
    db.pragma('journal_mode = WAL');
    const message = sqlText(`${READ_ONLY_MARK} ${fence.reason}`);
    // Julian days to unix ms: works on every SQLite version (unixepoch('subsec') needs 3.42).
    const when = fence.until === undefined ? '' : ` WHEN CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) < ${Math.trunc(fence.until)}`;
    // One IMMEDIATE transaction: it waits for a writer in flight, and every write after it is refused.
    db.transaction(() => {
      if (tables !== undefined) db.exec(tables.ddl);
      const names = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").pluck().all() as string[];
      dropTriggers(db);
      for (const t of names) {
        for (const op of ['INSERT', 'UPDATE', 'DELETE']) {
          const name = `${TRIGGER_PREFIX}${op.toLowerCase()}_${t}`;
          db.exec(`CREATE TRIGGER "${name}" BEFORE ${op} ON "${t}"${when} BEGIN SELECT RAISE(ABORT, ${message}); END`);
        }
      }
    }).immediate();
    return true;
  } finally {
    db.close();
  }
}

/** Removes the fence (a migration given up); a missing file is left alone. */
export function unfenceShardFile(path: string, busyTimeoutMs = 5000): void {
  if (!existsSync(path)) return;
  const db = new Database(path, { fileMustExist: true, timeout: busyTimeoutMs });
  try {
    db.transaction(() => dropTriggers(db)).immediate();
  } finally {
    db.close();
  }
}

function dropTriggers(db: Database.Database): void {
  const names = db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE ?").pluck().all(`${TRIGGER_PREFIX}%`) as string[];
  for (const n of names) db.exec(`DROP TRIGGER IF EXISTS "${n}"`);
}

/** Whether a SQLite error is a fence's refusal. */
export function isFenceRefusal(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith(READ_ONLY_MARK);
}
