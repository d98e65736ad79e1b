import type { Fleet, SchemaDef } from './shard-backend.js';

/**
 * The names a schema creates inside one shard. A host that serves both fleets (the dev cluster
 * puts mod shards on the object pairs) keeps both fleets' tables in the shard's one database
 * (`db03429` on MySQL) or file (`db03429.sqlite`), and SQLite indexes share the tables'
 * namespace, so all of these must differ (config.ts refuses a schema where two coincide).
 */

/** Database (MySQL), schema (PostgreSQL) or file (SQLite) name of logical shard n: `db03429` (SPEC §2). */
export function shardDatabaseName(shard: number, prefix = 'db'): string {
  return `${prefix}${String(shard).padStart(5, '0')}`;
}

/** Where a shard move's fence sets a shard's tables aside on its source (a database or schema): `db00005_moved`. */
export function movedShardName(shard: number): string {
  return `${shardDatabaseName(shard)}_moved`;
}

/** Tables of one fleet: objects and mappings on the object fleet, keyspaces on the lookup fleet. */
export function fleetTables(schema: SchemaDef, fleet: Fleet): string[] {
  return fleet === 'objects'
    ? [...schema.types.map((t) => t.table), ...schema.mappings.map((m) => m.table)]
    : schema.keyspaces.map((k) => k.table);
}

/** The page index of a mapping table: per table on MySQL, but a file-wide name on SQLite. */
export function mappingIndexName(table: string): string {
  return `${table}_by_sequence`;
}

/** The sequence each PostgreSQL object shard keeps for db00005.next_id() (storage/postgres/instagram-next-id.ts). */
export const NEXT_ID_STATE = 'next_id_state';
/** Its counter sequence, beside the state (same file). */
export const NEXT_ID_COUNTER = 'next_id_counter';

/** SQLite refuses tables whose names start with this ("reserved for internal use"). */
export const RESERVED_TABLE_PREFIX = 'sqlite_';

/** Every name the schema puts in a shard, each with the schema entity that puts it there. */
export function shardNames(schema: SchemaDef): Array<{ name: string; kind: 'table' | 'index' | 'sequence'; owner: string }> {
  return [
    // PostgreSQL: the Instagram ID generator's state, a relation beside the tables of each object shard.
    { name: NEXT_ID_STATE, kind: 'sequence' as const, owner: 'the Instagram ID generator\'s state sequence' },
    { name: NEXT_ID_COUNTER, kind: 'sequence' as const, owner: 'the Instagram ID generator\'s counter sequence' },
    ...schema.types.map((t) => ({ name: t.table, kind: 'table' as const, owner: `type ${t.name}` })),
    ...schema.mappings.map((m) => ({ name: m.table, kind: 'table' as const, owner: `mapping ${m.name}` })),
    ...schema.keyspaces.map((k) => ({ name: k.table, kind: 'table' as const, owner: `keyspace ${k.name}` })),
    ...schema.mappings.map((m) => ({ name: mappingIndexName(m.table), kind: 'index' as const, owner: `the page index of mapping ${m.name}` })),
  ];
}
