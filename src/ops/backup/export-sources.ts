import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type mysql from 'mysql2/promise';
import pg from 'pg';
import { ShardKitError } from '../../errors.js';
import { shardDatabaseName } from '../../storage/shard-names.js';
import type { ShardMap } from '../../topology/shard-map.js';
import type { HostAdmin } from '../failover/host-admin.js';
import type { PostgresServer } from '../postgres/postgres-server.js';
import { copyObjects, type ObjectPage } from './export-pg-copy.js';

export type { ObjectPage };
import { fleetPairs } from './fleet-pairs.js';

/** One object row as stored: `ts` in unix ms; `data` the JSON text, or its UTF-8 bytes as the driver had them. */
export interface StoredObject {
  localId: number;
  data: string | Buffer;
  ts: number;
}

export interface StoredMapping {
  fromId: bigint;
  toId: bigint;
  sequence: number;
}

/** A shard's copy to read: the host that holds it (a slave; the master's file on the embedded default). */
export interface ExportShard {
  shard: number;
  host: string;
}

/** Reads one shard's table inside one consistent snapshot (a transaction on the slave, one statement on SQLite). */
export interface ShardReader {
  /** Object rows in local id order, `sinceMs`: only rows whose ts is at or after it. */
  objects(table: string, sinceMs: number | undefined, onPage: (rows: StoredObject[] | ObjectPage) => Promise<void>): Promise<void>;
  /** Mapping rows in (from, to) order. */
  mappings(table: string, onPage: (rows: StoredMapping[]) => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

export interface PlacedShards {
  version: number;
  shards: ExportShard[];
}

/** Where an export reads from: the map's object shards, each on the slave of its pair. */
export interface ExportSource {
  readonly engine: 'sqlite' | 'mariadb' | 'postgres';
  /** The object shards, each with the host to read it from, ascending, and the version of the map that places them. */
  shards(): Promise<PlacedShards>;
  /** The map's version now (an export refuses to call itself complete when it changed meanwhile). */
  mapVersion(): Promise<number>;
  /** A reader of one shard; undefined when the shard does not hold `table` (never written). */
  open(shard: ExportShard, table: string, pageRows?: number): Promise<ShardReader | undefined>;
  close(): Promise<void>;
}

/** Rows fetched per round trip (keyset pages inside the shard's snapshot). */
export const PAGE_ROWS = 20_000;

/** Object shards of the map, each read from its pair's slave; refuses as a backup does (a move in progress, a pair with no slave). */
export function slaveShards(map: ShardMap): PlacedShards {
  fleetPairs(map);
  const out: ExportShard[] = [];
  for (const r of map.objectRanges()) for (let s = r.range[0]; s <= r.range[1]; s++) out.push({ shard: s, host: r.slave! });
  return { version: map.version, shards: out.sort((a, b) => a.shard - b.shard) };
}

const sqliteTs = (v: unknown): number => Number(v);

/** The embedded default: each shard file, read in one statement (a WAL snapshot) while the service writes. */
export function sqliteShardReader(path: string, pageRows = PAGE_ROWS): ShardReader | undefined {
  if (!existsSync(path)) return undefined;
  const db = new Database(path, { readonly: true, fileMustExist: true });
  const has = (t: string) => db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(t) !== undefined;
  const pages = async <R>(rows: Iterable<R>, onPage: (page: R[]) => Promise<void>) => {
    let page: R[] = [];
    for (const r of rows) {
      page.push(r);
      if (page.length >= pageRows) {
        await onPage(page);
        page = [];
      }
    }
    if (page.length > 0) await onPage(page);
  };
  return {
    async objects(table, sinceMs, onPage) {
      if (!has(table)) return;
      // Table names come from the validated config's schema.
      const sql = `SELECT local_id, data, ts FROM "${table}"${sinceMs === undefined ? '' : ' WHERE ts >= ?'} ORDER BY local_id`;
      const st = db.prepare(sql).raw();
      const it = (sinceMs === undefined ? st.iterate() : st.iterate(sinceMs)) as Iterable<[number, string, unknown]>;
      await pages((function* () {
        for (const [id, data, ts] of it) yield { localId: id, data, ts: sqliteTs(ts) };
      })(), onPage);
    },
    async mappings(table, onPage) {
      if (!has(table)) return;
      const it = db.prepare(`SELECT from_id, to_id, sequence FROM "${table}" ORDER BY from_id, to_id`).raw().safeIntegers(true).iterate() as Iterable<[bigint, bigint, bigint]>;
      await pages((function* () {
        for (const [f, t, s] of it) yield { fromId: BigInt.asUintN(64, f), toId: BigInt.asUintN(64, t), sequence: Number(s) };
      })(), onPage);
    },
    close: async () => void db.close(),
  };
}

/** The shard file of `shard` in a host directory of the embedded default. */
export function sqliteShardPath(hostDir: string, shard: number): string {
  return join(hostDir, `${shardDatabaseName(shard)}.sqlite`);
}

/**
 * Keyset pages: `fetch(after)` returns up to `pageRows` rows after a key; the next page is asked
 * for before the current one is handed on, so the server reads while this process encodes.
 */
async function keysetPages<R, K>(fetch: (after: K | undefined) => Promise<R[]>, keyOf: (row: R) => K, pageRows: number, onPage: (rows: R[]) => Promise<void>): Promise<void> {
  let next: Promise<R[]> | undefined = fetch(undefined);
  while (next !== undefined) {
    const page: R[] = await next;
    next = page.length < pageRows ? undefined : fetch(keyOf(page[page.length - 1]!));
    // A failed onPage leaves the prefetch unawaited: its own failure must not surface unhandled.
    next?.catch(() => undefined);
    if (page.length > 0) await onPage(page);
  }
}

/**
 * A connection per shard being read on a host, reused shard after shard (each shard read in its
 * own transaction on it): a fleet of 4,096 shards would otherwise open 4,096 connections, most
 * for an empty shard.
 */
export class HostConnections<C> {
  private readonly idle = new Map<string, C[]>();

  constructor(private readonly connect: (host: string) => Promise<C>, private readonly end: (c: C) => Promise<void>) {}

  async take(host: string): Promise<C> {
    const c = this.idle.get(host)?.pop();
    return c === undefined ? this.connect(host) : c;
  }

  /** Back for the next shard (its transaction ended); one in a doubtful state is dropped instead. */
  async give(host: string, c: C, healthy: boolean): Promise<void> {
    // As many kept per host as shards are read at once there (export-run.ts SHARDS_AT_ONCE).
    if (healthy) this.idle.set(host, [...(this.idle.get(host) ?? []), c]);
    else await this.end(c).catch(() => undefined);
  }

  async close(): Promise<void> {
    const all = [...this.idle.values()].flat();
    this.idle.clear();
    await Promise.all(all.map((c) => this.end(c).catch(() => undefined)));
  }
}

const dataAsBytes: mysql.TypeCast = (field, next) => (field.name === 'data' ? field.buffer() : next());

const q = (n: string) => `\`${n.replace(/`/g, '``')}\``;

/** Admin connections to MariaDB slaves. */
export function mariadbConnections(admin: HostAdmin): HostConnections<mysql.Connection> {
  return new HostConnections((host) => admin.connect(host), (c) => c.end().catch(() => c.destroy()));
}

/** A MariaDB slave's shard, read in one consistent-snapshot transaction on the host's connection. */
export async function mariadbShardReader(conns: HostConnections<mysql.Connection>, host: string, shard: number, table: string, pageRows = PAGE_ROWS): Promise<ShardReader | undefined> {
  const db = shardDatabaseName(shard);
  const conn = await conns.take(host);
  try {
    const [exists] = await conn.query('SELECT 1 FROM information_schema.tables WHERE table_schema = ? AND table_name = ?', [db, table]);
    if ((exists as unknown[]).length === 0) {
      await conns.give(host, conn, true);
      return undefined;
    }
    await conn.query('SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ');
    await conn.query('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY');
  } catch (err) {
    await conns.give(host, conn, false);
    throw err;
  }
  const t = `${q(db)}.${q(table)}`;
  return {
    async objects(_table, sinceMs, onPage) {
      // Whole ms compared, not FROM_UNIXTIME(?): exact in every session time zone (also in the hour a
      // DST change repeats), and no double rounding at the boundary.
      const where = sinceMs === undefined ? '' : ' AND ROUND(UNIX_TIMESTAMP(r.ts) * 1000) >= ?';
      await keysetPages(async (after: number | undefined) => {
        const values: unknown[] = sinceMs === undefined ? [after ?? 0, pageRows] : [after ?? 0, Math.trunc(sinceMs), pageRows];
        // ROUND(UNIX_TIMESTAMP(ts) * 1000): TIMESTAMP(3) as unix ms whatever the session time zone.
        // data as the bytes the server sent (a view of the packet): they go into the Parquet page as they are.
        const [rows] = await conn.query({ sql: `SELECT r.local_id, r.data, CAST(ROUND(UNIX_TIMESTAMP(r.ts) * 1000) AS SIGNED) AS ms FROM ${t} r WHERE r.local_id > ?${where} ORDER BY r.local_id LIMIT ?`, values, rowsAsArray: true, typeCast: dataAsBytes });
        return (rows as Array<[number | string, Buffer, number | string]>).map(([id, data, ms]) => ({ localId: Number(id), data, ts: Number(ms) }));
      }, (r) => r.localId, pageRows, onPage);
    },
    async mappings(_table, onPage) {
      await keysetPages(async (after: [bigint, bigint] | undefined) => {
        // The keys bound as bigints (bare integers in the SQL): a quoted string would compare as a
        // DOUBLE on MySQL and older MariaDB, and IDs above 2^53 (shards >= 128) would skip rows.
        const where = after === undefined ? '' : 'WHERE (m.from_id, m.to_id) > (?, ?)';
        const [rows] = await conn.query({ sql: `SELECT CAST(m.from_id AS CHAR), CAST(m.to_id AS CHAR), m.\`sequence\` FROM ${t} m ${where} ORDER BY m.from_id, m.to_id LIMIT ?`, values: [...(after ?? []), pageRows], rowsAsArray: true });
        return (rows as Array<[string, string, number | string]>).map(([f, to, seq]) => ({ fromId: BigInt(f), toId: BigInt(to), sequence: Number(seq) }));
      }, (r): [bigint, bigint] => [r.fromId, r.toId], pageRows, onPage);
    },
    async close() {
      await conns.give(host, conn, await conn.query('COMMIT').then(() => true, () => false));
    },
  };
}

const qi = (n: string) => `"${n.replace(/"/g, '""')}"`;

/** Superuser clients of PostgreSQL standbys, `server(host)` naming each. */
export function postgresConnections(server: (host: string) => PostgresServer, database: string): HostConnections<pg.Client> {
  return new HostConnections(async (host) => {
    const s = server(host);
    const client = new pg.Client({ host: s.host, port: s.port, user: 'postgres', database, connectionTimeoutMillis: 5000 });
    client.on('error', () => undefined);
    await client.connect();
    return client;
  }, (c) => c.end());
}

/** A PostgreSQL standby's shard, read in one REPEATABLE READ transaction (a hot standby serves those) on the host's client. */
export async function postgresShardReader(conns: HostConnections<pg.Client>, host: string, shard: number, table: string, pageRows = PAGE_ROWS): Promise<ShardReader | undefined> {
  const schema = shardDatabaseName(shard);
  const client = await conns.take(host);
  try {
    const exists = await client.query('SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2', [schema, table]);
    if (exists.rowCount === 0) {
      await conns.give(host, client, true);
      return undefined;
    }
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  } catch (err) {
    await conns.give(host, client, false);
    throw err;
  }
  const t = `${qi(schema)}.${qi(table)}`;
  let copyFailed = false;
  return {
    async objects(_table, sinceMs, onPage) {
      try {
        await copyObjects(client, t, sinceMs, pageRows, onPage);
      } catch (err) {
        // A COPY left half read holds the connection (its COMMIT would wait for the rest forever):
        // close() drops it; pg's end() cuts a connection with a query under way.
        copyFailed = true;
        throw err;
      }
    },
    async mappings(_table, onPage) {
      await keysetPages(async (after: [bigint, bigint] | undefined) => {
        // Signed, as the column is (an ID with the top bit set is negative there, and sorts first).
        const where = after === undefined ? '' : 'WHERE (m.from_id, m.to_id) > ($2, $3)';
        const res = await client.query({ text: `SELECT m.from_id::text, m.to_id::text, m."sequence"::text FROM ${t} m ${where} ORDER BY m.from_id, m.to_id LIMIT $1`, values: [pageRows, ...(after ?? []).map((v) => String(BigInt.asIntN(64, v)))], rowMode: 'array' });
        // PostgreSQL BIGINT is signed: an id with the top bit set reads negative, stored as the same 64 bits.
        return (res.rows as Array<[string, string, string]>).map(([f, to, seq]) => ({ fromId: BigInt.asUintN(64, BigInt(f)), toId: BigInt.asUintN(64, BigInt(to)), sequence: Number(seq) }));
      }, (r): [bigint, bigint] => [r.fromId, r.toId], pageRows, onPage);
    },
    async close() {
      await conns.give(host, client, copyFailed ? false : await client.query('COMMIT').then(() => true, () => false));
    },
  };
}

/** A --since value: epoch ms, or an ISO time with a zone. */
export function parseSince(text: string): number {
  const t = text.trim();
  const ms = /^\d{1,15}$/.test(t) ? Number(t) : /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)$/.test(t) ? Date.parse(t) : Number.NaN;
  if (!Number.isFinite(ms)) throw new ShardKitError('INVALID_ARGUMENT', `--since ${JSON.stringify(text.slice(0, 60))} is not a time: give epoch ms or an ISO time with a zone (2026-11-28T10:42:00Z): nothing written`);
  return ms;
}
