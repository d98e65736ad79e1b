import mysql from 'mysql2/promise';
import { ShardKitError } from '../../errors.js';
import type { ColumnKind, RawValue, SourceColumn } from './column-kinds.js';
import { cleanQuery, type SourceRead, type TableSource, type UntrackedRows } from './table-source.js';

/** mysql2's column type codes (mysql2/lib/constants/types.js). */
const T = {
  DECIMAL: 0, TINY: 1, SHORT: 2, LONG: 3, FLOAT: 4, DOUBLE: 5, TIMESTAMP: 7, LONGLONG: 8, INT24: 9, DATE: 10,
  DATETIME: 12, YEAR: 13, NEWDATE: 14, BIT: 16, JSON: 245, NEWDECIMAL: 246, GEOMETRY: 255,
  TINY_BLOB: 249, MEDIUM_BLOB: 250, LONG_BLOB: 251, BLOB: 252, VAR_STRING: 253, STRING: 254, VARCHAR: 15,
} as const;
const BINARY_CHARSET = 63;
const STRING_TYPES: ReadonlySet<number> = new Set([T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB, T.BLOB, T.VAR_STRING, T.STRING, T.VARCHAR]);

function kindOf(f: mysql.FieldPacket): ColumnKind {
  const type = f.columnType ?? f.type ?? -1;
  if (f.extendedFormat === 'json') return 'json';
  switch (type) {
    case T.TINY: case T.SHORT: case T.LONG: case T.INT24: case T.YEAR:
      return 'int';
    case T.LONGLONG:
      return 'bigint';
    case T.DECIMAL: case T.NEWDECIMAL:
      return 'decimal';
    case T.FLOAT: case T.DOUBLE:
      return 'float';
    case T.DATETIME:
      return 'datetime';
    case T.TIMESTAMP:
      return 'timestamp';
    case T.DATE: case T.NEWDATE:
      return 'date';
    case T.JSON:
      return 'json';
    case T.BIT: case T.GEOMETRY:
      return 'binary';
    default:
      return STRING_TYPES.has(type) && f.characterSet === BINARY_CHARSET ? 'binary' : 'text';
  }
}

function quote(name: string): string {
  return `\`${name.replace(/`/g, '``')}\``;
}

/** A MariaDB/MySQL source: one connection, session in UTC, every value read as raw bytes. */
export class MysqlTableSource implements TableSource {
  readonly engine = 'mysql' as const;
  private columns: SourceColumn[] = [];
  private binary: boolean[] = [];
  private id = '';
  private changed = '';
  private idInt = false;
  private changedInt = false;

  private constructor(private readonly conn: mysql.Connection, private readonly query: string) {}

  static async open(url: string, query: string): Promise<MysqlTableSource> {
    let conn: mysql.Connection;
    try {
      conn = await mysql.createConnection({ uri: url, connectTimeout: 10_000, supportBigNumbers: true, bigNumberStrings: true, dateStrings: true, multipleStatements: false });
    } catch (err) {
      throw new Error(`cannot connect to the source: ${(err as Error).message}`);
    }
    // TIMESTAMP columns come out in UTC, so their JSON form can say Z.
    await conn.query("SET time_zone = '+00:00'");
    return new MysqlTableSource(conn, cleanQuery(query));
  }

  private get derived(): string {
    return `(${this.query}) AS shardkit_source`;
  }

  async describe(): Promise<SourceColumn[]> {
    let fields: mysql.FieldPacket[];
    try {
      [, fields] = await this.conn.query({ sql: `SELECT * FROM ${this.derived} LIMIT 0`, rowsAsArray: true });
    } catch (err) {
      throw new ShardKitError('INVALID_ARGUMENT', `the source refused the query: ${String((err as Error).message).split('\n')[0]}`);
    }
    this.columns = fields.map((f) => ({ name: f.name, kind: kindOf(f), typeName: f.typeName ?? String(f.columnType) }));
    this.binary = this.columns.map((c) => c.kind === 'binary');
    return this.columns;
  }

  bind(idColumn: string, changedColumn: string): void {
    this.id = quote(idColumn);
    this.changed = quote(changedColumn);
    const integer = (name: string) => ['int', 'bigint'].includes(this.columns.find((c) => c.name === name)?.kind ?? '');
    this.idInt = integer(idColumn);
    this.changedInt = integer(changedColumn);
  }

  /**
   * Values are escaped by the driver (conn.escape) rather than sent as `?` placeholders: mysql2
   * substitutes every `?` of the text, and the operator's query may hold one in a string literal.
   */
  private v(value: string, integer: boolean): string {
    // Integers as literals: an integer column compared with a quoted string compares as DOUBLE,
    // which loses digits above 2^53.
    return integer && /^-?[0-9]{1,20}$/.test(value) ? value : this.conn.escape(value);
  }

  private where(from: string | undefined): string {
    let sql = ` WHERE ${this.id} IS NOT NULL AND ${this.changed} IS NOT NULL`;
    if (from !== undefined) sql += ` AND ${this.changed} >= ${this.v(from, this.changedInt)}`;
    return sql;
  }

  async read(request: SourceRead): Promise<RawValue[][]> {
    let sql = `SELECT * FROM ${this.derived}${this.where(request.from)}`;
    if (request.after) {
      const c = this.v(request.after.changed, this.changedInt);
      sql += ` AND (${this.changed} > ${c} OR (${this.changed} = ${c} AND ${this.id} > ${this.v(request.after.id, this.idInt)}))`;
    }
    sql += ` ORDER BY ${this.changed}, ${this.id} LIMIT ${Math.trunc(request.limit)}`;
    // typeCast false: every value as the server's bytes, converted by row-data.ts.
    const [rows] = await this.conn.query({ sql, rowsAsArray: true, typeCast: false });
    return (rows as Array<Array<Buffer | null>>).map((row) => row.map((v, i) => (v === null ? null : this.binary[i] ? v : v.toString('utf8'))));
  }

  async count(from?: string): Promise<number> {
    const [rows] = await this.conn.query({ sql: `SELECT COUNT(*) AS n FROM ${this.derived}${this.where(from)}` });
    return Number((rows as Array<{ n: string | number }>)[0]!.n);
  }

  async untracked(): Promise<UntrackedRows> {
    const where = ` WHERE ${this.id} IS NULL OR ${this.changed} IS NULL`;
    const [c] = await this.conn.query({ sql: `SELECT COUNT(*) AS n FROM ${this.derived}${where}` });
    const count = Number((c as Array<{ n: string | number }>)[0]!.n);
    if (count === 0) return { count, examples: [] };
    const [rows] = await this.conn.query({ sql: `SELECT CAST(${this.id} AS CHAR) AS i, CAST(${this.changed} AS CHAR) AS c FROM ${this.derived}${where} LIMIT 20` });
    return { count, examples: (rows as Array<{ i: string | null; c: string | null }>).map((r) => `id=${r.i ?? 'NULL'}, changed=${r.c ?? 'NULL'}`) };
  }

  async readOnly(): Promise<{ readOnly: boolean; how: string }> {
    const [rows] = await this.conn.query('SELECT @@GLOBAL.read_only AS ro');
    const ro = Number((rows as Array<{ ro: number | string }>)[0]!.ro) === 1;
    return { readOnly: ro, how: `@@GLOBAL.read_only = ${ro ? 'ON' : 'OFF'}` };
  }

  async close(): Promise<void> {
    await this.conn.end().catch(() => undefined);
  }
}
