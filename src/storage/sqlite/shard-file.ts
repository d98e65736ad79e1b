import { closeSync, existsSync, fsyncSync, linkSync, openSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { sqliteDriver, type SqliteDatabase, type SqliteStatement } from './sqlite-driver.js';
import { ShardKitError } from '../../errors.js';
import type { Fleet, SchemaDef } from '../shard-backend.js';
import { fleetTables } from '../shard-names.js';
import { shardDdl } from './sqlite-ddl.js';
import { MOVED_BIT } from './moved-marks.js';

/** `PRAGMA user_version` bits saying which fleets' tables a file holds (a host may serve both). */
const FLEET_BIT: Record<Fleet, number> = { objects: 1, lookups: 2 };

/**
 * `PRAGMA user_version` bit set by a shard move's fence (src/moves/sqlite): the file's tables were
 * renamed aside (MOVED_TABLE_PREFIX) because the shard now lives on another host. A handle that
 * finds it refuses the file (SHARD_MOVED) instead of re-creating empty tables in it.
 */
export { MOVED_BIT, MOVED_TABLE_PREFIX } from './moved-marks.js';

export interface ShardFileOptions {
  busyTimeoutMs: number;
  synchronous: 'normal' | 'full';
}

/** One open shard file: its handle, its prepared statements and which fleets it holds. */
export class ShardFile {
  readonly path: string;
  private readonly db: SqliteDatabase;
  private readonly statements = new Map<string, SqliteStatement>();
  /** Fleets whose tables are known to be complete for the current schema in this handle. */
  private readonly ready = new Set<Fleet>();
  private fleetBits: number;

  private constructor(path: string, db: SqliteDatabase) {
    this.path = path;
    this.db = db;
    this.fleetBits = Number(db.pragma('user_version', { simple: true }));
  }

  /**
   * Opens the file; with `create` a missing file is first written from `template` (the
   * caller has made the directory).
   */
  static open(path: string, create: { template: Buffer } | false, options: ShardFileOptions): ShardFile {
    if (create && !existsSync(path)) placeTemplate(path, create.template, options.synchronous === 'full');
    const db = new (sqliteDriver())(path, { fileMustExist: true, timeout: options.busyTimeoutMs });
    try {
      db.defaultSafeIntegers(true);
      // WAL: readers never block the writer; a commit is one append to the -wal file.
      db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      return new ShardFile(path, db);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** Whether a move fenced this file (read from the file now, not from this handle's cache). */
  movedAway(): boolean {
    return (Number(this.db.pragma('user_version', { simple: true })) & MOVED_BIT) !== 0;
  }

  /**
   * Reads the fleet bits from the file again: another process (a service) may have added a fleet
   * since this handle opened it, and a lister (a migration) must not miss that fleet's tables.
   */
  refreshFleets(): void {
    this.fleetBits = Number(this.db.pragma('user_version', { simple: true }));
  }

  holds(fleet: Fleet): boolean {
    return (this.fleetBits & FLEET_BIT[fleet]) !== 0;
  }

  get otherFleets(): number {
    return this.fleetBits;
  }

  /**
   * Makes sure every table of `fleet` exists (a new type or mapping only adds its table) and marks
   * the file as holding that fleet. Checked once per handle.
   */
  ensure(fleet: Fleet, schema: SchemaDef): void {
    if (this.ready.has(fleet) && this.holds(fleet)) return;
    if ((this.fleetBits & MOVED_BIT) !== 0 || this.movedAway()) throw movedError(this.path);
    const existing = new Set(
      (this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]),
    );
    const missing = new Set(fleetTables(schema, fleet).filter((t) => !existing.has(t)));
    if (missing.size > 0 || !this.holds(fleet)) {
      this.db.transaction(() => {
        // Checked again under the write lock: a fence committed since the check above wins.
        if (this.movedAway()) throw movedError(this.path);
        if (missing.size > 0) this.db.exec(shardDdl(schema, fleet, missing));
        const bits = Number(this.db.pragma('user_version', { simple: true })) | FLEET_BIT[fleet];
        this.db.pragma(`user_version = ${bits}`);
        this.fleetBits = bits;
      }).immediate();
    }
    this.ready.add(fleet);
  }

  /** Drops the tables of `fleet` only (used when the file also holds the other fleet). */
  dropFleet(fleet: Fleet, schema: SchemaDef): void {
    this.db.transaction(() => {
      for (const t of fleetTables(schema, fleet)) this.db.exec(`DROP TABLE IF EXISTS "${t}"`);
      const bits = Number(this.db.pragma('user_version', { simple: true })) & ~FLEET_BIT[fleet];
      this.db.pragma(`user_version = ${bits}`);
      this.fleetBits = bits;
    }).immediate();
    this.ready.delete(fleet);
    this.statements.clear();
  }

  /**
   * Prepared once per handle; SQL text is built only from validated table names. `bigints`:
   * integers come back as BigInt (64-bit ids); object rows (36-bit local ids, ms timestamps) do
   * not need it and read faster without.
   */
  stmt(sql: string, bigints = true, arrays = false): SqliteStatement {
    let s = this.statements.get(sql);
    if (s === undefined) {
      s = this.db.prepare(sql);
      if (!bigints) s.safeIntegers(false);
      // Rows as arrays: no object per row (mapping pages are up to 1001 rows).
      if (arrays) s.raw(true);
      this.statements.set(sql, s);
    }
    return s;
  }

  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  close(): void {
    this.statements.clear();
    if (this.db.open) this.db.close();
  }
}

/** Whether the file at `path` was fenced by a move (read from the file itself, on a short-lived handle). */
export function isMovedFile(path: string): boolean {
  let db: SqliteDatabase | undefined;
  try {
    db = new (sqliteDriver())(path, { readonly: true, fileMustExist: true });
    return (Number(db.pragma('user_version', { simple: true })) & MOVED_BIT) !== 0;
  } catch {
    return false;
  } finally {
    db?.close();
  }
}

export function movedError(path: string, cause?: unknown): ShardKitError {
  return new ShardKitError('SHARD_MOVED', `shard file ${path} was fenced by a shard move: the shard lives on another host now`, cause === undefined ? {} : { cause });
}

/**
 * The image of a new shard file of `fleet`: every table, the fleet bit, and the WAL flags in the
 * header (bytes 18-19 = 2, what `PRAGMA journal_mode = WAL` writes). Writing this image is ~3x
 * cheaper than creating the file through SQLite, whose switch to WAL costs several fsyncs; it
 * matters because a fresh data dir creates thousands of shard files.
 */
export function shardTemplate(schema: SchemaDef, fleet: Fleet): Buffer {
  const db = new (sqliteDriver())(':memory:');
  try {
    db.exec(shardDdl(schema, fleet));
    db.pragma(`user_version = ${FLEET_BIT[fleet]}`);
    const image = db.serialize();
    image[18] = 2;
    image[19] = 2;
    return image;
  } finally {
    db.close();
  }
}

/** Puts a complete file at `path` or leaves the one another process put there first. */
function placeTemplate(path: string, template: Buffer, durable: boolean): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, template);
  try {
    if (durable) syncFile(tmp);
    // link, not rename: never replaces a file created meanwhile by another process.
    linkSync(tmp, path);
    if (durable) syncFile(dirname(path));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(tmp);
  }
}

function syncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
