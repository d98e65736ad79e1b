import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { sqliteDriver, type SqliteDatabase } from './sqlite-driver.js';

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

/**
 * Puts (or replaces) the fence on the file at `path`; a missing file is left alone (false).
 * `ddl`: CREATE TABLE IF NOT EXISTS statements of the tables a writer could add to the file (the
 * fleets the map places in it), run in the fence's transaction: a trigger only guards a table
 * that exists, and a first write of a fleet the file did not hold yet would otherwise add its
 * tables after the fence, unguarded.
 */
export function fenceShardFile(path: string, fence: WriteFence, busyTimeoutMs = 5000, ddl?: string): boolean {
  if (!existsSync(path)) return false;
  const db = new (sqliteDriver())(path, { fileMustExist: true, timeout: busyTimeoutMs });
  try {
    const message = sqlText(`${READ_ONLY_MARK} ${fence.reason}`);
    // Julian days to unix ms: works on every SQLite version (unixepoch('subsec') needs 3.42).
    const when = fence.until === undefined ? '' : ` WHEN CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) < ${Math.trunc(fence.until)}`;
    // One IMMEDIATE transaction: it waits for a writer in flight, and every write after it is refused.
    db.transaction(() => {
      if (ddl !== undefined && ddl !== '') db.exec(ddl);
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
  const db = new (sqliteDriver())(path, { fileMustExist: true, timeout: busyTimeoutMs });
  try {
    db.transaction(() => dropTriggers(db)).immediate();
  } finally {
    db.close();
  }
}

function dropTriggers(db: SqliteDatabase): void {
  const names = db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE ?").pluck().all(`${TRIGGER_PREFIX}%`) as string[];
  for (const n of names) db.exec(`DROP TRIGGER IF EXISTS "${n}"`);
}

/** Whether a SQLite error is a fence's refusal. */
export function isFenceRefusal(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith(READ_ONLY_MARK);
}

/** Beside the shard files of a host: the fence on making new ones (not a shard file: FILE does not match it). */
export const CREATION_FENCE_FILE = 'shardkit-creation-fence.sqlite';

function openCreationFence(dir: string, busyTimeoutMs: number): SqliteDatabase {
  const db = new (sqliteDriver())(join(dir, CREATION_FENCE_FILE), { timeout: busyTimeoutMs });
  try {
    db.exec('CREATE TABLE IF NOT EXISTS fence (until INTEGER, reason TEXT NOT NULL)');
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/**
 * The lock a process holds while it makes a shard file in a host directory, and the migration
 * fence on making them: triggers guard only files that exist, so without it a first write to a
 * shard with no file would make the file after the cutover's fence, unguarded (issue 26). Making
 * a file and putting the fence are IMMEDIATE transactions on one small SQLite file per host, so a
 * file made before the fence commits is there for the migrator to fence when it lists the files
 * next, and none is made after.
 */
export class CreationFence {
  private db: SqliteDatabase | undefined;

  constructor(private readonly dir: string, private readonly busyTimeoutMs = 5000) {}

  /** Runs `make` (which makes a shard file) under the lock, or refuses (READ_ONLY_MARK) while a fence is up. */
  make<T>(make: () => T): T {
    this.db ??= openCreationFence(this.dir, this.busyTimeoutMs);
    const db = this.db;
    return db.transaction(() => {
      const row = db.prepare('SELECT until, reason FROM fence').get() as { until: number | null; reason: string } | undefined;
      if (row !== undefined && (row.until === null || Date.now() < row.until)) {
        throw new (sqliteDriver().SqliteError)(`${READ_ONLY_MARK} ${row.reason}`, 'SQLITE_CONSTRAINT_TRIGGER');
      }
      return make();
    }).immediate();
  }

  close(): void {
    this.db?.close();
    this.db = undefined;
  }
}

/** Puts (or replaces) the fence on making shard files in `dir` (which must exist). */
export function fenceShardCreation(dir: string, fence: WriteFence, busyTimeoutMs = 5000): void {
  const db = openCreationFence(dir, busyTimeoutMs);
  try {
    db.transaction(() => {
      db.prepare('DELETE FROM fence').run();
      db.prepare('INSERT INTO fence (until, reason) VALUES (?, ?)').run(fence.until === undefined ? null : Math.trunc(fence.until), fence.reason);
    }).immediate();
  } finally {
    db.close();
  }
}
