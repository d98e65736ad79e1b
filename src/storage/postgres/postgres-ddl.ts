import type { Fleet, SchemaDef } from '../shard-backend.js';
import { mappingIndexName } from '../shard-names.js';
import { shardDatabaseName } from '../shard-names.js';

/**
 * Shard n of either fleet is the schema `db03429` inside the configured database: the name of the
 * MySQL database and of the embedded engine's file, so a host serving both fleets keeps both
 * fleets' tables in one schema (table and index names never collide, src/storage/shard-names.ts).
 */
export function postgresSchemaName(shard: number): string {
  return shardDatabaseName(shard);
}

/** The shard number of one of our schema names, or undefined. */
export function parsePostgresSchemaName(name: string): number | undefined {
  const m = /^db([0-9]{5})$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/**
 * Identifiers come from the validated config, and are still quoted: a table named like a
 * keyword (`user`, `order`) or with upper case must keep working. pg.escapeIdentifier's rule,
 * written out so that building DDL does not load the optional driver.
 */
export const qi = (identifier: string): string => `"${identifier.replace(/"/g, '""')}"`;

/** `"db03429"."pins"` */
export function qualified(shard: number, table: string): string {
  return `${qi(postgresSchemaName(shard))}.${qi(table)}`;
}

/**
 * An identity column hands out values from a sequence, which never goes back: a deleted row's
 * local id is never reused (it is part of a public ID). `ts` is unix ms, as on SQLite.
 */
function objectTable(shard: number, table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${qualified(shard, table)} (
  local_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  data TEXT NOT NULL,
  ts BIGINT NOT NULL
)`;
}

/** Same keys as the other engines: the pair is unique, pages are one range scan of the sequence index. */
function mappingTable(shard: number, table: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${qualified(shard, table)} (
  from_id BIGINT NOT NULL,
  to_id BIGINT NOT NULL,
  "sequence" BIGINT NOT NULL,
  PRIMARY KEY (from_id, to_id)
)`,
    `CREATE INDEX IF NOT EXISTS ${qi(mappingIndexName(table))} ON ${qualified(shard, table)} (from_id, "sequence", to_id)`,
  ];
}

/**
 * BYTEA keys compare byte for byte ('a', 'a ' and 'A' are three keys) whatever the database's
 * collation, and hold NUL, which TEXT refuses. 1024 bytes (checked before every call) fit a btree.
 */
function lookupTable(shard: number, table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${qualified(shard, table)} (
  "key" BYTEA NOT NULL PRIMARY KEY,
  "value" BIGINT NOT NULL
)`;
}

/** Statements that create the shard's schema and its fleet's tables (all IF NOT EXISTS). */
export function shardDdl(schema: SchemaDef, fleet: Fleet, shard: number): string[] {
  const out = [`CREATE SCHEMA IF NOT EXISTS ${qi(postgresSchemaName(shard))}`];
  if (fleet === 'objects') {
    for (const t of schema.types) out.push(objectTable(shard, t.table));
    for (const m of schema.mappings) out.push(...mappingTable(shard, m.table));
  } else {
    for (const k of schema.keyspaces) out.push(lookupTable(shard, k.table));
  }
  return out;
}
