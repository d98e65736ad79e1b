import { parseId } from '../../ids/codec.js';
import { INSTAGRAM_MAX_SHARD } from '../../ids/instagram-id.js';
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
import { parsePostgresSchemaName, postgresSchemaName, qi, qualified, shardDdl } from './postgres-ddl.js';
import { dropInstagramNextIdDdl, instagramNextIdDdl } from './instagram-next-id.js';
import { mapPostgresError } from './postgres-errors.js';
import { PostgresHostPool, type PostgresHostOptions, type SqlValue } from './postgres-host-pool.js';

/** Connection settings shared by every host (config `storage` when backend is postgres). */
export interface PostgresStorageOptions {
  user?: string;
  password?: string;
  /** The database holding every shard schema on each server. */
  database?: string;
  poolSize?: number;
  connectTimeoutMs?: number;
  queryTimeoutMs?: number;
}

/** One server as declared in config `hosts`. */
export interface PostgresHostAddress {
  host?: string;
  port?: number;
  /** Directory of the server's unix socket. */
  socket?: string;
  user?: string;
  password?: string;
}

export interface PostgresBackendOptions {
  hosts: Record<string, PostgresHostAddress>;
  storage?: PostgresStorageOptions;
  schema: SchemaDef;
}

interface ObjectRow {
  local_id: string;
  data: string;
  ts: string;
}

// int8 columns arrive as decimal strings (pg's default): exact for every 64-bit value.
function toStored(row: ObjectRow): ObjectRecord {
  return { localId: Number(row.local_id), data: row.data, createdAt: new Date(Number(row.ts)) };
}

/** Advisory lock keys for shard creation: one per shard number (both fleets share its schema), far from small numbers apps use. */
const CREATE_LOCK_BASE = 0x5348_0000;
/** Most IDs one nextInstagramIds call hands out. */
export const MAX_IDS_PER_CALL = 10_000;

/**
 * Logical shards as schemas in one database on PostgreSQL servers: one pool per host, one round
 * trip per call (getObjects uses UNION ALL across tables), updates under SELECT ... FOR UPDATE.
 */
export class PostgresBackend implements ShardBackend {
  readonly kind = 'postgres';
  readonly supports: BackendCapabilities = { lazyShardCreation: false };
  private readonly pools: HostPools<PostgresHostPool, PostgresHostAddress>;
  private readonly storage: Required<Omit<PostgresStorageOptions, 'password'>> & { password?: string };
  private tables!: SchemaTables;
  private closed = false;

  constructor(options: PostgresBackendOptions) {
    this.pools = new HostPools(options.hosts, (host, address) => this.newPool(host, address));
    this.setSchema(options.schema);
    this.storage = {
      user: options.storage?.user ?? 'postgres',
      database: options.storage?.database ?? 'shardkit',
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
    return qualified(ref.shard, table);
  }

  private open(): void {
    if (this.closed) throw new ShardKitError('CLOSED', 'the PostgreSQL backend is closed');
  }

  /** Round trips sent to each host since creation (benchmarks, tests). */
  roundTrips(): Record<string, number> {
    return this.pools.roundTrips();
  }

  /** Per host: round trips and the most statements in flight at once since the last reset. */
  hostStats(options: { reset?: boolean } = {}): Record<string, { queries: number; maxInFlight: number }> {
    return this.pools.stats(options);
  }

  private pool(host: string): PostgresHostPool {
    this.open();
    return this.pools.get(host);
  }

  private newPool(host: string, address: PostgresHostAddress): PostgresHostPool {
    const password = address.password ?? this.storage.password;
    const options: PostgresHostOptions = {
      ...(address.host !== undefined ? { host: address.host } : {}),
      ...(address.port !== undefined ? { port: address.port } : {}),
      ...(address.socket !== undefined ? { socket: address.socket } : {}),
      user: address.user ?? this.storage.user,
      ...(password !== undefined ? { password } : {}),
      database: this.storage.database,
      poolSize: this.storage.poolSize,
      connectTimeoutMs: this.storage.connectTimeoutMs,
      queryTimeoutMs: this.storage.queryTimeoutMs,
    };
    return new PostgresHostPool(host, options);
  }

  private async query<T extends object>(ref: ShardRef | { host: string }, sql: string, values?: SqlValue[], options: { discardOnError?: boolean } = {}): Promise<{ rows: T[]; rowCount: number }> {
    this.open();
    try {
      const res = await this.pool(ref.host).query<T & Record<string, unknown>>(sql, values, options);
      return { rows: res.rows, rowCount: res.rowCount ?? 0 };
    } catch (err) {
      throw mapPostgresError(err, ref);
    }
  }

  /**
   * Creates the schema (when missing) and every missing table of the fleet, in one transaction
   * (PostgreSQL DDL is transactional: a shard is complete or absent). Two processes creating the
   * same shard at once would race on the catalogs (IF NOT EXISTS is not atomic there), so an
   * advisory lock per shard serializes them.
   */
  async createShard(ref: ShardRef): Promise<void> {
    checkRef(ref);
    this.open();
    // An object shard also gets its Instagram ID generator, db00005.next_id() (SPEC §1).
    const statements = [...shardDdl(this.schema, ref.fleet, ref.shard), ...(ref.fleet === 'objects' ? instagramNextIdDdl(ref.shard) : [])];
    const lockKey = CREATE_LOCK_BASE + ref.shard;
    try {
      await this.pool(ref.host).transaction(async (run) => {
        await run('SELECT pg_advisory_xact_lock($1)', [lockKey]);
        for (const sql of statements) await run(sql);
      });
    } catch (err) {
      throw mapPostgresError(err, ref);
    }
  }

  /**
   * Drops the fleet's tables; the schema goes too once no table of the other fleet is left
   * (a host serving both fleets keeps db00005 for the objects when its lookups are dropped).
   */
  async dropShard(ref: ShardRef): Promise<void> {
    checkRef(ref);
    this.open();
    const s = qi(postgresSchemaName(ref.shard));
    const other: Fleet = ref.fleet === 'objects' ? 'lookups' : 'objects';
    const present = (await this.tablesOnHost(ref.host, ref.shard)).get(ref.shard) ?? new Set<string>();
    const keep = fleetTables(this.schema, other).some((t) => present.has(t));
    if (!keep) {
      await this.query(ref, `DROP SCHEMA IF EXISTS ${s} CASCADE`);
      return;
    }
    const mine = fleetTables(this.schema, ref.fleet).filter((t) => present.has(t));
    if (mine.length > 0) await this.query(ref, `DROP TABLE IF EXISTS ${mine.map((t) => qualified(ref.shard, t)).join(', ')}`);
    if (ref.fleet === 'objects') for (const sql of dropInstagramNextIdDdl(ref.shard)) await this.query(ref, sql);
  }

  /**
   * `count` new Instagram-layout IDs from the shard's own `next_id()` (SPEC §1): what a column
   * `DEFAULT db00005.next_id()` hands out, in one round trip. Shards 0..8191 (13 bits) only.
   * CLOCK_MOVED_BACKWARDS when the server's clock went back further than the generator waits out.
   */
  async nextInstagramIds(ref: ShardRef, count = 1): Promise<bigint[]> {
    checkRef(ref);
    if (ref.fleet !== 'objects') throw new ShardKitError('INVALID_ARGUMENT', 'Instagram IDs come from object shards');
    if (ref.shard > INSTAGRAM_MAX_SHARD) throw new ShardKitError('INVALID_ARGUMENT', `shard ${ref.shard} has no Instagram ID generator: the layout holds shards 0..${INSTAGRAM_MAX_SHARD}`);
    if (!Number.isInteger(count) || count < 1 || count > MAX_IDS_PER_CALL) throw new ShardKitError('INVALID_ARGUMENT', `count must be an integer in 1..${MAX_IDS_PER_CALL}`);
    // A failed call's connection is closed: an interrupt at the wrong moment could leave the
    // generator's session lock behind on it (instagram-next-id.ts).
    const { rows } = await this.query<{ id: string }>(ref, `SELECT ${qi(postgresSchemaName(ref.shard))}.next_id() AS id FROM generate_series(1, $1::int)`, [count], { discardOnError: true });
    return rows.map((r) => BigInt(r.id));
  }

  /** Shards whose schema holds every table of the current schema for that fleet, ascending. */
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

  /** Every shard schema on `host` (or just `onlyShard`'s) with the tables it holds, in one query. */
  async tablesOnHost(host: string, onlyShard?: number): Promise<Map<number, Set<string>>> {
    checkHost(host);
    const { rows } = await this.query<{ db: string; t: string | null }>(
      { host },
      `SELECT n.nspname AS db, c.relname AS t FROM pg_catalog.pg_namespace n
       LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relkind IN ('r', 'p')
       WHERE n.nspname ${onlyShard === undefined ? "~ '^db[0-9]{5}$'" : '= $1'}`,
      onlyShard === undefined ? [] : [postgresSchemaName(onlyShard)],
    );
    const out = new Map<number, Set<string>>();
    for (const r of rows) {
      const shard = parsePostgresSchemaName(r.db);
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
    const { rows } = await this.query<{ local_id: string }>(ref, `INSERT INTO ${t} (data, ts) VALUES ($1, $2) RETURNING local_id`, [data, now]);
    return { localId: Number(rows[0]!.local_id), data, createdAt: new Date(now) };
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
    // One round trip for the whole shard: one SELECT per table, glued with UNION ALL; each
    // table's ids are one array parameter.
    const values: SqlValue[] = tables.map((t) => [...new Set(byTable.get(t)!)]);
    const parts = tables.map((t, i) => `SELECT ${i} AS tbl, local_id, data, ts FROM ${this.table('types', ref, t)} WHERE local_id = ANY($${i + 1}::bigint[])`);
    const { rows } = await this.query<ObjectRow & { tbl: number }>(ref, parts.join(' UNION ALL '), values);
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
        const { rows } = await run<ObjectRow>(`SELECT local_id, data, ts FROM ${t} WHERE local_id = $1 FOR UPDATE`, [localId]);
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
        await run(`UPDATE ${t} SET data = $1 WHERE local_id = $2`, [next, localId]);
        return { ...current, data: next };
      });
    } catch (err) {
      if (fnError && err === fnError.error) throw err;
      throw mapPostgresError(err, ref);
    }
  }

  async deleteObject(ref: ShardRef, table: string, localId: number): Promise<boolean> {
    const t = this.table('types', ref, table);
    checkLocalId(localId);
    const res = await this.query(ref, `DELETE FROM ${t} WHERE local_id = $1`, [localId]);
    return res.rowCount > 0;
  }

  async addMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint, sequence: number): Promise<void> {
    const t = this.table('mappings', ref, table);
    checkStoredId(fromId, 'from id');
    checkStoredId(toId, 'to id');
    checkSequence(sequence);
    await this.query(ref, `INSERT INTO ${t} (from_id, to_id, "sequence") VALUES ($1, $2, $3) ON CONFLICT (from_id, to_id) DO UPDATE SET "sequence" = EXCLUDED."sequence"`, [fromId, toId, sequence]);
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
    const dir = desc ? 'DESC' : 'ASC';
    const values: SqlValue[] = [fromId];
    let where = 'from_id = $1';
    if (page.after) {
      // A row comparison: PostgreSQL turns it into one range scan of the (from_id, sequence, to_id) index.
      where += ` AND ("sequence", to_id) ${desc ? '<' : '>'} ($2, $3)`;
      values.push(page.after.sequence, page.after.toId);
    }
    values.push(page.limit);
    const { rows } = await this.query<{ to_id: string; sequence: string }>(
      ref,
      `SELECT to_id, "sequence" FROM ${t} WHERE ${where} ORDER BY "sequence" ${dir}, to_id ${dir} LIMIT $${values.length}`,
      values,
    );
    return rows.map((r) => ({ toId: parseId(r.to_id), sequence: Number(r.sequence) }));
  }

  async removeMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint): Promise<boolean> {
    const t = this.table('mappings', ref, table);
    checkStoredId(fromId, 'from id');
    checkStoredId(toId, 'to id');
    const res = await this.query(ref, `DELETE FROM ${t} WHERE from_id = $1 AND to_id = $2`, [fromId, toId]);
    return res.rowCount > 0;
  }

  async scanMappings(ref: ShardRef, table: string, page: MappingScan): Promise<MappingRow[]> {
    const t = this.table('mappings', ref, table);
    checkScan(page);
    const values: SqlValue[] = [];
    let where = '';
    if (page.after !== undefined) {
      // A row comparison: one range scan of the primary key (from_id, to_id).
      where = 'WHERE (from_id, to_id) > ($1, $2)';
      values.push(page.after.fromId, page.after.toId);
    }
    values.push(page.limit);
    const { rows } = await this.query<MappingRowText>(
      ref,
      `SELECT from_id, to_id, "sequence" FROM ${t} ${where} ORDER BY from_id, to_id LIMIT $${values.length}`,
      values,
    );
    return rows.map(toMappingRow);
  }

  async getMappings(ref: ShardRef, table: string, pairs: ReadonlyArray<{ fromId: bigint; toId: bigint }>): Promise<(number | undefined)[]> {
    const t = this.table('mappings', ref, table);
    checkPairs(pairs);
    if (pairs.length === 0) return [];
    // One statement whatever the number of pairs: two arrays joined against the primary key.
    const { rows } = await this.query<MappingRowText>(
      ref,
      `SELECT m.from_id, m.to_id, m."sequence" FROM ${t} m JOIN unnest($1::bigint[], $2::bigint[]) AS p(f, x) ON m.from_id = p.f AND m.to_id = p.x`,
      [pairs.map((p) => p.fromId.toString()), pairs.map((p) => p.toId.toString())],
    );
    return sequencesInOrder(rows, pairs);
  }

  async countMappings(ref: ShardRef, table: string, fromId: bigint): Promise<number> {
    const t = this.table('mappings', ref, table);
    checkStoredId(fromId, 'from id');
    const { rows } = await this.query<{ n: string }>(ref, `SELECT COUNT(*) AS n FROM ${t} WHERE from_id = $1`, [fromId]);
    return Number(rows[0]?.n ?? 0);
  }

  async putLookup(ref: ShardRef, table: string, key: string, value: bigint): Promise<void> {
    const t = this.table('keyspaces', ref, table);
    checkLookupKey(key);
    checkStoredId(value, 'lookup value');
    await this.query(ref, `INSERT INTO ${t} ("key", "value") VALUES ($1, $2) ON CONFLICT ("key") DO UPDATE SET "value" = EXCLUDED."value"`, [Buffer.from(key, 'utf8'), value]);
  }

  async getLookup(ref: ShardRef, table: string, key: string): Promise<bigint | undefined> {
    const t = this.table('keyspaces', ref, table);
    checkLookupKey(key);
    const { rows } = await this.query<{ value: string }>(ref, `SELECT "value" FROM ${t} WHERE "key" = $1`, [Buffer.from(key, 'utf8')]);
    return rows[0] ? parseId(rows[0].value) : undefined;
  }

  async deleteLookup(ref: ShardRef, table: string, key: string): Promise<boolean> {
    const t = this.table('keyspaces', ref, table);
    checkLookupKey(key);
    const res = await this.query(ref, `DELETE FROM ${t} WHERE "key" = $1`, [Buffer.from(key, 'utf8')]);
    return res.rowCount > 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pools.closeAll();
  }
}
