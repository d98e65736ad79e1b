import { parseId } from '../../ids/codec.js';
import { ShardKitError } from '../../errors.js';
import type {
  BackendCapabilities,
  Fleet,
  MappingItem,
  MappingPage,
  MappingRow,
  MappingScan,
  ObjectKey,
  SchemaDef,
  ShardBackend,
  ShardRef,
  ObjectRecord,
} from '../shard-backend.js';
import { checkFleet, checkHost, checkLimit, checkLocalId, checkLookupKey, checkPairs, checkRef, checkScan, checkSequence, checkStoredId, checkText } from '../backend-args.js';
import { fleetTables } from '../shard-names.js';
import { HostPools, SchemaTables, sequencesInOrder, toMappingRow, type MappingRowText, type TableKind } from '../server-hosts.js';
import { mysqlDatabaseName, parseMysqlDatabaseName, shardDdl } from './mysql-ddl.js';
import { mapMysqlError } from './mysql-errors.js';
import { MysqlHostPool, type MysqlHostOptions, type SqlValue } from './mysql-host-pool.js';

/** Connection settings shared by every host (config `storage` when backend is mysql). */
export interface MysqlStorageOptions {
  user?: string;
  password?: string;
  poolSize?: number;
  connectTimeoutMs?: number;
  queryTimeoutMs?: number;
}

/** One server as declared in config `hosts`. */
export interface MysqlHostAddress {
  host?: string;
  port?: number;
  socket?: string;
  user?: string;
  password?: string;
}

export interface MysqlBackendOptions {
  hosts: Record<string, MysqlHostAddress>;
  storage?: MysqlStorageOptions;
  schema: SchemaDef;
}

interface ObjectRow {
  local_id: string;
  data: string;
  ts: string;
}

const q = (identifier: string) => `\`${identifier}\``;

function toStored(row: ObjectRow): ObjectRecord {
  return { localId: Number(row.local_id), data: row.data, createdAt: new Date(Math.round(Number(row.ts) * 1000)) };
}

/**
 * Logical shards as databases on MySQL/MariaDB servers: one pool per host, one round trip per
 * call (getObjects uses UNION ALL across tables), updates under SELECT ... FOR UPDATE.
 */
export class MysqlBackend implements ShardBackend {
  readonly kind = 'mysql';
  readonly supports: BackendCapabilities = { lazyShardCreation: false };
  private readonly pools: HostPools<MysqlHostPool, MysqlHostAddress>;
  private readonly storage: Required<Omit<MysqlStorageOptions, 'password'>> & { password?: string };
  private tables!: SchemaTables;
  private closed = false;

  constructor(options: MysqlBackendOptions) {
    this.pools = new HostPools(options.hosts, (host, address) => this.newPool(host, address));
    this.setSchema(options.schema);
    this.storage = {
      user: options.storage?.user ?? 'root',
      poolSize: options.storage?.poolSize ?? 10,
      connectTimeoutMs: options.storage?.connectTimeoutMs ?? 2000,
      queryTimeoutMs: options.storage?.queryTimeoutMs ?? 5000,
      ...(options.storage?.password !== undefined ? { password: options.storage.password } : {}),
    };
  }

  /** Later createShard calls use this schema (schema apply). */
  setSchema(schema: SchemaDef): void {
    this.tables = new SchemaTables(schema);
  }

  private get schema(): SchemaDef {
    return this.tables.schema;
  }

  /** Refuses a table outside the schema or on the wrong fleet: names reach SQL only from here. */
  private table(kind: TableKind, ref: ShardRef, table: string): string {
    this.tables.check(kind, ref, table);
    this.open();
    return `${q(mysqlDatabaseName(ref.shard))}.${q(table)}`;
  }

  private open(): void {
    if (this.closed) throw new ShardKitError('CLOSED', 'the MySQL backend is closed');
  }

  /** Round trips sent to each host since creation (benchmarks, tests). */
  roundTrips(): Record<string, number> {
    return this.pools.roundTrips();
  }

  /** Per host: round trips and the most statements in flight at once since the last reset. */
  hostStats(options: { reset?: boolean } = {}): Record<string, { queries: number; maxInFlight: number }> {
    return this.pools.stats(options);
  }

  private pool(host: string): MysqlHostPool {
    this.open();
    return this.pools.get(host);
  }

  private newPool(host: string, address: MysqlHostAddress): MysqlHostPool {
    const options: MysqlHostOptions = {
      ...(address.host !== undefined ? { host: address.host } : {}),
      ...(address.port !== undefined ? { port: address.port } : {}),
      ...(address.socket !== undefined ? { socket: address.socket } : {}),
      user: address.user ?? this.storage.user,
      ...(address.password ?? this.storage.password) !== undefined ? { password: (address.password ?? this.storage.password)! } : {},
      poolSize: this.storage.poolSize,
      connectTimeoutMs: this.storage.connectTimeoutMs,
      queryTimeoutMs: this.storage.queryTimeoutMs,
    };
    return new MysqlHostPool(host, options);
  }

  private async query<T>(ref: ShardRef | { host: string }, sql: string, values?: SqlValue[]): Promise<T> {
    this.open();
    try {
      return await this.pool(ref.host).query<T>(sql, values);
    } catch (err) {
      throw mapMysqlError(err, ref);
    }
  }

  /** Creates the database (when missing) and every missing table of the fleet: CREATE ... IF NOT EXISTS only. */
  async createShard(ref: ShardRef): Promise<void> {
    checkRef(ref);
    this.open();
    for (const sql of shardDdl(this.schema, ref.fleet, ref.shard)) await this.query(ref, sql);
  }

  /**
   * Drops the fleet's tables; the database goes too once no table of the other fleet is left
   * (a host serving both fleets keeps db00005 for the objects when its lookups are dropped).
   */
  async dropShard(ref: ShardRef): Promise<void> {
    checkRef(ref);
    this.open();
    const db = mysqlDatabaseName(ref.shard);
    const other: Fleet = ref.fleet === 'objects' ? 'lookups' : 'objects';
    const present = (await this.tablesOnHost(ref.host, ref.shard)).get(ref.shard) ?? new Set<string>();
    const keep = fleetTables(this.schema, other).some((t) => present.has(t));
    if (!keep) {
      await this.query(ref, `DROP DATABASE IF EXISTS ${q(db)}`);
      return;
    }
    const mine = fleetTables(this.schema, ref.fleet).filter((t) => present.has(t));
    if (mine.length > 0) await this.query(ref, `DROP TABLE IF EXISTS ${mine.map((t) => `${q(db)}.${q(t)}`).join(', ')}`);
  }

  /** Shards whose database holds every table of the current schema for that fleet, ascending. */
  async listShards(host: string, fleet: Fleet): Promise<number[]> {
    checkHost(host);
    checkFleet(fleet);
    this.open();
    const tables = await this.tablesOnHost(host);
    const want = fleetTables(this.schema, fleet);
    const out: number[] = [];
    if (want.length === 0) return out;
    for (const [shard, have] of tables) if (want.every((t) => have.has(t))) out.push(shard);
    return out.sort((a, b) => a - b);
  }

  /** Every shard database on `host` (or just `onlyShard`'s) with the tables it holds, in one query. */
  async tablesOnHost(host: string, onlyShard?: number): Promise<Map<number, Set<string>>> {
    const rows = await this.query<Array<{ db: string; t: string | null }>>(
      { host },
      `SELECT s.SCHEMA_NAME AS db, t.TABLE_NAME AS t FROM information_schema.SCHEMATA s
       LEFT JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = s.SCHEMA_NAME
       WHERE s.SCHEMA_NAME LIKE ?`,
      [onlyShard === undefined ? 'db%' : mysqlDatabaseName(onlyShard)],
    );
    const out = new Map<number, Set<string>>();
    for (const r of rows) {
      const shard = parseMysqlDatabaseName(r.db);
      if (shard === undefined) continue;
      let set = out.get(shard);
      if (!set) out.set(shard, (set = new Set()));
      if (r.t !== null) set.add(r.t);
    }
    return out;
  }

  async insertObject(ref: ShardRef, table: string, data: string): Promise<ObjectRecord> {
    const t = this.table('types', ref, table);
    checkText(data);
    const now = Date.now();
    const res = await this.query<{ insertId: number | string }>(ref, `INSERT INTO ${t} (data, ts) VALUES (?, FROM_UNIXTIME(?))`, [data, now / 1000]);
    return { localId: Number(res.insertId), data, createdAt: new Date(now) };
  }

  async getObjects(ref: ShardRef, keys: ObjectKey[]): Promise<(ObjectRecord | undefined)[]> {
    checkRef(ref);
    this.open();
    if (keys.length === 0) return [];
    const byTable = new Map<string, number[]>();
    for (const k of keys) {
      this.table('types', ref, k.table);
      checkLocalId(k.localId);
      let ids = byTable.get(k.table);
      if (!ids) byTable.set(k.table, (ids = []));
      ids.push(k.localId);
    }
    const tables = [...byTable.keys()];
    const values: SqlValue[] = [];
    // One round trip for the whole shard: one SELECT per table, glued with UNION ALL.
    const parts = tables.map((t, i) => {
      const ids = [...new Set(byTable.get(t)!)];
      values.push(...ids);
      return `SELECT ${i} AS tbl, local_id, data, UNIX_TIMESTAMP(ts) AS ts FROM ${this.table('types', ref, t)} WHERE local_id IN (${ids.map(() => '?').join(',')})`;
    });
    const rows = await this.query<Array<ObjectRow & { tbl: number | string }>>(ref, parts.join(' UNION ALL '), values);
    const found = new Map<string, ObjectRecord>();
    for (const r of rows) found.set(`${tables[Number(r.tbl)]}\u0000${r.local_id}`, toStored(r));
    return keys.map((k) => found.get(`${k.table}\u0000${k.localId}`));
  }

  async updateObject(ref: ShardRef, table: string, localId: number, fn: (data: string) => string | undefined): Promise<ObjectRecord | undefined> {
    const t = this.table('types', ref, table);
    checkLocalId(localId);
    // An error thrown by fn rolls back and reaches the caller unchanged.
    let fnError: { error: unknown } | undefined;
    try {
      return await this.pool(ref.host).transaction(async (run) => {
        const rows = await run<ObjectRow[]>(`SELECT local_id, data, UNIX_TIMESTAMP(ts) AS ts FROM ${t} WHERE local_id = ? FOR UPDATE`, [localId]);
        const row = rows[0];
        if (!row) return undefined;
        const current = toStored(row);
        let next: string | undefined;
        try {
          next = fn(current.data);
        } catch (error) {
          fnError = { error };
          throw error;
        }
        if (next === undefined || next === current.data) return current;
        checkText(next);
        await run(`UPDATE ${t} SET data = ? WHERE local_id = ?`, [next, localId]);
        return { ...current, data: next };
      });
    } catch (err) {
      if (fnError && err === fnError.error) throw err;
      throw mapMysqlError(err, ref);
    }
  }

  async deleteObject(ref: ShardRef, table: string, localId: number): Promise<boolean> {
    const t = this.table('types', ref, table);
    checkLocalId(localId);
    const res = await this.query<{ affectedRows: number }>(ref, `DELETE FROM ${t} WHERE local_id = ?`, [localId]);
    return res.affectedRows > 0;
  }

  async addMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint, sequence: number): Promise<void> {
    const t = this.table('mappings', ref, table);
    checkStoredId(fromId, 'from id');
    checkStoredId(toId, 'to id');
    checkSequence(sequence);
    // VALUES(col) is accepted by MariaDB and MySQL 8 (deprecated there, not removed).
    await this.query(ref, `INSERT INTO ${t} (from_id, to_id, \`sequence\`) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE \`sequence\` = VALUES(\`sequence\`)`, [fromId, toId, sequence]);
  }

  async listMappings(ref: ShardRef, table: string, fromId: bigint, page: MappingPage): Promise<MappingItem[]> {
    const t = this.table('mappings', ref, table);
    checkStoredId(fromId, 'from id');
    checkLimit(page.limit);
    if (page.after) {
      checkSequence(page.after.sequence);
      checkStoredId(page.after.toId, 'after.toId');
    }
    const desc = page.order === 'desc';
    const cmp = desc ? '<' : '>';
    const dir = desc ? 'DESC' : 'ASC';
    const values: SqlValue[] = [fromId];
    let where = 'from_id = ?';
    if (page.after) {
      // Keyset paging written as OR (not a row constructor) so both servers use the by_sequence range.
      where += ` AND (\`sequence\` ${cmp} ? OR (\`sequence\` = ? AND to_id ${cmp} ?))`;
      values.push(page.after.sequence, page.after.sequence, page.after.toId);
    }
    values.push(page.limit);
    const rows = await this.query<Array<{ to_id: string; sequence: string }>>(
      ref,
      `SELECT to_id, \`sequence\` FROM ${t} WHERE ${where} ORDER BY \`sequence\` ${dir}, to_id ${dir} LIMIT ?`,
      values,
    );
    return rows.map((r) => ({ toId: parseId(r.to_id), sequence: Number(r.sequence) }));
  }

  async removeMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint): Promise<boolean> {
    const t = this.table('mappings', ref, table);
    checkStoredId(fromId, 'from id');
    checkStoredId(toId, 'to id');
    const res = await this.query<{ affectedRows: number }>(ref, `DELETE FROM ${t} WHERE from_id = ? AND to_id = ?`, [fromId, toId]);
    return res.affectedRows > 0;
  }

  async scanMappings(ref: ShardRef, table: string, page: MappingScan): Promise<MappingRow[]> {
    const t = this.table('mappings', ref, table);
    checkScan(page);
    const values: SqlValue[] = [];
    let where = '';
    if (page.after !== undefined) {
      // Written as OR (not a row constructor) so both servers range-scan the primary key.
      where = 'WHERE from_id > ? OR (from_id = ? AND to_id > ?)';
      values.push(page.after.fromId, page.after.fromId, page.after.toId);
    }
    values.push(page.limit);
    const rows = await this.query<MappingRowText[]>(
      ref,
      `SELECT from_id, to_id, \`sequence\` FROM ${t} ${where} ORDER BY from_id, to_id LIMIT ?`,
      values,
    );
    return rows.map(toMappingRow);
  }

  async getMappings(ref: ShardRef, table: string, pairs: ReadonlyArray<{ fromId: bigint; toId: bigint }>): Promise<(number | undefined)[]> {
    const t = this.table('mappings', ref, table);
    checkPairs(pairs);
    if (pairs.length === 0) return [];
    // One statement: a row-constructor IN list, which both servers resolve through the primary key.
    const rows = await this.query<MappingRowText[]>(
      ref,
      `SELECT from_id, to_id, \`sequence\` FROM ${t} WHERE (from_id, to_id) IN (${pairs.map(() => '(?, ?)').join(', ')})`,
      pairs.flatMap((p) => [p.fromId, p.toId]),
    );
    return sequencesInOrder(rows, pairs);
  }

  async countMappings(ref: ShardRef, table: string, fromId: bigint): Promise<number> {
    const t = this.table('mappings', ref, table);
    checkStoredId(fromId, 'from id');
    const rows = await this.query<Array<{ n: string | number }>>(ref, `SELECT COUNT(*) AS n FROM ${t} WHERE from_id = ?`, [fromId]);
    return Number(rows[0]?.n ?? 0);
  }

  async putLookup(ref: ShardRef, table: string, key: string, value: bigint): Promise<void> {
    const t = this.table('keyspaces', ref, table);
    checkLookupKey(key);
    checkStoredId(value, 'lookup value');
    await this.query(ref, `INSERT INTO ${t} (\`key\`, \`value\`) VALUES (?, ?) ON DUPLICATE KEY UPDATE \`value\` = VALUES(\`value\`)`, [Buffer.from(key, 'utf8'), value]);
  }

  async getLookup(ref: ShardRef, table: string, key: string): Promise<bigint | undefined> {
    const t = this.table('keyspaces', ref, table);
    checkLookupKey(key);
    const rows = await this.query<Array<{ value: string }>>(ref, `SELECT \`value\` FROM ${t} WHERE \`key\` = ?`, [Buffer.from(key, 'utf8')]);
    return rows[0] ? parseId(rows[0].value) : undefined;
  }

  async deleteLookup(ref: ShardRef, table: string, key: string): Promise<boolean> {
    const t = this.table('keyspaces', ref, table);
    checkLookupKey(key);
    const res = await this.query<{ affectedRows: number }>(ref, `DELETE FROM ${t} WHERE \`key\` = ?`, [Buffer.from(key, 'utf8')]);
    return res.affectedRows > 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pools.closeAll();
  }
}
