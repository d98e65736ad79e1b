import type { Fleet, SchemaDef } from '../shard-backend.js';
import { shardDatabaseName } from '../shard-names.js';

/**
 * Shard n of either fleet is the database `db03429`, as the embedded engine's file `db03429.sqlite`:
 * a server that serves both fleets (the dev cluster puts mod shards on the object pairs) holds
 * both fleets' tables in one database, and table names never collide (src/storage/shard-names.ts,
 * checked by resolveSchema).
 */
export function mysqlDatabaseName(shard: number): string {
  return shardDatabaseName(shard);
}

/** The shard number of one of our database names, or undefined. */
export function parseMysqlDatabaseName(name: string): number | undefined {
  const m = /^db([0-9]{5})$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

// One table definition each, written so that MariaDB 10.11 and MySQL 8 both accept them.
// Identifiers come from the validated schema (config.ts `identifier`), never from requests.
const TABLE_OPTIONS = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin';

/**
 * `ts` keeps milliseconds (TIMESTAMP(3)) so createdAt round-trips like the embedded engine's.
 * AUTO_INCREMENT values are never reused (InnoDB persists the counter), which matters because
 * local_id is part of a public ID.
 */
function objectTable(db: string, table: string): string {
  return `CREATE TABLE IF NOT EXISTS \`${db}\`.\`${table}\` (
  local_id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  data MEDIUMTEXT NOT NULL,
  ts TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ${TABLE_OPTIONS}`;
}

/** Same keys as the embedded engine: the pair is unique, pages are one range scan of by_sequence. */
function mappingTable(db: string, table: string): string {
  return `CREATE TABLE IF NOT EXISTS \`${db}\`.\`${table}\` (
  from_id BIGINT UNSIGNED NOT NULL,
  to_id BIGINT UNSIGNED NOT NULL,
  \`sequence\` BIGINT NOT NULL,
  PRIMARY KEY (from_id, to_id),
  KEY by_sequence (from_id, \`sequence\`, to_id)
) ${TABLE_OPTIONS}`;
}

/**
 * VARBINARY: keys compare byte for byte ('a', 'a ' and 'A' are three keys), as in the embedded
 * engine; 1024 bytes (MAX_LOOKUP_KEY_BYTES, checked before every call) fit an InnoDB key.
 */
function lookupTable(db: string, table: string): string {
  return `CREATE TABLE IF NOT EXISTS \`${db}\`.\`${table}\` (
  \`key\` VARBINARY(1024) NOT NULL PRIMARY KEY,
  \`value\` BIGINT UNSIGNED NOT NULL
) ${TABLE_OPTIONS}`;
}

/** Statements that create the shard's database and its tables (all IF NOT EXISTS); `only` limits the tables. */
export function shardDdl(schema: SchemaDef, fleet: Fleet, shard: number, only?: ReadonlySet<string>): string[] {
  const db = mysqlDatabaseName(shard);
  const want = (t: string) => only === undefined || only.has(t);
  const out = [`CREATE DATABASE IF NOT EXISTS \`${db}\` DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`];
  if (fleet === 'objects') {
    for (const t of schema.types) if (want(t.table)) out.push(objectTable(db, t.table));
    for (const m of schema.mappings) if (want(m.table)) out.push(mappingTable(db, m.table));
  } else {
    for (const k of schema.keyspaces) if (want(k.table)) out.push(lookupTable(db, k.table));
  }
  return out;
}
