import type { MappingRow, ObjectRecord, SchemaDef, ShardRef } from '../shard-backend.js';
import type { ErrorContext } from './error-context.js';
import type { CountingPool } from './host-pools.js';

/** What a statement returns, whatever the driver: rows (for SELECT / RETURNING) and rows affected. */
export interface SqlResult<R> {
  rows: R[];
  affected: number;
  /** AUTO_INCREMENT of an INSERT, on engines that report it. */
  insertId?: number | string;
}

export type SqlValue = string | number | bigint | null | Buffer | number[] | string[];
export type SqlRun = <R = Record<string, unknown>>(sql: string, values?: SqlValue[]) => Promise<SqlResult<R>>;

/** One server's connection pool, as the SQL core uses it. Each dialect folder has one (mysql2, pg). */
export interface SqlHostPool extends CountingPool {
  /** One statement on a pooled connection. */
  execute<R = Record<string, unknown>>(sql: string, values?: SqlValue[]): Promise<SqlResult<R>>;
  /** `fn` inside BEGIN ... COMMIT on one connection; ROLLBACK when it throws. */
  transaction<T>(fn: (run: SqlRun) => Promise<T>): Promise<T>;
}

/** A statement and its parameters. */
export interface Statement {
  sql: string;
  values: SqlValue[];
}

/** An object row as both servers return it: 64-bit columns as decimal strings. */
export interface ObjectRowText {
  local_id: string;
  data: string;
  ts: string | number;
}

export type { ErrorContext };

/**
 * What differs between SQL servers, and nothing else: quoting and placeholders, the statements
 * that are not plain SQL (upserts, id lists, keyset comparisons, the catalog query), how `ts` is
 * stored, DDL, and the mapping of native errors. The flow (grouping by host, transactions,
 * read-modify-write, paging, error translation) is written once in sql-backend.ts.
 */
export interface SqlDialect {
  /** "MySQL", "PostgreSQL": for messages. */
  readonly label: string;
  /** `db00005`.`pins` / "db00005"."pins": identifiers come from validated config and are still quoted. */
  table(shard: number, table: string): string;
  /** A quoted column name. */
  column(name: string): string;
  /** The placeholder of the n-th value (1-based): `?` or `$n`. */
  param(n: number): string;
  /** The select-list expression of `ts` that toDate() reads. */
  readonly tsColumn: string;
  toDate(ts: string | number): Date;
  /** INSERT of one object row; the new local id from its result. */
  insertObject(table: string, data: string, now: number): Statement;
  insertedId(result: SqlResult<Record<string, unknown>>): number;
  /** `local_id IN (...)` for `ids`, whose first placeholder is number `first`. */
  idsIn(ids: number[], first: number): Statement;
  /** INSERT ... or update `update` of the row with the same key columns. */
  upsert(table: string, columns: string[], key: string[], update: string): string;
  /** Rows strictly after (a, b) in (a, b) order (`desc`: before), placeholders from `first`. */
  keysetAfter(a: string, b: string, first: number, desc: boolean, values: [SqlValue, SqlValue]): Statement;
  /** The sequences of (from_id, to_id) pairs in one statement. */
  getMappings(table: string, pairs: ReadonlyArray<{ fromId: bigint; toId: bigint }>): Statement;
  /** Every shard database/schema on the host (or one shard's) with its tables: rows { db, t }. */
  shardTables(onlyShard?: number): Statement;
  parseShardName(name: string): number | undefined;
  /** Statements that create the shard of `ref` with every table of its fleet (IF NOT EXISTS). */
  createShard(schema: SchemaDef, ref: ShardRef): string[];
  /** Run createShard's statements in one transaction, first taking this lock (engines with transactional DDL). */
  createLock?(shard: number): Statement;
  dropDatabase(shard: number): string;
  /** Extra statements after dropping one fleet's tables from a shard that keeps the other's. */
  afterDropTables(ref: ShardRef): string[];
  /** INSERT of `rowCount` rows at once, each replacing the `update` columns of the row with the same key. */
  upsertRows(table: string, columns: string[], key: string[], update: string[], rowCount: number): string;
  /** Object rows with their own local id and ts (ShardCopy), replacing rows with the same id. */
  putObjectRows(table: string, rows: ReadonlyArray<ObjectRecord>): Statement;
  /** One row `{ n }`: the last local id the table's counter handed out (0 or null: none). */
  idHighWater(shard: number, table: string): Statement;
  /** Moves the table's counter so the next local id is `highWater + 1` (called only to raise it). */
  raiseIdHighWater(shard: number, table: string, highWater: number): Statement;
  /** The one place native errors become ShardKitErrors. */
  mapError(err: unknown, ctx: ErrorContext): Error;
  /** A row when a move's fence set the shard's tables aside on this host (movedShardName): a missing table there is the fence. */
  fencedAside(shard: number): Statement;
}

export type { MappingRow };
