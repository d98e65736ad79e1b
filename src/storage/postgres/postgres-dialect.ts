import type { SqlDialect, SqlResult, Statement } from '../sql/sql-dialect.js';
import { dropInstagramNextIdDdl, instagramNextIdDdl } from './instagram-next-id.js';
import { parsePostgresSchemaName, postgresSchemaName, qi, qualified, shardDdl } from './postgres-ddl.js';
import { mapPostgresError } from './postgres-errors.js';
import { movedShardName } from '../shard-names.js';

/** Advisory lock keys for shard creation: one per shard number (both fleets share its schema), far from small numbers apps use. */
const CREATE_LOCK_BASE = 0x5348_0000;

/** What PostgreSQL says differently; the flow is src/storage/sql/sql-backend.ts. */
export const postgresDialect: SqlDialect = {
  label: 'PostgreSQL',
  table: qualified,
  column: qi,
  param: (n) => `$${n}`,
  // `ts` is a BIGINT of unix milliseconds; int8 arrives as a decimal string (exact).
  tsColumn: 'ts',
  toDate: (ts) => new Date(Number(ts)),
  insertObject: (table, data, now) => ({ sql: `INSERT INTO ${table} (data, ts) VALUES ($1, $2) RETURNING local_id`, values: [data, now] }),
  insertedId: (res: SqlResult<Record<string, unknown>>) => Number((res.rows[0] as { local_id: string }).local_id),
  // Each table's ids are one array parameter.
  idsIn: (ids, first) => ({ sql: `local_id = ANY($${first}::bigint[])`, values: [ids] }),
  upsert: (table, columns, key, update) =>
    `INSERT INTO ${table} (${columns.map(qi).join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')}) ON CONFLICT (${key.map(qi).join(', ')}) DO UPDATE SET ${qi(update)} = EXCLUDED.${qi(update)}`,
  // A row comparison: PostgreSQL turns it into one range scan of the matching index.
  keysetAfter: (a, b, first, desc, values): Statement => ({ sql: `(${a}, ${b}) ${desc ? '<' : '>'} ($${first}, $${first + 1})`, values }),
  // One statement whatever the number of pairs: two arrays joined against the primary key.
  getMappings: (table, pairs) => ({
    sql: `SELECT m.from_id, m.to_id, m."sequence" FROM ${table} m JOIN unnest($1::bigint[], $2::bigint[]) AS p(f, x) ON m.from_id = p.f AND m.to_id = p.x`,
    values: [pairs.map((p) => p.fromId.toString()), pairs.map((p) => p.toId.toString())],
  }),
  shardTables: (onlyShard) => ({
    sql: `SELECT n.nspname AS db, c.relname AS t FROM pg_catalog.pg_namespace n
       LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relkind IN ('r', 'p')
       WHERE n.nspname ${onlyShard === undefined ? "~ '^db[0-9]{5}$'" : '= $1'}`,
    values: onlyShard === undefined ? [] : [postgresSchemaName(onlyShard)],
  }),
  parseShardName: parsePostgresSchemaName,
  // An object shard also gets its Instagram ID generator, db00005.next_id() (SPEC §1).
  createShard: (schema, ref) => [...shardDdl(schema, ref.fleet, ref.shard), ...(ref.fleet === 'objects' ? instagramNextIdDdl(ref.shard) : [])],
  // PostgreSQL DDL is transactional: a shard is complete or absent. Two processes creating the
  // same shard at once would race on the catalogs (IF NOT EXISTS is not atomic there), so an
  // advisory lock per shard serializes them.
  createLock: (shard) => ({ sql: 'SELECT pg_advisory_xact_lock($1)', values: [CREATE_LOCK_BASE + shard] }),
  dropDatabase: (shard) => `DROP SCHEMA IF EXISTS ${qi(postgresSchemaName(shard))} CASCADE`,
  afterDropTables: (ref) => (ref.fleet === 'objects' ? dropInstagramNextIdDdl(ref.shard) : []),
  upsertRows: (table, columns, key, update, rowCount) => {
    const rows = Array.from({ length: rowCount }, (_, r) => `(${columns.map((_c, i) => `$${r * columns.length + i + 1}`).join(', ')})`);
    return `INSERT INTO ${table} (${columns.map(qi).join(', ')}) VALUES ${rows.join(', ')} ON CONFLICT (${key.map(qi).join(', ')}) DO UPDATE SET ${update.map((c) => `${qi(c)} = EXCLUDED.${qi(c)}`).join(', ')}`;
  },
  // local_id is GENERATED ALWAYS: an explicit one needs OVERRIDING SYSTEM VALUE, and the identity
  // sequence does not move past it (the copier raises it: raiseIdHighWater).
  putObjectRows: (table, rows) => ({
    sql: `INSERT INTO ${table} (local_id, data, ts) OVERRIDING SYSTEM VALUE SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[]) ON CONFLICT (local_id) DO UPDATE SET data = EXCLUDED.data, ts = EXCLUDED.ts`,
    values: [rows.map((r) => String(r.localId)), rows.map((r) => r.data), rows.map((r) => String(r.createdAt.getTime()))],
  }),
  idHighWater: (shard, table) => ({
    sql: "SELECT pg_sequence_last_value(pg_get_serial_sequence($1, 'local_id')::regclass) AS n",
    values: [qualified(shard, table)],
  }),
  raiseIdHighWater: (shard, table, highWater) => ({
    sql: "SELECT setval(pg_get_serial_sequence($1, 'local_id'), $2)",
    values: [qualified(shard, table), Math.trunc(highWater)],
  }),
  mapError: mapPostgresError,
  fencedAside: (shard) => ({ sql: 'SELECT 1 AS n FROM pg_namespace WHERE nspname = $1', values: [movedShardName(shard)] }),
};
