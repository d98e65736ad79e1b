import { readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { sqliteDriver } from './sqlite-driver.js';
import { ShardKitError } from '../../errors.js';
import { CheckedBackend, type Pair, type UpdateFn } from '../checked-backend.js';
import type {
  BackendCapabilities, Fleet, LookupRow, LookupScan, MappingItem, MappingPage, MappingRow, MappingScan, ObjectKey, ObjectScan, SchemaDef, ShardRef, ObjectRecord,
} from '../shard-backend.js';
import { isMovedFile, movedError, type ShardFile } from './shard-file.js';
import { ShardFiles } from './shard-files.js';
import { isFenceRefusal } from './sqlite-write-fence.js';
import { lookupSql, mappingSql, objectSql, SEQUENCE_SQL, type TableSql } from './sqlite-statements.js';

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

/**
 * local_id, data, ts: object reads take rows as arrays, cheaper than an object per row. Every
 * stmt() of selectOne/selectMany must ask for arrays: statements are cached by SQL text.
 */
type ObjectRow = [localId: number, data: string, ts: number];

const FILE = /^db([0-9]{5})\.sqlite$/;

/**
 * The embedded backend: a host is a directory, a logical shard is `db03429.sqlite` in it,
 * created on first write (shard-files.ts). better-sqlite3 is synchronous, so each call runs to
 * completion without interleaving in this process; other processes are held off by SQLite's
 * locks (busy_timeout) and IMMEDIATE transactions. Arguments are checked by CheckedBackend.
 */
export class SqliteBackend extends CheckedBackend {
  readonly kind = 'sqlite';
  readonly supports: BackendCapabilities = { lazyShardCreation: true, shardCopy: true };
  readonly root: string;
  private readonly files: ShardFiles;
  /** SQL text per table, built once (the statement cache is keyed by it). */
  private readonly sql = new Map<string, TableSql>();

  constructor(options: SqliteBackendOptions) {
    super(options.schema, 'sqlite');
    this.root = resolve(options.root);
    this.files = new ShardFiles({
      root: this.root,
      schema: options.schema,
      maxOpenShards: options.maxOpenShards ?? 256,
      hostDirs: options.hostDirs ?? {},
      file: { busyTimeoutMs: options.busyTimeoutMs ?? 5000, synchronous: options.synchronous ?? 'normal' },
    });
    for (const t of options.schema.types) this.sql.set(t.table, objectSql(t.table));
    for (const m of options.schema.mappings) this.sql.set(m.table, mappingSql(m.table));
    for (const k of options.schema.keyspaces) this.sql.set(k.table, lookupSql(k.table));
  }

  /** The directory of a host. */
  hostDir(host: string): string {
    return this.files.hostDir(host);
  }

  /** The file of a shard (whether or not it exists yet). */
  shardPath(ref: ShardRef): string {
    return this.files.shardPath(ref);
  }

  /** Number of shard files currently open (bounded by maxOpenShards). */
  get openFiles(): number {
    return this.files.openFiles;
  }

  protected _createShard(ref: ShardRef): void {
    this.run(ref, () => void this.files.writable(ref));
  }

  protected _dropShard(ref: ShardRef): void {
    this.run(ref, () => {
      const file = this.files.readable(ref, true);
      if (file === undefined) return;
      if ((file.otherFleets & ~(ref.fleet === 'objects' ? 1 : 2)) !== 0) {
        file.dropFleet(ref.fleet, this.schema);
        return;
      }
      this.files.remove(ref, file);
    });
  }

  protected _listShards(host: string, fleet: Fleet): number[] {
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
      const file = this.run(ref, () => {
        const f = this.files.readable(ref, true);
        f?.refreshFleets();
        return f;
      });
      if (file?.holds(fleet) && !file.movedAway()) out.push(ref.shard);
    }
    return out.sort((a, b) => a - b);
  }

  protected _insertObject(ref: ShardRef, table: string, data: string): ObjectRecord {
    return this.run(ref, () => {
      const file = this.files.writable(ref);
      const ts = Date.now();
      const r = file.stmt(this.sql.get(table)!.insert!).run(data, ts);
      return { localId: Number(r.lastInsertRowid), data, createdAt: new Date(ts) };
    });
  }

  protected _insertObjects(ref: ShardRef, table: string, data: string[]): ObjectRecord[] {
    return this.run(ref, () => {
      const file = this.files.writable(ref);
      const ts = Date.now();
      const insert = file.stmt(this.sql.get(table)!.insert!);
      return file.transaction(() => data.map((text) => ({ localId: Number(insert.run(text, ts).lastInsertRowid), data: text, createdAt: new Date(ts) })));
    });
  }

  protected _getObjects(ref: ShardRef, keys: ObjectKey[]): (ObjectRecord | undefined)[] {
    if (keys.length === 1) {
      // The single get (every GET /v1/objects/{id}): no closures and no array to fill.
      const k = keys[0]!;
      try {
        const row = this.files.readable(ref)?.stmt(this.sql.get(k.table)!.selectOne!, false, true).get(k.localId) as ObjectRow | undefined;
        return [row && toRecord(row)];
      } catch (err) {
        return this.failed(ref, err);
      }
    }
    const out: (ObjectRecord | undefined)[] = new Array(keys.length).fill(undefined);
    return this.inExisting(ref, out, (file) => {
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
        for (const row of rows) found.set(row[0], toRecord(row));
        for (const i of idx) out[i] = found.get(keys[i]!.localId);
      }
      return out;
    });
  }

  protected _updateObject(ref: ShardRef, table: string, localId: number, fn: UpdateFn): ObjectRecord | undefined {
    return this.inExisting(ref, undefined, (file) => {
      // IMMEDIATE takes the write lock before the read: the SQLite form of SELECT ... FOR UPDATE.
      return file.transaction(() => {
        const row = file.stmt(this.sql.get(table)!.selectOne!, false, true).get(localId) as ObjectRow | undefined;
        if (row === undefined) return undefined;
        const next = fn(row[1]);
        if (next === undefined) return toRecord(row);
        file.stmt(this.sql.get(table)!.update!).run(next, localId);
        return { localId, data: next, createdAt: new Date(row[2]) };
      });
    });
  }

  protected _deleteObject(ref: ShardRef, table: string, localId: number): boolean {
    return this.inExisting(ref, false, (file) => file.stmt(this.sql.get(table)!.delete!).run(localId).changes > 0);
  }

  protected _addMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint, sequence: number): void {
    this.run(ref, () => {
      this.files.writable(ref).stmt(this.sql.get(table)!.upsert!).run(fromId, toId, BigInt(sequence));
    });
  }

  protected _listMappings(ref: ShardRef, table: string, fromId: bigint, page: MappingPage): MappingItem[] {
    return this.inExisting(ref, [], (file) => {
      const sql = this.sql.get(table)!;
      const desc = page.order === 'desc';
      const rows = (page.after === undefined
        ? file.stmt(desc ? sql.listDesc! : sql.listAsc!, true, true).all(fromId, page.limit)
        : file.stmt(desc ? sql.listDescAfter! : sql.listAscAfter!, true, true).all(fromId, BigInt(page.after.sequence), page.after.toId, page.limit)) as Array<[bigint, bigint]>;
      const out = new Array<MappingItem>(rows.length);
      for (let i = 0; i < rows.length; i++) out[i] = { toId: rows[i]![0], sequence: Number(rows[i]![1]) };
      return out;
    });
  }

  protected _removeMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint): boolean {
    return this.inExisting(ref, false, (file) => file.stmt(this.sql.get(table)!.remove!).run(fromId, toId).changes > 0);
  }

  protected _scanMappings(ref: ShardRef, table: string, page: MappingScan): MappingRow[] {
    return this.inExisting(ref, [], (file) => {
      const sql = this.sql.get(table)!;
      const rows = (page.after === undefined
        ? file.stmt(sql.scanFirst!, true, true).all(page.limit)
        : file.stmt(sql.scanAfter!, true, true).all(page.after.fromId, page.after.toId, page.limit)) as Array<[bigint, bigint, bigint]>;
      return rows.map(([fromId, toId, sequence]) => ({ fromId, toId, sequence: Number(sequence) }));
    });
  }

  protected _getMappings(ref: ShardRef, table: string, pairs: ReadonlyArray<Pair>): (number | undefined)[] {
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

  protected _countMappings(ref: ShardRef, table: string, fromId: bigint): number {
    return this.inExisting(ref, 0, (file) => Number(file.stmt(this.sql.get(table)!.count!).pluck().get(fromId) as bigint));
  }

  protected _countObjects(ref: ShardRef): number {
    return this.inExisting(ref, 0, (file) => {
      let n = 0;
      for (const t of this.schema.types) n += Number(file.stmt(this.sql.get(t.table)!.count!).pluck().get() as number | bigint);
      return n;
    });
  }

  protected _putLookup(ref: ShardRef, table: string, key: string, value: bigint): void {
    this.run(ref, () => {
      this.files.writable(ref).stmt(this.sql.get(table)!.put!).run(key, value);
    });
  }

  protected _getLookup(ref: ShardRef, table: string, key: string): bigint | undefined {
    return this.inExisting(ref, undefined, (file) => file.stmt(this.sql.get(table)!.get!).pluck().get(key) as bigint | undefined);
  }

  protected _deleteLookup(ref: ShardRef, table: string, key: string): boolean {
    return this.inExisting(ref, false, (file) => file.stmt(this.sql.get(table)!.delete!).run(key).changes > 0);
  }

  protected _close(): void {
    this.files.closeAll();
  }

  // ShardCopy (shard-backend.ts): `shardkit migrate` reads the embedded store with these.

  protected override _scanObjects(ref: ShardRef, table: string, page: ObjectScan): ObjectRecord[] {
    return this.inExisting(ref, [], (file) => {
      const sql = this.sql.get(table)!;
      const rows = (page.after === undefined
        ? file.stmt(sql.scanFirst!, false, true).all(page.limit)
        : file.stmt(sql.scanAfter!, false, true).all(page.after, page.limit)) as ObjectRow[];
      return rows.map(toRecord);
    });
  }

  protected override _putObjectRows(ref: ShardRef, table: string, rows: ReadonlyArray<ObjectRecord>): void {
    this.run(ref, () => {
      const file = this.files.writable(ref);
      const put = file.stmt(this.sql.get(table)!.putRow!);
      // An explicit local id above the AUTOINCREMENT counter moves the counter (SQLite does it).
      file.transaction(() => {
        for (const r of rows) put.run(r.localId, r.data, r.createdAt.getTime());
      });
    });
  }

  protected override _objectIdHighWater(ref: ShardRef, table: string): number {
    return this.inExisting(ref, 0, (file) => {
      const seq = file.stmt(SEQUENCE_SQL.get, false).pluck().get(table) as number | undefined;
      const max = file.stmt(this.sql.get(table)!.maxId!, false).pluck().get() as number;
      return Math.max(seq ?? 0, max);
    });
  }

  protected override _raiseObjectIdHighWater(ref: ShardRef, table: string, highWater: number): void {
    this.run(ref, () => {
      const file = this.files.writable(ref);
      file.transaction(() => {
        file.stmt(SEQUENCE_SQL.raise).run(highWater, table, highWater);
        file.stmt(SEQUENCE_SQL.insert).run(table, highWater, table);
      });
    });
  }

  protected override _putMappingRows(ref: ShardRef, table: string, rows: ReadonlyArray<MappingRow>): void {
    this.run(ref, () => {
      const file = this.files.writable(ref);
      const put = file.stmt(this.sql.get(table)!.upsert!);
      file.transaction(() => {
        for (const r of rows) put.run(r.fromId, r.toId, BigInt(r.sequence));
      });
    });
  }

  protected override _scanLookups(ref: ShardRef, table: string, page: LookupScan): LookupRow[] {
    return this.inExisting(ref, [], (file) => {
      const sql = this.sql.get(table)!;
      const rows = (page.after === undefined
        ? file.stmt(sql.scanFirst!, true, true).all(page.limit)
        : file.stmt(sql.scanAfter!, true, true).all(page.after, page.limit)) as Array<[string, bigint]>;
      return rows.map(([key, value]) => ({ key, value }));
    });
  }

  protected override _putLookupRows(ref: ShardRef, table: string, rows: ReadonlyArray<LookupRow>): void {
    this.run(ref, () => {
      const file = this.files.writable(ref);
      const put = file.stmt(this.sql.get(table)!.put!);
      file.transaction(() => {
        for (const r of rows) put.run(r.key, r.value);
      });
    });
  }

  /** Runs storage work, mapping SQLite and file-system failures to SHARD_UNAVAILABLE. */
  private run<T>(ref: ShardRef, work: () => T): T {
    try {
      return work();
    } catch (err) {
      return this.failed(ref, err);
    }
  }

  /** Maps SQLite and file-system failures of a shard's work to SHARD_UNAVAILABLE (a fence to its own error). */
  private failed(ref: ShardRef, err: unknown): never {
    // A table gone from a file a move fenced: the fence error, which ShardKit answers by
    // re-reading the map (the statement changed nothing). The handle is forgotten when its own
    // file was the fenced one, so the retry opens whatever the path holds by then.
    if (err instanceof sqliteDriver().SqliteError && /no such table/.test(err.message)) {
      const path = this.files.shardPath(ref);
      if (this.files.forgetMoved(ref) || isMovedFile(path)) throw movedError(path, err);
    }
    // A migration's write fence (sqlite-write-fence.ts): nothing was written, and the caller
    // may retry (the fence lifts itself, or the store has moved to its new fleet).
    if (err instanceof sqliteDriver().SqliteError && isFenceRefusal(err)) {
      throw new ShardKitError('SHARD_MOVING', `shard ${ref.shard} on ${ref.host}: ${err.message}`, { cause: err, details: { shard: ref.shard, retryAfterSeconds: 1 } });
    }
    // Errors thrown by an update function pass through unchanged.
    if (err instanceof sqliteDriver().SqliteError || isFsError(err)) throw wrap(err, `shard ${ref.shard} on ${ref.host}`);
    throw err;
  }

  /** `work` on the shard's file when the shard exists, else `absent` (reads never create a shard). */
  private inExisting<T>(ref: ShardRef, absent: T, work: (file: ShardFile) => T): T {
    return this.run(ref, () => {
      const file = this.files.readable(ref);
      return file === undefined ? absent : work(file);
    });
  }
}

function toRecord(row: ObjectRow): ObjectRecord {
  return { localId: row[0], data: row[1], createdAt: new Date(row[2]) };
}

function isFsError(err: unknown): boolean {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).syscall === 'string';
}

function wrap(err: unknown, where: string): ShardKitError {
  const code = (err as { code?: string }).code ?? 'ERROR';
  return new ShardKitError('SHARD_UNAVAILABLE', `${where}: ${code}: ${(err as Error).message}`, { cause: err });
}
