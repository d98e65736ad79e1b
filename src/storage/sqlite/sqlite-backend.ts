import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import { ShardKitError } from '../../errors.js';
import { shardDatabaseName } from '../shard-names.js';
import type {
  BackendCapabilities, Fleet, MappingItem, MappingPage, MappingRow, MappingScan, ObjectKey, SchemaDef, ShardBackend, ShardRef, ObjectRecord,
} from '../shard-backend.js';
import {
  checkFleet, checkHost, checkLimit, checkLocalId, checkLookupKey, checkPairs, checkRef, checkScan, checkSequence, checkStoredId, checkText,
} from '../backend-args.js';
import { ShardFile, shardTemplate } from './shard-file.js';

export interface SqliteBackendOptions {
  /** Directory holding one sub-directory per host (`<dataDir>/<storage.dir>`). */
  root: string;
  schema: SchemaDef;
  /** Bound on open file handles; least recently used shards are closed first. */
  maxOpenShards?: number;
  /** Per-host directory overrides (config `hosts.<name>.dir`); relative paths resolve against `root`. */
  hostDirs?: Record<string, string | undefined>;
  /** How long a writer waits for another process's write lock before SHARD_UNAVAILABLE. */
  busyTimeoutMs?: number;
  /** NORMAL survives a killed process; FULL also survives an OS crash or power loss (slower commits). */
  synchronous?: 'normal' | 'full';
}

interface HostEntry {
  dir: string;
  paths: Array<string | undefined>;
}

type TableSql = Record<string, string>;

/**
 * local_id, data, ts: object reads take rows as arrays, cheaper than an object per row. Every
 * stmt() of selectOne/selectMany must ask for arrays: statements are cached by SQL text.
 */
type ObjectRow = [localId: number, data: string, ts: number];

const FILE = /^db([0-9]{5})\.sqlite$/;

/**
 * The embedded backend: a host is a directory, a logical shard is `db03429.sqlite` in it,
 * created on first write. better-sqlite3 is synchronous, so each call runs to completion
 * without interleaving in this process; other processes are held off by SQLite's locks
 * (busy_timeout) and IMMEDIATE transactions.
 */
export class SqliteBackend implements ShardBackend {
  readonly kind = 'sqlite';
  readonly supports: BackendCapabilities = { lazyShardCreation: true };
  readonly root: string;
  private readonly schema: SchemaDef;
  private readonly hostDirs: Record<string, string | undefined>;
  private readonly files: LRUCache<string, ShardFile>;
  private readonly fileOptions: { busyTimeoutMs: number; synchronous: 'normal' | 'full' };
  private readonly tables: Record<'types' | 'mappings' | 'keyspaces', Set<string>>;
  private readonly templates = new Map<Fleet, Buffer>();
  private readonly hosts = new Map<string, HostEntry>();
  /** SQL text per table, built once (the statement cache is keyed by it). */
  private readonly sql = new Map<string, TableSql>();
  private closed = false;

  constructor(options: SqliteBackendOptions) {
    this.root = resolve(options.root);
    this.schema = options.schema;
    this.hostDirs = options.hostDirs ?? {};
    this.fileOptions = { busyTimeoutMs: options.busyTimeoutMs ?? 5000, synchronous: options.synchronous ?? 'normal' };
    this.files = new LRUCache<string, ShardFile>({ max: options.maxOpenShards ?? 256, dispose: (file) => file.close() });
    for (const t of options.schema.types) this.sql.set(t.table, objectSql(t.table));
    for (const m of options.schema.mappings) this.sql.set(m.table, mappingSql(m.table));
    for (const k of options.schema.keyspaces) this.sql.set(k.table, lookupSql(k.table));
    this.tables = {
      types: new Set(options.schema.types.map((t) => t.table)),
      mappings: new Set(options.schema.mappings.map((m) => m.table)),
      keyspaces: new Set(options.schema.keyspaces.map((k) => k.table)),
    };
  }

  /** The directory of a host. */
  hostDir(host: string): string {
    return this.host(host).dir;
  }

  /** The file of a shard (whether or not it exists yet). */
  shardPath(ref: ShardRef): string {
    const h = this.host(ref.host);
    checkRef(ref, true);
    // Paths are built once per shard: this is on the path of every call.
    return (h.paths[ref.shard] ??= join(h.dir, `${shardDatabaseName(ref.shard)}.sqlite`));
  }

  private host(host: string): HostEntry {
    let h = this.hosts.get(host);
    if (h === undefined) {
      checkHost(host);
      const dir = this.hostDirs[host];
      h = { dir: dir === undefined || dir === '' ? join(this.root, host) : isAbsolute(dir) ? dir : resolve(this.root, dir), paths: [] };
      this.hosts.set(host, h);
    }
    return h;
  }

  /** Number of shard files currently open (bounded by maxOpenShards). */
  get openFiles(): number {
    return this.files.size;
  }

  async createShard(ref: ShardRef): Promise<void> {
    this.run(ref, () => void this.writable(ref));
  }

  async dropShard(ref: ShardRef): Promise<void> {
    this.run(ref, () => {
      const path = this.shardPath(ref);
      const file = this.readable(ref, true);
      if (file === undefined) return;
      if ((file.otherFleets & ~(ref.fleet === 'objects' ? 1 : 2)) !== 0) {
        file.dropFleet(ref.fleet, this.schema);
        return;
      }
      this.files.delete(path);
      file.close();
      for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
    });
  }

  async listShards(host: string, fleet: Fleet): Promise<number[]> {
    this.open();
    checkFleet(fleet);
    const dir = this.hostDir(host);
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw wrap(err, `cannot list host ${host}`);
    }
    const out: number[] = [];
    for (const name of names) {
      const m = FILE.exec(name);
      if (!m) continue;
      const ref: ShardRef = { host, shard: Number(m[1]), fleet };
      const file = this.run(ref, () => this.readable(ref, true));
      if (file?.holds(fleet)) out.push(ref.shard);
    }
    return out.sort((a, b) => a - b);
  }

  async insertObject(ref: ShardRef, table: string, data: string): Promise<ObjectRecord> {
    this.checkTable('types', table, ref);
    checkText(data);
    return this.run(ref, () => {
      const file = this.writable(ref);
      const ts = Date.now();
      const r = file.stmt(this.sql.get(table)!.insert!).run(data, ts);
      return { localId: Number(r.lastInsertRowid), data, createdAt: new Date(ts) };
    });
  }

  async getObjects(ref: ShardRef, keys: ObjectKey[]): Promise<(ObjectRecord | undefined)[]> {
    for (const k of keys) {
      this.checkTable('types', k.table, ref);
      checkLocalId(k.localId);
    }
    const out: (ObjectRecord | undefined)[] = new Array(keys.length).fill(undefined);
    return this.inExisting(ref, out, (file) => {
      if (keys.length === 0) return out;
      if (keys.length === 1) {
        const k = keys[0]!;
        const row = file.stmt(this.sql.get(k.table)!.selectOne!, false, true).get(k.localId) as ObjectRow | undefined;
        out[0] = row && toStored(row);
        return out;
      }
      const byTable = new Map<string, number[]>();
      keys.forEach((k, i) => {
        const list = byTable.get(k.table);
        if (list) list.push(i);
        else byTable.set(k.table, [i]);
      });
      for (const [table, idx] of byTable) {
        const rows = file
          .stmt(this.sql.get(table)!.selectMany!, false, true)
          .all(JSON.stringify(idx.map((i) => keys[i]!.localId))) as ObjectRow[];
        const found = new Map<number, ObjectRecord>();
        for (const row of rows) found.set(row[0], toStored(row));
        for (const i of idx) out[i] = found.get(keys[i]!.localId);
      }
      return out;
    });
  }

  async updateObject(ref: ShardRef, table: string, localId: number, fn: (data: string) => string | undefined): Promise<ObjectRecord | undefined> {
    this.checkTable('types', table, ref);
    checkLocalId(localId);
    return this.inExisting(ref, undefined, (file) => {
      // IMMEDIATE takes the write lock before the read: the SQLite form of SELECT ... FOR UPDATE.
      return file.transaction(() => {
        const row = file.stmt(this.sql.get(table)!.selectOne!, false, true).get(localId) as ObjectRow | undefined;
        if (row === undefined) return undefined;
        const next = fn(row[1]);
        if (next === undefined) return toStored(row);
        if (typeof next !== 'string') throw new ShardKitError('INVALID_ARGUMENT', 'update function must return JSON text or undefined');
        file.stmt(this.sql.get(table)!.update!).run(next, localId);
        return { localId, data: next, createdAt: new Date(row[2]) };
      });
    });
  }

  async deleteObject(ref: ShardRef, table: string, localId: number): Promise<boolean> {
    this.checkTable('types', table, ref);
    checkLocalId(localId);
    return this.inExisting(ref, false, (file) => file.stmt(this.sql.get(table)!.delete!).run(localId).changes > 0);
  }

  async addMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint, sequence: number): Promise<void> {
    this.checkTable('mappings', table, ref);
    checkStoredId(fromId, 'from id');
    checkStoredId(toId, 'to id');
    checkSequence(sequence);
    this.run(ref, () => {
      this.writable(ref)
        .stmt(this.sql.get(table)!.upsert!)
        .run(fromId, toId, BigInt(sequence));
    });
  }

  async listMappings(ref: ShardRef, table: string, fromId: bigint, page: MappingPage): Promise<MappingItem[]> {
    this.checkTable('mappings', table, ref);
    checkStoredId(fromId, 'from id');
    checkLimit(page.limit);
    if (page.order !== 'asc' && page.order !== 'desc') throw new ShardKitError('INVALID_ARGUMENT', 'order must be "asc" or "desc"');
    if (page.after !== undefined) {
      checkSequence(page.after.sequence);
      checkStoredId(page.after.toId, 'cursor id');
    }
    return this.inExisting(ref, [], (file) => {
      const sql = this.sql.get(table)!;
      const desc = page.order === 'desc';
      // Keyset paging: a row-value comparison on the (from_id, sequence, to_id) index is one range scan.
      const rows = (page.after === undefined
        ? file.stmt(desc ? sql.listDesc! : sql.listAsc!, true, true).all(fromId, page.limit)
        : file.stmt(desc ? sql.listDescAfter! : sql.listAscAfter!, true, true).all(fromId, BigInt(page.after.sequence), page.after.toId, page.limit)) as Array<[bigint, bigint]>;
      const out = new Array<MappingItem>(rows.length);
      for (let i = 0; i < rows.length; i++) out[i] = { toId: rows[i]![0], sequence: Number(rows[i]![1]) };
      return out;
    });
  }

  async removeMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint): Promise<boolean> {
    this.checkTable('mappings', table, ref);
    checkStoredId(fromId, 'from id');
    checkStoredId(toId, 'to id');
    return this.inExisting(ref, false, (file) => file.stmt(this.sql.get(table)!.remove!).run(fromId, toId).changes > 0);
  }

  async scanMappings(ref: ShardRef, table: string, page: MappingScan): Promise<MappingRow[]> {
    this.checkTable('mappings', table, ref);
    checkScan(page);
    return this.inExisting(ref, [], (file) => {
      const sql = this.sql.get(table)!;
      const rows = (page.after === undefined
        ? file.stmt(sql.scanFirst!, true, true).all(page.limit)
        : file.stmt(sql.scanAfter!, true, true).all(page.after.fromId, page.after.toId, page.limit)) as Array<[bigint, bigint, bigint]>;
      return rows.map(([fromId, toId, sequence]) => ({ fromId, toId, sequence: Number(sequence) }));
    });
  }

  async getMappings(ref: ShardRef, table: string, pairs: ReadonlyArray<{ fromId: bigint; toId: bigint }>): Promise<(number | undefined)[]> {
    this.checkTable('mappings', table, ref);
    checkPairs(pairs);
    const out: (number | undefined)[] = new Array(pairs.length).fill(undefined);
    // In process, point reads of the primary key are the one query: no round trips to save.
    return this.inExisting(ref, out, (file) => {
      const stmt = file.stmt(this.sql.get(table)!.getOne!, true, true);
      pairs.forEach((p, i) => {
        const row = stmt.get(p.fromId, p.toId) as [bigint] | undefined;
        if (row !== undefined) out[i] = Number(row[0]);
      });
      return out;
    });
  }

  async countMappings(ref: ShardRef, table: string, fromId: bigint): Promise<number> {
    this.checkTable('mappings', table, ref);
    checkStoredId(fromId, 'from id');
    return this.inExisting(ref, 0, (file) => Number(file.stmt(this.sql.get(table)!.count!).pluck().get(fromId) as bigint));
  }

  async putLookup(ref: ShardRef, table: string, key: string, value: bigint): Promise<void> {
    this.checkTable('keyspaces', table, ref);
    checkLookupKey(key);
    checkStoredId(value, 'lookup value');
    this.run(ref, () => {
      this.writable(ref)
        .stmt(this.sql.get(table)!.put!)
        .run(key, value);
    });
  }

  async getLookup(ref: ShardRef, table: string, key: string): Promise<bigint | undefined> {
    this.checkTable('keyspaces', table, ref);
    checkLookupKey(key);
    return this.inExisting(ref, undefined, (file) => file.stmt(this.sql.get(table)!.get!).pluck().get(key) as bigint | undefined);
  }

  async deleteLookup(ref: ShardRef, table: string, key: string): Promise<boolean> {
    this.checkTable('keyspaces', table, ref);
    checkLookupKey(key);
    return this.inExisting(ref, false, (file) => file.stmt(this.sql.get(table)!.delete!).run(key).changes > 0);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.files.clear();
  }

  private open(): void {
    if (this.closed) throw new ShardKitError('CLOSED', 'the sqlite backend is closed');
  }

  private checkTable(kind: 'types' | 'mappings' | 'keyspaces', table: string, ref: ShardRef): void {
    // The host name is checked once per host when its path is first built (this.host()).
    checkRef(ref, this.hosts.has(ref.host));
    const fleet: Fleet = kind === 'keyspaces' ? 'lookups' : 'objects';
    if (ref.fleet !== fleet) throw new ShardKitError('INVALID_ARGUMENT', `table ${String(table)} is not on the ${ref.fleet} fleet`);
    if (!this.tables[kind].has(table)) throw new ShardKitError('INVALID_ARGUMENT', `unknown table ${JSON.stringify(String(table).slice(0, 70))}`);
  }

  /** Runs storage work, mapping SQLite and file-system failures to SHARD_UNAVAILABLE. */
  private run<T>(ref: ShardRef, work: () => T): T {
    this.open();
    try {
      return work();
    } catch (err) {
      // Errors thrown by an update function pass through unchanged.
      if (err instanceof Database.SqliteError || isFsError(err)) throw wrap(err, `shard ${ref.shard} on ${ref.host}`);
      throw err;
    }
  }

  /** `work` on the shard's file when the shard exists, else `absent` (reads never create a shard). */
  private inExisting<T>(ref: ShardRef, absent: T, work: (file: ShardFile) => T): T {
    return this.run(ref, () => {
      const file = this.readable(ref);
      return file === undefined ? absent : work(file);
    });
  }

  /** The open file of a shard that exists, or undefined; never creates one. */
  private readable(ref: ShardRef, anyFleet = false): ShardFile | undefined {
    const path = this.shardPath(ref);
    let file = this.files.get(path);
    if (file === undefined) {
      if (!existsSync(path)) return undefined;
      file = ShardFile.open(path, false, this.fileOptions);
      this.files.set(path, file);
    }
    if (anyFleet) return file;
    if (!file.holds(ref.fleet)) return undefined;
    file.ensure(ref.fleet, this.schema);
    return file;
  }

  private template(fleet: Fleet): Buffer {
    let t = this.templates.get(fleet);
    if (t === undefined) {
      t = shardTemplate(this.schema, fleet);
      this.templates.set(fleet, t);
    }
    return t;
  }

  /** The open file of a shard, created with all its tables when missing. */
  private writable(ref: ShardRef): ShardFile {
    const path = this.shardPath(ref);
    let file = this.files.get(path);
    if (file === undefined) {
      mkdirSync(this.hostDir(ref.host), { recursive: true });
      file = ShardFile.open(path, { template: this.template(ref.fleet) }, this.fileOptions);
      this.files.set(path, file);
    }
    file.ensure(ref.fleet, this.schema);
    return file;
  }
}

function objectSql(t: string): TableSql {
  return {
    insert: `INSERT INTO "${t}" (data, ts) VALUES (?, ?)`,
    selectOne: `SELECT local_id, data, ts FROM "${t}" WHERE local_id = ?`,
    // One statement whatever the number of keys: the ids travel as one JSON array.
    selectMany: `SELECT local_id, data, ts FROM "${t}" WHERE local_id IN (SELECT value FROM json_each(?))`,
    update: `UPDATE "${t}" SET data = ? WHERE local_id = ?`,
    delete: `DELETE FROM "${t}" WHERE local_id = ?`,
  };
}

function mappingSql(t: string): TableSql {
  const list = (op: string, dir: string) =>
    `SELECT to_id, sequence FROM "${t}" WHERE from_id = ?${op ? ` AND (sequence, to_id) ${op} (?, ?)` : ''} ORDER BY sequence ${dir}, to_id ${dir} LIMIT ?`;
  return {
    upsert: `INSERT INTO "${t}" (from_id, to_id, sequence) VALUES (?, ?, ?) ON CONFLICT (from_id, to_id) DO UPDATE SET sequence = excluded.sequence`,
    listAsc: list('', 'ASC'),
    listDesc: list('', 'DESC'),
    listAscAfter: list('>', 'ASC'),
    listDescAfter: list('<', 'DESC'),
    remove: `DELETE FROM "${t}" WHERE from_id = ? AND to_id = ?`,
    count: `SELECT count(*) FROM "${t}" WHERE from_id = ?`,
    // Whole-table scans walk the primary key (from_id, to_id); a row value resumes after a row.
    scanFirst: `SELECT from_id, to_id, sequence FROM "${t}" ORDER BY from_id, to_id LIMIT ?`,
    scanAfter: `SELECT from_id, to_id, sequence FROM "${t}" WHERE (from_id, to_id) > (?, ?) ORDER BY from_id, to_id LIMIT ?`,
    getOne: `SELECT sequence FROM "${t}" WHERE from_id = ? AND to_id = ?`,
  };
}

function lookupSql(t: string): TableSql {
  return {
    put: `INSERT INTO "${t}" ("key", "value") VALUES (?, ?) ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value"`,
    get: `SELECT "value" FROM "${t}" WHERE "key" = ?`,
    delete: `DELETE FROM "${t}" WHERE "key" = ?`,
  };
}

function toStored(row: ObjectRow): ObjectRecord {
  return { localId: row[0], data: row[1], createdAt: new Date(row[2]) };
}

function isFsError(err: unknown): boolean {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).syscall === 'string';
}

function wrap(err: unknown, where: string): ShardKitError {
  const code = (err as { code?: string }).code ?? 'ERROR';
  return new ShardKitError('SHARD_UNAVAILABLE', `${where}: ${code}: ${(err as Error).message}`, { cause: err });
}
