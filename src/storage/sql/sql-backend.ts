import { CheckedBackend, type Pair, type UpdateFn } from '../checked-backend.js';
import { checkHost } from '../backend-args.js';
import type {
  BackendCapabilities, Fleet, LookupRow, LookupScan, MappingItem, MappingPage, MappingRow, MappingScan, ObjectKey, ObjectRecord, ObjectScan,
  SchemaDef, ShardRef,
} from '../shard-backend.js';
import { fleetTables, movedShardName } from '../shard-names.js';
import { fencedError } from '../fence-error.js';
import { whereText } from './error-context.js';
import { SchemaTables } from '../schema-tables.js';
import { HostPools } from './host-pools.js';
import type { HostStorageMetrics } from '../storage-metrics.js';
import type { ErrorContext, ObjectRowText, SqlDialect, SqlHostPool, SqlResult, SqlValue } from './sql-dialect.js';

interface MappingRowText {
  from_id: string;
  to_id: string;
  sequence: string;
}

// 64-bit columns arrive as decimal strings of our own BIGINT columns: BigInt() reads them exactly,
// without parseId's checks for untrusted input (a list page reads 51 of them).
function toMappingRow(r: MappingRowText): MappingRow {
  return { fromId: BigInt(r.from_id), toId: BigInt(r.to_id), sequence: Number(r.sequence) };
}

/**
 * Logical shards on SQL servers, written once for every dialect: one pool per host, one round
 * trip per call (getObjects glues one SELECT per table with UNION ALL), updates as
 * read-modify-write under SELECT ... FOR UPDATE, keyset paging, and native errors mapped by the
 * dialect. A dialect folder (mysql/, postgres/) adds its statements, its pool and its errors.
 */
export abstract class SqlBackend<P extends SqlHostPool, A> extends CheckedBackend {
  readonly supports: BackendCapabilities = { lazyShardCreation: false, shardCopy: true };
  protected readonly pools: HostPools<P, A>;
  private readonly seqColumn: string;
  /** listSql's statements: mapping table -> [shard * 4 + order * 2 + after]. */
  private readonly listStatements = new Map<string, string[]>();

  constructor(hosts: Record<string, A>, schema: SchemaDef, protected readonly dialect: SqlDialect) {
    super(schema, dialect.label);
    this.pools = new HostPools(hosts, (host, address) => this.newPool(host, address));
    this.seqColumn = dialect.column('sequence');
  }

  /** The pool for one declared host (created on first use). */
  protected abstract newPool(host: string, address: A): P;

  /** Hosts declared after this backend was made (a pair added to a running fleet); see ShardBackend.learnHosts. */
  learnHosts(hosts: Record<string, unknown>): string[] {
    return this.pools.learn(hosts as Record<string, A>);
  }

  knowsHost(host: string): boolean {
    return this.pools.has(host);
  }

  async ping(host: string): Promise<void> {
    checkHost(host);
    await this.query({ host }, 'SELECT 1');
  }

  /** Later createShard calls use this schema (schema apply). */
  setSchema(schema: SchemaDef): void {
    this.tables = new SchemaTables(schema);
  }

  /** Round trips sent to each host since creation (benchmarks, tests). */
  roundTrips(): Record<string, number> {
    return this.pools.roundTrips();
  }

  /** Per host: round trips and the most statements in flight at once since the last reset. */
  hostStats(options: { reset?: boolean } = {}): Record<string, { queries: number; maxInFlight: number }> {
    return this.pools.stats(options);
  }

  storageMetrics(): HostStorageMetrics[] {
    return this.pools.metrics();
  }

  protected pool(host: string): P {
    this.open();
    return this.pools.get(host);
  }

  /** One statement on `ctx.host`, native errors mapped (a rejection handler, not an async frame: every call passes here). */
  protected query<R = Record<string, unknown>>(ctx: ErrorContext, sql: string, values?: SqlValue[]): Promise<SqlResult<R>> {
    let pending: Promise<SqlResult<R>>;
    try {
      pending = this.pool(ctx.host).execute<R>(sql, values);
    } catch (err) {
      return Promise.reject(this.dialect.mapError(err, ctx));
    }
    return pending.then(undefined, async (err: unknown) => {
      throw await this.fenceOf(this.dialect.mapError(err, ctx), ctx);
    });
  }

  /**
   * A missing table of an object shard, on a host where a move's fence set the shard's tables
   * aside, is the fence: SHARD_FENCED (details.missingTable kept). Elsewhere it stays what the
   * dialect made of it (SHARD_UNAVAILABLE: run init). Asked only on that error, never on the way of a call.
   */
  private async fenceOf(mapped: Error, ctx: ErrorContext): Promise<Error> {
    if (ctx.shard === undefined || (ctx.fleet ?? 'objects') !== 'objects') return mapped;
    const probe = this.dialect.fencedAside(ctx.shard);
    return fencedError(mapped, whereText(ctx), movedShardName(ctx.shard), async () => (await this.pool(ctx.host).execute(probe.sql, probe.values)).rows.length > 0);
  }

  /** SET LOCAL statements that start createShard's transaction (engines with transactional DDL). */
  protected ddlSettings(): string[] {
    return [];
  }

  protected async _createShard(ref: ShardRef): Promise<void> {
    const statements = this.dialect.createShard(this.schema, ref);
    const lock = this.dialect.createLock?.(ref.shard);
    if (lock === undefined) {
      for (const sql of statements) await this.query(ref, sql);
      return;
    }
    // Transactional DDL: a shard is complete or absent, and the lock serializes two creators.
    try {
      await this.pool(ref.host).transaction(async (run) => {
        for (const sql of this.ddlSettings()) await run(sql);
        await run(lock.sql, lock.values);
        for (const sql of statements) await run(sql);
      });
    } catch (err) {
      throw this.dialect.mapError(err, ref);
    }
  }

  /**
   * Drops the fleet's tables; the database/schema goes too once no table of the other fleet is
   * left (a host serving both fleets keeps db00005 for the objects when its lookups are dropped).
   */
  protected async _dropShard(ref: ShardRef): Promise<void> {
    const other: Fleet = ref.fleet === 'objects' ? 'lookups' : 'objects';
    const present = (await this.tablesOnHost(ref.host, ref.shard)).get(ref.shard) ?? new Set<string>();
    const keep = fleetTables(this.schema, other).some((t) => present.has(t));
    if (!keep) {
      await this.query(ref, this.dialect.dropDatabase(ref.shard));
      return;
    }
    const mine = fleetTables(this.schema, ref.fleet).filter((t) => present.has(t));
    if (mine.length > 0) await this.query(ref, `DROP TABLE IF EXISTS ${mine.map((t) => this.dialect.table(ref.shard, t)).join(', ')}`);
    for (const sql of this.dialect.afterDropTables(ref)) await this.query(ref, sql);
  }

  /** Shards whose database/schema holds every table of the current schema for that fleet, ascending. */
  protected async _listShards(host: string, fleet: Fleet): Promise<number[]> {
    const tables = await this.tablesOnHost(host);
    const want = fleetTables(this.schema, fleet);
    const out: number[] = [];
    if (want.length === 0) return out;
    for (const [shard, have] of tables) if (want.every((t) => have.has(t))) out.push(shard);
    return out.sort((a, b) => a - b);
  }

  /** Every shard database/schema on `host` (or just `onlyShard`'s) with the tables it holds, in one query. */
  async tablesOnHost(host: string, onlyShard?: number): Promise<Map<number, Set<string>>> {
    checkHost(host);
    const st = this.dialect.shardTables(onlyShard);
    const { rows } = await this.query<{ db: string; t: string | null }>({ host }, st.sql, st.values);
    const out = new Map<number, Set<string>>();
    for (const r of rows) {
      const shard = this.dialect.parseShardName(r.db);
      if (shard === undefined) continue;
      let set = out.get(shard);
      if (!set) out.set(shard, (set = new Set()));
      if (r.t !== null) set.add(r.t);
    }
    return out;
  }

  protected async _insertObject(ref: ShardRef, table: string, data: string): Promise<ObjectRecord> {
    const now = Date.now();
    const st = this.dialect.insertObject(this.dialect.table(ref.shard, table), data, now);
    const res = await this.query(ref, st.sql, st.values);
    return { localId: this.dialect.insertedId(res), data, createdAt: new Date(now) };
  }

  /** One transaction, one commit (the cost of a row written alone), the statements on one connection. */
  protected async _insertObjects(ref: ShardRef, table: string, data: string[]): Promise<ObjectRecord[]> {
    const d = this.dialect;
    const t = d.table(ref.shard, table);
    const now = Date.now();
    try {
      return await this.pool(ref.host).transaction(async (run) => {
        const out: ObjectRecord[] = [];
        for (const text of data) {
          const st = d.insertObject(t, text, now);
          out.push({ localId: d.insertedId(await run(st.sql, st.values)), data: text, createdAt: new Date(now) });
        }
        return out;
      });
    } catch (err) {
      throw await this.fenceOf(d.mapError(err, ref), ref);
    }
  }

  private record(row: ObjectRowText): ObjectRecord {
    return { localId: Number(row.local_id), data: row.data, createdAt: this.dialect.toDate(row.ts) };
  }

  protected async _getObjects(ref: ShardRef, keys: ObjectKey[]): Promise<(ObjectRecord | undefined)[]> {
    const d = this.dialect;
    if (keys.length === 1) {
      // The common single get: no grouping, no UNION.
      const k = keys[0]!;
      const ids = d.idsIn([k.localId], 1);
      const { rows } = await this.query<ObjectRowText>(ref, `SELECT local_id, data, ${d.tsColumn} AS ts FROM ${d.table(ref.shard, k.table)} WHERE ${ids.sql}`, ids.values);
      return [rows[0] === undefined ? undefined : this.record(rows[0])];
    }
    const byTable = new Map<string, Set<number>>();
    for (const k of keys) {
      let ids = byTable.get(k.table);
      if (!ids) byTable.set(k.table, (ids = new Set()));
      ids.add(k.localId);
    }
    const tables = [...byTable.keys()];
    const values: SqlValue[] = [];
    // One round trip for the whole shard: one SELECT per table, glued with UNION ALL.
    const parts = tables.map((t, i) => {
      const ids = d.idsIn([...byTable.get(t)!], values.length + 1);
      values.push(...ids.values);
      return `SELECT ${i} AS tbl, local_id, data, ${d.tsColumn} AS ts FROM ${d.table(ref.shard, t)} WHERE ${ids.sql}`;
    });
    const { rows } = await this.query<ObjectRowText & { tbl: number | string }>(ref, parts.join(' UNION ALL '), values);
    const found = new Map<string, ObjectRecord>();
    for (const r of rows) found.set(`${tables[Number(r.tbl)]}\u0000${r.local_id}`, this.record(r));
    return keys.map((k) => found.get(`${k.table}\u0000${k.localId}`));
  }

  protected async _updateObject(ref: ShardRef, table: string, localId: number, fn: UpdateFn): Promise<ObjectRecord | undefined> {
    const d = this.dialect;
    const t = d.table(ref.shard, table);
    // An error thrown by fn rolls back and reaches the caller unchanged.
    let fnError: { error: unknown } | undefined;
    try {
      return await this.pool(ref.host).transaction(async (run) => {
        const { rows } = await run<ObjectRowText>(`SELECT local_id, data, ${d.tsColumn} AS ts FROM ${t} WHERE local_id = ${d.param(1)} FOR UPDATE`, [localId]);
        const row = rows[0];
        if (!row) return undefined;
        const current = this.record(row);
        let next: string | undefined;
        try {
          next = fn(current.data);
        } catch (error) {
          fnError = { error };
          throw error;
        }
        if (next === undefined || next === current.data) return current;
        await run(`UPDATE ${t} SET data = ${d.param(1)} WHERE local_id = ${d.param(2)}`, [next, localId]);
        return { ...current, data: next };
      });
    } catch (err) {
      if (fnError && err === fnError.error) throw err;
      throw await this.fenceOf(d.mapError(err, ref), ref);
    }
  }

  protected async _deleteObject(ref: ShardRef, table: string, localId: number): Promise<boolean> {
    const res = await this.query(ref, `DELETE FROM ${this.dialect.table(ref.shard, table)} WHERE local_id = ${this.dialect.param(1)}`, [localId]);
    return res.affected > 0;
  }

  protected async _addMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint, sequence: number): Promise<void> {
    const sql = this.dialect.upsert(this.dialect.table(ref.shard, table), ['from_id', 'to_id', 'sequence'], ['from_id', 'to_id'], 'sequence');
    await this.query(ref, sql, [fromId, toId, sequence]);
  }

  protected async _listMappings(ref: ShardRef, table: string, fromId: bigint, page: MappingPage): Promise<MappingItem[]> {
    const desc = page.order === 'desc';
    const values: SqlValue[] = [fromId];
    // The keyset condition's text depends only on the order (its values are bound): built once.
    const after = page.after ? this.dialect.keysetAfter(this.seqColumn, 'to_id', 2, desc, [page.after.sequence, page.after.toId]) : undefined;
    if (after) values.push(...after.values);
    values.push(page.limit);
    const { rows } = await this.query<{ to_id: string; sequence: string }>(ref, this.listSql(ref.shard, table, desc, after?.sql, values.length), values);
    const out = new Array<MappingItem>(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = { toId: BigInt(rows[i]!.to_id), sequence: Number(rows[i]!.sequence) };
    return out;
  }

  /**
   * The list statement of one shard's mapping table, in one order, first page or after a cursor.
   * Built once and kept: a list is the hottest read, and a string built anew on every call costs
   * the client its concatenation, and then a flatten and a hash for the pool's prepared-statement
   * lookup (tens of microseconds per call under load). Bounded by mapping tables x shards x 4.
   */
  private listSql(shard: number, table: string, desc: boolean, after: string | undefined, limitParam: number): string {
    let perShard = this.listStatements.get(table);
    if (perShard === undefined) this.listStatements.set(table, (perShard = []));
    const slot = shard * 4 + (desc ? 2 : 0) + (after !== undefined ? 1 : 0);
    let sql = perShard[slot];
    if (sql === undefined) {
      const d = this.dialect;
      const seq = this.seqColumn;
      const dir = desc ? 'DESC' : 'ASC';
      const where = after === undefined ? `from_id = ${d.param(1)}` : `from_id = ${d.param(1)} AND ${after}`;
      sql = `SELECT to_id, ${seq} FROM ${d.table(shard, table)} WHERE ${where} ORDER BY ${seq} ${dir}, to_id ${dir} LIMIT ${d.param(limitParam)}`;
      perShard[slot] = sql;
    }
    return sql;
  }

  protected async _removeMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint): Promise<boolean> {
    const d = this.dialect;
    const res = await this.query(ref, `DELETE FROM ${d.table(ref.shard, table)} WHERE from_id = ${d.param(1)} AND to_id = ${d.param(2)}`, [fromId, toId]);
    return res.affected > 0;
  }

  protected async _scanMappings(ref: ShardRef, table: string, page: MappingScan): Promise<MappingRow[]> {
    const d = this.dialect;
    const values: SqlValue[] = [];
    let where = '';
    if (page.after !== undefined) {
      // A keyset on the primary key (from_id, to_id): one range scan.
      const after = d.keysetAfter('from_id', 'to_id', 1, false, [page.after.fromId, page.after.toId]);
      where = `WHERE ${after.sql}`;
      values.push(...after.values);
    }
    values.push(page.limit);
    const { rows } = await this.query<MappingRowText>(
      ref,
      `SELECT from_id, to_id, ${this.seqColumn} FROM ${d.table(ref.shard, table)} ${where} ORDER BY from_id, to_id LIMIT ${d.param(values.length)}`,
      values,
    );
    return rows.map(toMappingRow);
  }

  protected async _getMappings(ref: ShardRef, table: string, pairs: ReadonlyArray<Pair>): Promise<(number | undefined)[]> {
    const st = this.dialect.getMappings(this.dialect.table(ref.shard, table), pairs);
    const { rows } = await this.query<MappingRowText>(ref, st.sql, st.values);
    const found = new Map(rows.map((r) => [`${BigInt(r.from_id)}:${BigInt(r.to_id)}`, Number(r.sequence)]));
    return pairs.map((p) => found.get(`${p.fromId}:${p.toId}`));
  }

  protected async _countMappings(ref: ShardRef, table: string, fromId: bigint): Promise<number> {
    const { rows } = await this.query<{ n: string | number }>(ref, `SELECT COUNT(*) AS n FROM ${this.dialect.table(ref.shard, table)} WHERE from_id = ${this.dialect.param(1)}`, [fromId]);
    return Number(rows[0]?.n ?? 0);
  }

  protected async _countObjects(ref: ShardRef): Promise<number> {
    const tables = this.schema.types.map((t) => t.table);
    if (tables.length === 0) return 0;
    // One statement (one round trip) per shard: a scalar subquery per object table, summed.
    const sum = tables.map((t) => `(SELECT COUNT(*) FROM ${this.dialect.table(ref.shard, t)})`).join(' + ');
    const { rows } = await this.query<{ n: string | number }>(ref, `SELECT ${sum} AS n`);
    return Number(rows[0]?.n ?? 0);
  }

  // Lookup keys travel as bytes: both servers store them in binary columns compared byte for byte.

  protected async _putLookup(ref: ShardRef, table: string, key: string, value: bigint): Promise<void> {
    const sql = this.dialect.upsert(this.dialect.table(ref.shard, table), ['key', 'value'], ['key'], 'value');
    await this.query(ref, sql, [Buffer.from(key, 'utf8'), value]);
  }

  protected async _getLookup(ref: ShardRef, table: string, key: string): Promise<bigint | undefined> {
    const d = this.dialect;
    const { rows } = await this.query<{ value: string }>(ref, `SELECT ${d.column('value')} FROM ${d.table(ref.shard, table)} WHERE ${d.column('key')} = ${d.param(1)}`, [Buffer.from(key, 'utf8')]);
    return rows[0] ? BigInt(rows[0].value) : undefined;
  }

  protected async _deleteLookup(ref: ShardRef, table: string, key: string): Promise<boolean> {
    const d = this.dialect;
    const res = await this.query(ref, `DELETE FROM ${d.table(ref.shard, table)} WHERE ${d.column('key')} = ${d.param(1)}`, [Buffer.from(key, 'utf8')]);
    return res.affected > 0;
  }

  protected async _close(): Promise<void> {
    await this.pools.closeAll();
  }

  // ShardCopy (shard-backend.ts): what `shardkit migrate` writes into a server fleet.

  protected override async _scanObjects(ref: ShardRef, table: string, page: ObjectScan): Promise<ObjectRecord[]> {
    const d = this.dialect;
    const values: SqlValue[] = page.after === undefined ? [page.limit] : [page.after, page.limit];
    const where = page.after === undefined ? '' : `WHERE local_id > ${d.param(1)}`;
    const { rows } = await this.query<ObjectRowText>(ref, `SELECT local_id, data, ${d.tsColumn} AS ts FROM ${d.table(ref.shard, table)} ${where} ORDER BY local_id LIMIT ${d.param(values.length)}`, values);
    return rows.map((r) => this.record(r));
  }

  protected override async _putObjectRows(ref: ShardRef, table: string, rows: ReadonlyArray<ObjectRecord>): Promise<void> {
    const st = this.dialect.putObjectRows(this.dialect.table(ref.shard, table), rows);
    await this.query(ref, st.sql, st.values);
  }

  protected override async _objectIdHighWater(ref: ShardRef, table: string): Promise<number> {
    const { rows: max } = await this.query<{ n: string | number | null }>(ref, `SELECT MAX(local_id) AS n FROM ${this.dialect.table(ref.shard, table)}`);
    return Math.max(await this.idCounter(ref, table), Number(max[0]?.n ?? 0));
  }

  /** The last local id the table's counter handed out (PostgreSQL's identity does not move past explicit ids). */
  private async idCounter(ref: ShardRef, table: string): Promise<number> {
    const st = this.dialect.idHighWater(ref.shard, table);
    const { rows } = await this.query<{ n: string | number | null }>(ref, st.sql, st.values);
    return Number(rows[0]?.n ?? 0);
  }

  protected override async _raiseObjectIdHighWater(ref: ShardRef, table: string, highWater: number): Promise<void> {
    if ((await this.idCounter(ref, table)) >= highWater) return;
    const st = this.dialect.raiseIdHighWater(ref.shard, table, highWater);
    await this.query(ref, st.sql, st.values);
  }

  protected override async _putMappingRows(ref: ShardRef, table: string, rows: ReadonlyArray<MappingRow>): Promise<void> {
    const sql = this.dialect.upsertRows(this.dialect.table(ref.shard, table), ['from_id', 'to_id', 'sequence'], ['from_id', 'to_id'], ['sequence'], rows.length);
    await this.query(ref, sql, rows.flatMap((r): SqlValue[] => [r.fromId, r.toId, r.sequence]));
  }

  protected override async _scanLookups(ref: ShardRef, table: string, page: LookupScan): Promise<LookupRow[]> {
    const d = this.dialect;
    const values: SqlValue[] = page.after === undefined ? [page.limit] : [Buffer.from(page.after, 'utf8'), page.limit];
    const where = page.after === undefined ? '' : `WHERE ${d.column('key')} > ${d.param(1)}`;
    const { rows } = await this.query<{ key: Buffer; value: string }>(
      ref,
      `SELECT ${d.column('key')}, ${d.column('value')} FROM ${d.table(ref.shard, table)} ${where} ORDER BY ${d.column('key')} LIMIT ${d.param(values.length)}`,
      values,
    );
    return rows.map((r) => ({ key: Buffer.from(r.key).toString('utf8'), value: BigInt(r.value) }));
  }

  protected override async _putLookupRows(ref: ShardRef, table: string, rows: ReadonlyArray<LookupRow>): Promise<void> {
    const sql = this.dialect.upsertRows(this.dialect.table(ref.shard, table), ['key', 'value'], ['key'], ['value'], rows.length);
    await this.query(ref, sql, rows.flatMap((r): SqlValue[] => [Buffer.from(r.key, 'utf8'), r.value]));
  }
}
