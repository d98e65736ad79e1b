import pg from 'pg';
import { ShardKitError } from '../../errors.js';
import type { ColumnKind, RawValue, SourceColumn } from './column-kinds.js';
import { cleanQuery, type SourceRead, type TableSource, type UntrackedRows } from './table-source.js';

/** PostgreSQL type OIDs (pg_type) this migration converts specially; the rest is text. */
const KINDS: Record<number, ColumnKind> = {
  16: 'bool', 17: 'binary', 20: 'bigint', 21: 'int', 23: 'int', 26: 'int', 700: 'float', 701: 'float', 1700: 'decimal',
  114: 'json', 3802: 'json', 1082: 'date', 1114: 'datetime', 1184: 'timestamp',
};
const TYPE_NAMES: Record<number, string> = {
  16: 'bool', 17: 'bytea', 20: 'int8', 21: 'int2', 23: 'int4', 26: 'oid', 700: 'float4', 701: 'float8', 1700: 'numeric',
  114: 'json', 3802: 'jsonb', 1082: 'date', 1114: 'timestamp', 1184: 'timestamptz', 25: 'text', 1043: 'varchar',
};

/** Every value as the server's text: row-data.ts converts it by column kind. */
const RAW_TYPES = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

function quote(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** A PostgreSQL source: one client, session in UTC and ISO dates. */
export class PostgresTableSource implements TableSource {
  readonly engine = 'postgres' as const;
  private id = '';
  private changed = '';

  private constructor(private readonly client: pg.Client, private readonly query: string) {}

  static async open(url: string, query: string): Promise<PostgresTableSource> {
    const client = new pg.Client({ connectionString: url, types: RAW_TYPES, connectionTimeoutMillis: 10_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
    } catch (err) {
      await client.end().catch(() => undefined);
      throw new Error(`cannot connect to the source: ${(err as Error).message}`);
    }
    await client.query("SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'");
    return new PostgresTableSource(client, cleanQuery(query));
  }

  private get derived(): string {
    return `(${this.query}) AS shardkit_source`;
  }

  async describe(): Promise<SourceColumn[]> {
    let res: pg.QueryResult;
    try {
      res = await this.client.query({ text: `SELECT * FROM ${this.derived} LIMIT 0`, rowMode: 'array' });
    } catch (err) {
      throw new ShardKitError('INVALID_ARGUMENT', `the source refused the query: ${String((err as Error).message).split('\n')[0]}`);
    }
    return res.fields.map((f) => ({ name: f.name, kind: KINDS[f.dataTypeID] ?? 'text', typeName: TYPE_NAMES[f.dataTypeID] ?? `oid ${f.dataTypeID}` }));
  }

  bind(idColumn: string, changedColumn: string): void {
    this.id = quote(idColumn);
    this.changed = quote(changedColumn);
  }

  private where(from: string | undefined, values: unknown[]): string {
    let sql = ` WHERE ${this.id} IS NOT NULL AND ${this.changed} IS NOT NULL`;
    if (from !== undefined) {
      values.push(from);
      sql += ` AND ${this.changed} >= $${values.length}`;
    }
    return sql;
  }

  async read(request: SourceRead): Promise<RawValue[][]> {
    const values: unknown[] = [];
    let sql = `SELECT * FROM ${this.derived}${this.where(request.from, values)}`;
    if (request.after) {
      values.push(request.after.changed, request.after.id);
      const c = `$${values.length - 1}`;
      sql += ` AND (${this.changed} > ${c} OR (${this.changed} = ${c} AND ${this.id} > $${values.length}))`;
    }
    sql += ` ORDER BY ${this.changed}, ${this.id} LIMIT ${Math.trunc(request.limit)}`;
    const res = await this.client.query({ text: sql, values, rowMode: 'array' });
    return res.rows as RawValue[][];
  }

  async count(from?: string): Promise<number> {
    const values: unknown[] = [];
    const res = await this.client.query(`SELECT COUNT(*) AS n FROM ${this.derived}${this.where(from, values)}`, values);
    return Number((res.rows[0] as { n: string }).n);
  }

  async untracked(): Promise<UntrackedRows> {
    const where = ` WHERE ${this.id} IS NULL OR ${this.changed} IS NULL`;
    const c = await this.client.query(`SELECT COUNT(*) AS n FROM ${this.derived}${where}`);
    const count = Number((c.rows[0] as { n: string }).n);
    if (count === 0) return { count, examples: [] };
    const res = await this.client.query(`SELECT ${this.id}::text AS i, ${this.changed}::text AS c FROM ${this.derived}${where} LIMIT 20`);
    return { count, examples: (res.rows as Array<{ i: string | null; c: string | null }>).map((r) => `id=${r.i ?? 'NULL'}, changed=${r.c ?? 'NULL'}`) };
  }

  async readOnly(): Promise<{ readOnly: boolean; how: string }> {
    // A new session: default_transaction_read_only as set for the database, role or server.
    const res = await this.client.query('SELECT current_setting(\'default_transaction_read_only\') AS ro, pg_is_in_recovery() AS standby');
    const row = res.rows[0] as { ro: string; standby: string };
    const standby = row.standby === 't' || row.standby === 'true';
    const ro = row.ro === 'on';
    return { readOnly: ro || standby, how: standby ? 'the server is a standby (pg_is_in_recovery)' : `default_transaction_read_only = ${row.ro}` };
  }

  async close(): Promise<void> {
    await this.client.end().catch(() => undefined);
  }
}
