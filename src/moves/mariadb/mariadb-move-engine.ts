import { createHash } from 'node:crypto';
import mysql from 'mysql2/promise';
import { ShardKitError } from '../../errors.js';
import { shardDatabaseName } from '../../storage/shard-names.js';
import type { MoveRecord } from '../../topology/shard-map.js';
import type { ChunkMismatch, MoveEngine, VerifyReport } from '../move-engine.js';

/** Rows per copy and verify chunk. */
const CHUNK_ROWS = 1000;

/** Where the fence puts a moved shard's tables on the source: `db00005_moved`. */
export const movedDatabaseName = (shard: number): string => `${shardDatabaseName(shard)}_moved`;

export interface MariadbMoveEngineOptions {
  /** Address of every host the config declares (a host's own user/password win over the storage section's). */
  hosts: Record<string, { host?: string; port?: number; socket?: string; user?: string; password?: string }>;
  user: string;
  password?: string;
  /** The object fleet's tables (fleetTables(schema, 'objects')): only these move; a database may also hold mod-shard tables. */
  tables: readonly string[];
  /** How long the fence's RENAME waits for in-flight transactions on the moving tables (MDL). Default 10 s. */
  lockWaitTimeoutS?: number;
}

type Conn = mysql.Connection;
const q = (name: string): string => `\`${name.replace(/`/g, '``')}\``;

/**
 * Shard moves on MariaDB, copying under the freeze (like the embedded engine):
 *
 *   prepare  checks the target master holds no object rows for the moving shards;
 *   fence    RENAME TABLE of the moving object tables into dbNNNNN_moved on the source master
 *            (binlogged, so the source's slave follows). RENAME waits for the metadata lock,
 *            so a transaction in flight on those tables commits before it (and is copied) or
 *            fails; anything later gets ER_NO_SUCH_TABLE, which services treat as the fence;
 *   catchUp  per table: CREATE TABLE from the source's SHOW CREATE TABLE (its AUTO_INCREMENT
 *            included, so new ids continue past the source's), then primary-key chunks copied
 *            with INSERT on the target master (binlogged: the target's slave gets them);
 *   verify   source (fenced) vs target in primary-key chunks, row hashes compared;
 *   undo     tables renamed back on the source, the target's copies dropped;
 *   dropMoved  the fenced dbNNNNN_moved databases dropped on the source (binlogged).
 *
 * Everything runs on the app user's connections with sql_log_bin left on, so master and slave of
 * each pair keep equal GTID histories. The write pause grows with the size of the moving shards
 * (no replication-based pre-copy yet: docs/moves.md says why).
 */
export class MariadbMoveEngine implements MoveEngine {
  readonly kind = 'mariadb';
  private readonly options: MariadbMoveEngineOptions;

  constructor(options: MariadbMoveEngineOptions) {
    if (options.tables.length === 0) throw new ShardKitError('INVALID_CONFIG', 'the schema has no object tables to move');
    this.options = options;
  }

  private async connect(host: string): Promise<Conn> {
    const h = this.options.hosts[host];
    if (h === undefined) throw new ShardKitError('INVALID_ARGUMENT', `unknown host ${host}: it is not declared in the config's "hosts"`);
    const password = h.password ?? this.options.password;
    const conn = await mysql.createConnection({
      ...(h.socket !== undefined ? { socketPath: h.socket } : { host: h.host ?? '127.0.0.1', port: h.port ?? 3306 }),
      user: h.user ?? this.options.user, ...(password !== undefined ? { password } : {}),
      supportBigNumbers: true, bigNumberStrings: true, dateStrings: true, timezone: 'Z',
    });
    // Timestamps travel as text: the same zone on both sides keeps them exact.
    await conn.query("SET time_zone = '+00:00'");
    return conn;
  }

  private async withConn<T>(host: string, fn: (c: Conn) => Promise<T>): Promise<T> {
    const c = await this.connect(host);
    try {
      return await fn(c);
    } finally {
      await c.end().catch(() => undefined);
    }
  }

  private shards(move: MoveRecord): number[] {
    const out: number[] = [];
    for (let s = move.range[0]; s <= move.range[1]; s++) out.push(s);
    return out;
  }

  /** Which of our object tables exist in `db` on this connection. */
  private async present(c: Conn, db: string): Promise<string[]> {
    const [rows] = await c.query('SELECT TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?', [db]);
    const have = new Set((rows as Array<{ t: string }>).map((r) => r.t));
    return this.options.tables.filter((t) => have.has(t));
  }

  async prepare(move: MoveRecord): Promise<Record<string, string | number | boolean>> {
    let tables = 0;
    await this.withConn(move.target.master, async (c) => {
      for (const s of this.shards(move)) {
        for (const t of await this.present(c, shardDatabaseName(s))) {
          const [rows] = await c.query(`SELECT 1 AS x FROM ${q(shardDatabaseName(s))}.${q(t)} LIMIT 1`);
          if ((rows as unknown[]).length > 0) {
            throw new ShardKitError('ALREADY_EXISTS', `${shardDatabaseName(s)}.${t} on the target ${move.target.master} already holds rows: drop them before moving shard ${s} there`);
          }
        }
      }
    });
    await this.withConn(move.source.master, async (c) => {
      for (const s of this.shards(move)) tables += (await this.present(c, shardDatabaseName(s))).length + (await this.present(c, movedDatabaseName(s))).length;
    });
    return { tables };
  }

  async lag(): Promise<number> {
    return 0;
  }

  async fence(move: MoveRecord): Promise<void> {
    await this.withConn(move.source.master, async (c) => {
      await c.query(`SET SESSION lock_wait_timeout = ${Math.max(1, Math.floor(this.options.lockWaitTimeoutS ?? 10))}`);
      for (const s of this.shards(move)) {
        const live = await this.present(c, shardDatabaseName(s));
        if (live.length === 0) continue;
        const clash = await this.present(c, movedDatabaseName(s));
        const both = live.filter((t) => clash.includes(t));
        if (both.length > 0) throw new ShardKitError('INTERNAL', `${shardDatabaseName(s)}.${both[0]} exists both live and in ${movedDatabaseName(s)} on ${move.source.master}: resolve by hand before moving`);
        await c.query(`CREATE DATABASE IF NOT EXISTS ${q(movedDatabaseName(s))} DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
        // One statement for all tables of the shard: atomic, and it waits (MDL) for transactions in flight.
        await c.query(`RENAME TABLE ${live.map((t) => `${q(shardDatabaseName(s))}.${q(t)} TO ${q(movedDatabaseName(s))}.${q(t)}`).join(', ')}`);
      }
    });
  }

  async catchUp(move: MoveRecord, onProgress?: (done: number, total: number) => void): Promise<void> {
    const shards = this.shards(move);
    const src = await this.connect(move.source.master);
    try {
      const dst = await this.connect(move.target.master);
      try {
        let done = 0;
        for (const s of shards) {
          if ((await this.present(src, shardDatabaseName(s))).length > 0) {
            throw new ShardKitError('INTERNAL', `${shardDatabaseName(s)} on ${move.source.master} still has live object tables: refusing to copy a shard that is not fenced`);
          }
          const tables = await this.present(src, movedDatabaseName(s));
          if (tables.length > 0) await dst.query(`CREATE DATABASE IF NOT EXISTS ${q(shardDatabaseName(s))} DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
          for (const t of tables) await copyTable(src, dst, movedDatabaseName(s), shardDatabaseName(s), t);
          onProgress?.(++done, shards.length);
        }
      } finally {
        await dst.end().catch(() => undefined);
      }
    } finally {
      await src.end().catch(() => undefined);
    }
  }

  async verify(move: MoveRecord): Promise<VerifyReport> {
    const report: VerifyReport = { shards: 0, tables: 0, rows: 0, chunks: 0, mismatches: [] };
    const src = await this.connect(move.source.master);
    try {
      const dst = await this.connect(move.target.master);
      try {
        for (const s of this.shards(move)) {
          // The source's copy is the fenced one once the fence holds, the live one before.
          const moved = await this.present(src, movedDatabaseName(s));
          const srcDb = moved.length > 0 ? movedDatabaseName(s) : shardDatabaseName(s);
          const srcTables = moved.length > 0 ? moved : await this.present(src, srcDb);
          const dstTables = await this.present(dst, shardDatabaseName(s));
          report.shards++;
          for (const t of this.options.tables) {
            if (!srcTables.includes(t) && !dstTables.includes(t)) continue;
            report.tables++;
            const r = await compareTable(s, t, srcTables.includes(t) ? { c: src, db: srcDb } : undefined, dstTables.includes(t) ? { c: dst, db: shardDatabaseName(s) } : undefined);
            report.rows += r.rows;
            report.chunks += r.chunks;
            report.mismatches.push(...r.mismatches);
          }
        }
      } finally {
        await dst.end().catch(() => undefined);
      }
    } finally {
      await src.end().catch(() => undefined);
    }
    return report;
  }

  async undo(move: MoveRecord): Promise<void> {
    // Target first: its copies never served (the switch did not happen); then the source serves again.
    await this.withConn(move.target.master, async (c) => {
      for (const s of this.shards(move)) {
        const tables = await this.present(c, shardDatabaseName(s));
        if (tables.length > 0) await c.query(`DROP TABLE IF EXISTS ${tables.map((t) => `${q(shardDatabaseName(s))}.${q(t)}`).join(', ')}`);
      }
    });
    await this.withConn(move.source.master, async (c) => {
      for (const s of this.shards(move)) {
        const fenced = await this.present(c, movedDatabaseName(s));
        const live = await this.present(c, shardDatabaseName(s));
        const back = fenced.filter((t) => !live.includes(t));
        if (back.length > 0) await c.query(`RENAME TABLE ${back.map((t) => `${q(movedDatabaseName(s))}.${q(t)} TO ${q(shardDatabaseName(s))}.${q(t)}`).join(', ')}`);
        const [rest] = await c.query('SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?', [movedDatabaseName(s)]);
        if (Number((rest as Array<{ n: number | string }>)[0]!.n) === 0) await c.query(`DROP DATABASE IF EXISTS ${q(movedDatabaseName(s))}`);
      }
    });
  }

  async dropMoved(move: MoveRecord): Promise<number> {
    let dropped = 0;
    await this.withConn(move.source.master, async (c) => {
      for (const s of this.shards(move)) {
        if ((await this.present(c, shardDatabaseName(s))).length > 0) {
          throw new ShardKitError('INTERNAL', `${shardDatabaseName(s)} on ${move.source.master} has live object tables: refusing to drop shard ${s} (move ${move.id})`);
        }
        const [rows] = await c.query('SELECT COUNT(*) AS n FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', [movedDatabaseName(s)]);
        if (Number((rows as Array<{ n: number | string }>)[0]!.n) === 0) continue;
        await c.query(`DROP DATABASE ${q(movedDatabaseName(s))}`);
        dropped++;
      }
    });
    return dropped;
  }

  /**
   * A master against its slave, shard by shard, table by table, at a consistent point per chunk:
   * the master's chunk is read, then its GTID position, and the slave is compared once it has
   * applied that position (MASTER_GTID_WAIT). A chunk written between the two reads can differ
   * for a moment, so a mismatching table is compared again before it is reported.
   */
  async verifyReplica(shard: number, master: string, slave: string, waitS = 30): Promise<VerifyReport> {
    const report: VerifyReport = { shards: 1, tables: 0, rows: 0, chunks: 0, mismatches: [] };
    const m = await this.connect(master);
    try {
      const sl = await this.connect(slave);
      try {
        const db = shardDatabaseName(shard);
        const [onMaster, onSlave] = [await this.present(m, db), await this.present(sl, db)];
        const sync = async (): Promise<void> => {
          const [pos] = await m.query('SELECT @@GLOBAL.gtid_binlog_pos AS p');
          const p = String((pos as Array<{ p: string | null }>)[0]!.p ?? '');
          if (p === '') return;
          const [r] = await sl.query('SELECT MASTER_GTID_WAIT(?, ?) AS r', [p, waitS]);
          if (Number((r as Array<{ r: number | string | null }>)[0]!.r) !== 0) {
            throw new ShardKitError('SHARD_UNAVAILABLE', `${slave} did not reach ${master}'s position ${p} within ${waitS} s: is it replicating? (shardkit pair verify / dev status)`);
          }
        };
        for (const t of this.options.tables) {
          if (!onMaster.includes(t) && !onSlave.includes(t)) continue;
          report.tables++;
          const a = onMaster.includes(t) ? { c: m, db } : undefined;
          const b = onSlave.includes(t) ? { c: sl, db } : undefined;
          let r = await compareTable(shard, t, a, b, sync);
          if (r.mismatches.length > 0) r = await compareTable(shard, t, a, b, sync);
          report.rows += r.rows;
          report.chunks += r.chunks;
          report.mismatches.push(...r.mismatches);
        }
      } finally {
        await sl.end().catch(() => undefined);
      }
    } finally {
      await m.end().catch(() => undefined);
    }
    return report;
  }

  async close(): Promise<void> {}
}

async function primaryKey(c: Conn, db: string, table: string): Promise<string[]> {
  const [rows] = await c.query(
    "SELECT COLUMN_NAME AS c FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION",
    [db, table],
  );
  const keys = (rows as Array<{ c: string }>).map((r) => r.c);
  if (keys.length === 0) throw new ShardKitError('INTERNAL', `${db}.${table} has no primary key: cannot move it in chunks`);
  return keys;
}

/** Reads a table in primary-key order, CHUNK_ROWS at a time: `after` is the previous chunk's last key. */
function chunkReader(c: Conn, db: string, table: string, keys: string[]) {
  const k = keys.map(q).join(', ');
  const tuple = keys.length === 1 ? k : `(${k})`;
  const qs = keys.length === 1 ? '?' : `(${keys.map(() => '?').join(', ')})`;
  const t = `${q(db)}.${q(table)}`;
  const rows = async (sql: string, params: unknown[]): Promise<{ fields: string[]; rows: unknown[][] }> => {
    const [r, f] = await c.query({ sql, rowsAsArray: true }, params);
    return { fields: (f ?? []).map((x) => x.name), rows: r as unknown[][] };
  };
  return {
    next: (after: unknown[] | undefined) => rows(after === undefined ? `SELECT * FROM ${t} ORDER BY ${k} LIMIT ${CHUNK_ROWS}` : `SELECT * FROM ${t} WHERE ${tuple} > ${qs} ORDER BY ${k} LIMIT ${CHUNK_ROWS}`, after ?? []),
    upTo: (after: unknown[] | undefined, hi: unknown[]) => rows(after === undefined ? `SELECT * FROM ${t} WHERE ${tuple} <= ${qs} ORDER BY ${k}` : `SELECT * FROM ${t} WHERE ${tuple} > ${qs} AND ${tuple} <= ${qs} ORDER BY ${k}`, [...(after ?? []), ...hi]),
    rest: (after: unknown[] | undefined) => rows(after === undefined ? `SELECT * FROM ${t} ORDER BY ${k}` : `SELECT * FROM ${t} WHERE ${tuple} > ${qs} ORDER BY ${k}`, after ?? []),
  };
}

/**
 * Copies one fenced table to the target: re-created from SHOW CREATE TABLE (a partial copy of an
 * interrupted run is replaced; prepare made sure the target held no rows of its own), then rows
 * in primary-key chunks. SHOW CREATE TABLE carries the AUTO_INCREMENT counter, and explicit ids
 * push it past max(id) anyway, so ids made on the target continue after the source's.
 */
async function copyTable(src: Conn, dst: Conn, srcDb: string, dstDb: string, table: string): Promise<void> {
  const [created] = await src.query(`SHOW CREATE TABLE ${q(srcDb)}.${q(table)}`);
  const ddl = String((created as Array<Record<string, string>>)[0]!['Create Table']);
  await dst.query(`DROP TABLE IF EXISTS ${q(dstDb)}.${q(table)}`);
  await dst.query(`USE ${q(dstDb)}`);
  await dst.query(ddl);
  const keys = await primaryKey(src, srcDb, table);
  const reader = chunkReader(src, srcDb, table, keys);
  let after: unknown[] | undefined;
  for (;;) {
    const { fields, rows } = await reader.next(after);
    if (rows.length === 0) break;
    const cols = fields.map(q).join(', ');
    const one = `(${fields.map(() => '?').join(', ')})`;
    await dst.query(`INSERT INTO ${q(dstDb)}.${q(table)} (${cols}) VALUES ${rows.map(() => one).join(', ')}`, rows.flat());
    const idx = keys.map((k) => fields.indexOf(k));
    after = idx.map((i) => rows[rows.length - 1]![i]);
  }
}

function hashRows(rows: unknown[][]): string {
  const h = createHash('sha1');
  for (const r of rows) h.update(JSON.stringify(r)).update('\n');
  return `${rows.length}:${h.digest('hex')}`;
}

/**
 * Compares one table of a shard: the source's primary-key chunks, and for each the target's rows
 * in the same key interval (so rows on one side only are found too); target rows past the
 * source's last key are a chunk of their own.
 */
async function compareTable(shard: number, table: string, a: { c: Conn; db: string } | undefined, b: { c: Conn; db: string } | undefined, sync?: () => Promise<void>): Promise<{ rows: number; chunks: number; mismatches: ChunkMismatch[] }> {
  const out = { rows: 0, chunks: 0, mismatches: [] as ChunkMismatch[] };
  const keys = await primaryKey((a ?? b)!.c, (a ?? b)!.db, table);
  const ra = a === undefined ? undefined : chunkReader(a.c, a.db, table, keys);
  const rb = b === undefined ? undefined : chunkReader(b.c, b.db, table, keys);
  const keyText = (k: unknown[]): string => (k.length === 1 ? String(k[0]) : `(${k.map(String).join(',')})`);
  let last: unknown[] | undefined;
  if (ra === undefined) await sync?.();
  for (;;) {
    const chunk = ra === undefined ? { fields: [], rows: [] as unknown[][] } : await ra.next(last);
    if (chunk.rows.length === 0) break;
    const idx = keys.map((k) => chunk.fields.indexOf(k));
    const hi = idx.map((i) => chunk.rows[chunk.rows.length - 1]![i]);
    const lo = idx.map((i) => chunk.rows[0]![i]);
    await sync?.();
    const other = rb === undefined ? [] : (await rb.upTo(last, hi)).rows;
    out.chunks++;
    out.rows += chunk.rows.length;
    if (hashRows(chunk.rows) !== hashRows(other)) {
      out.mismatches.push({ shard, table, fromKey: last === undefined ? '-inf' : keyText(lo), toKey: keyText(hi), sourceRows: chunk.rows.length, targetRows: other.length });
    }
    last = hi;
  }
  if (ra !== undefined) await sync?.();
  const extra = rb === undefined ? [] : (await rb.rest(last)).rows;
  if (extra.length > 0) {
    out.chunks++;
    out.mismatches.push({ shard, table, fromKey: last === undefined ? '-inf' : keyText(last), toKey: '+inf', sourceRows: 0, targetRows: extra.length });
  }
  return out;
}
