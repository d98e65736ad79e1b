import type { SqlDialect, SqlResult, SqlValue, Statement } from '../sql/sql-dialect.js';
import { mysqlDatabaseName, parseMysqlDatabaseName, shardDdl } from './mysql-ddl.js';
import { mapMysqlError } from './mysql-errors.js';
import { movedShardName } from '../shard-names.js';

const q = (identifier: string) => `\`${identifier}\``;

/** What MySQL and MariaDB say differently; the flow is src/storage/sql/sql-backend.ts. */
export const mysqlDialect: SqlDialect = {
  label: 'MySQL',
  table: (shard, table) => `${q(mysqlDatabaseName(shard))}.${q(table)}`,
  column: q,
  param: () => '?',
  // TIMESTAMP(3) read as unix seconds with a fraction (sessions run in UTC, see mysql-host-pool.ts).
  tsColumn: 'UNIX_TIMESTAMP(ts)',
  toDate: (ts) => new Date(Math.round(Number(ts) * 1000)),
  insertObject: (table, data, now) => ({ sql: `INSERT INTO ${table} (data, ts) VALUES (?, FROM_UNIXTIME(?))`, values: [data, now / 1000] }),
  insertedId: (res: SqlResult<Record<string, unknown>>) => Number(res.insertId),
  idsIn: (ids) => ({ sql: `local_id IN (${ids.map(() => '?').join(',')})`, values: ids }),
  // VALUES(col) is accepted by MariaDB and MySQL 8 (deprecated there, not removed).
  upsert: (table, columns, _key, update) =>
    `INSERT INTO ${table} (${columns.map(q).join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) ON DUPLICATE KEY UPDATE ${q(update)} = VALUES(${q(update)})`,
  // Written as OR (not a row constructor) so both servers range-scan the index.
  keysetAfter: (a, b, _first, desc, [x, y]): Statement => {
    const cmp = desc ? '<' : '>';
    return { sql: `(${a} ${cmp} ? OR (${a} = ? AND ${b} ${cmp} ?))`, values: [x, x, y] };
  },
  // One statement: a row-constructor IN list, which both servers resolve through the primary key.
  getMappings: (table, pairs) => ({
    sql: `SELECT from_id, to_id, \`sequence\` FROM ${table} WHERE (from_id, to_id) IN (${pairs.map(() => '(?, ?)').join(', ')})`,
    values: pairs.flatMap((p): SqlValue[] => [p.fromId, p.toId]),
  }),
  shardTables: (onlyShard) => ({
    sql: `SELECT s.SCHEMA_NAME AS db, t.TABLE_NAME AS t FROM information_schema.SCHEMATA s
       LEFT JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = s.SCHEMA_NAME
       WHERE s.SCHEMA_NAME LIKE ?`,
    values: [onlyShard === undefined ? 'db%' : mysqlDatabaseName(onlyShard)],
  }),
  parseShardName: parseMysqlDatabaseName,
  // DDL is not transactional on MySQL: each statement is IF NOT EXISTS and safe to run again.
  createShard: (schema, ref) => shardDdl(schema, ref.fleet, ref.shard),
  dropDatabase: (shard) => `DROP DATABASE IF EXISTS ${q(mysqlDatabaseName(shard))}`,
  afterDropTables: () => [],
  upsertRows: (table, columns, _key, update, rowCount) => {
    const row = `(${columns.map(() => '?').join(', ')})`;
    return `INSERT INTO ${table} (${columns.map(q).join(', ')}) VALUES ${Array(rowCount).fill(row).join(', ')} ON DUPLICATE KEY UPDATE ${update.map((c) => `${q(c)} = VALUES(${q(c)})`).join(', ')}`;
  },
  // An explicit local_id above the AUTO_INCREMENT counter moves the counter (InnoDB does it).
  putObjectRows: (table, rows) => ({
    sql: `INSERT INTO ${table} (local_id, data, ts) VALUES ${rows.map(() => '(?, ?, FROM_UNIXTIME(?))').join(', ')} ON DUPLICATE KEY UPDATE data = VALUES(data), ts = VALUES(ts)`,
    values: rows.flatMap((r): SqlValue[] => [r.localId, r.data, r.createdAt.getTime() / 1000]),
  }),
  // AUTO_INCREMENT is the next id; MariaDB reads InnoDB's live counter here.
  idHighWater: (shard, table) => ({
    sql: 'SELECT AUTO_INCREMENT - 1 AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?',
    values: [mysqlDatabaseName(shard), table],
  }),
  raiseIdHighWater: (shard, table, highWater) => ({ sql: `ALTER TABLE ${q(mysqlDatabaseName(shard))}.${q(table)} AUTO_INCREMENT = ${Math.trunc(highWater) + 1}`, values: [] }),
  mapError: mapMysqlError,
  fencedAside: (shard) => ({ sql: 'SELECT 1 AS n FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', values: [movedShardName(shard)] }),
};
