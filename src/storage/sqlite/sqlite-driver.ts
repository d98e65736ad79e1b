import type Database from 'better-sqlite3';
import { requireOptional } from '../../util/optional-dependency.js';

export type SqliteDatabase = Database.Database;
export type SqliteStatement = Database.Statement;

/**
 * better-sqlite3, loaded when the first shard file opens rather than when the module is imported:
 * `import 'shardkit/kit'` stays light for an app that passes its own backend or only reads IDs.
 */
export function sqliteDriver(): typeof Database {
  return requireOptional<typeof Database>('better-sqlite3', 'the embedded SQLite backend');
}
