import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { ShardKitError } from '../../errors.js';
import { MOVED_BIT, MOVED_TABLE_PREFIX } from '../../storage/sqlite/index.js';
import type { MoveRecord } from '../../topology/shard-map.js';
import type { ChunkMismatch, MoveEngine, VerifyReport } from '../move-engine.js';
import { addTableResult, emptyReport, hashRows, keyText, moveShards } from '../move-shared.js';

/** Rows per verify chunk. */
const CHUNK_ROWS = 1000;

export interface SqliteMoveEngineOptions {
  /** The file of shard `shard` on `host` (SqliteBackend.shardPath). */
  shardPath: (host: string, shard: number) => string;
  busyTimeoutMs?: number;
}

/**
 * Shard moves on the embedded default: a host is a directory, a shard a file. SQLite has no
 * replication, so the copy happens under the freeze: fence the source file (its tables renamed
 * aside inside one IMMEDIATE transaction, which waits for in-flight writers, plus MOVED_BIT so a
 * fresh handle cannot re-create them), copy it with SQLite's online backup API, rename the
 * tables back in the copy and put it in place atomically. The write pause therefore grows with
 * the shard's size (docs/moves.md).
 */
export class SqliteMoveEngine implements MoveEngine {
  readonly kind = 'sqlite';
  readonly droppedUnit = 'file(s)';
  private readonly shardPath: (host: string, shard: number) => string;
  private readonly busyTimeoutMs: number;

  constructor(options: SqliteMoveEngineOptions) {
    this.shardPath = options.shardPath;
    this.busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  }

  async prepare(move: MoveRecord): Promise<Record<string, string | number | boolean>> {
    // The copy waits for the fence; here only check that the target does not already serve data
    // for these shards (a leftover of an earlier move that was never dropped).
    let existing = 0;
    for (const s of moveShards(move)) {
      const path = this.shardPath(move.target.master, s);
      if (!existsSync(path)) continue;
      const db = new Database(path, { readonly: true, timeout: this.busyTimeoutMs });
      try {
        const bits = Number(db.pragma('user_version', { simple: true }));
        if ((bits & MOVED_BIT) === 0) {
          throw new ShardKitError('ALREADY_EXISTS', `${path} already exists on the target ${move.target.master}: drop it (or move it away) before moving shard ${s} there`);
        }
      } finally {
        db.close();
      }
      existing++;
    }
    let files = 0;
    for (const s of moveShards(move)) if (existsSync(this.shardPath(move.source.master, s))) files++;
    return { files, replacing: existing };
  }

  async lag(): Promise<number> {
    return 0;
  }

  async fence(move: MoveRecord): Promise<void> {
    for (const s of moveShards(move)) fenceFile(this.shardPath(move.source.master, s), this.busyTimeoutMs);
  }

  async catchUp(move: MoveRecord, onProgress?: (done: number, total: number) => void): Promise<void> {
    const total = move.range[1] - move.range[0] + 1;
    let done = 0;
    for (const s of moveShards(move)) {
      await copyFenced(this.shardPath(move.source.master, s), this.shardPath(move.target.master, s), this.busyTimeoutMs);
      onProgress?.(++done, total);
    }
  }

  async verify(move: MoveRecord): Promise<VerifyReport> {
    const report = emptyReport();
    for (const s of moveShards(move)) {
      const r = compareFiles(s, this.shardPath(move.source.master, s), this.shardPath(move.target.master, s));
      report.shards++;
      report.tables += r.tables;
      addTableResult(report, r);
    }
    return report;
  }

  async undo(move: MoveRecord): Promise<void> {
    for (const s of moveShards(move)) {
      unfenceFile(this.shardPath(move.source.master, s), this.busyTimeoutMs);
      // Only copies this move made: the target never served them (the switch did not happen).
      // Without a completed prepare (its detail.files; an abort records detail.abortReason of its
      // own) there are none: a prepare that refused the target's own file (ALREADY_EXISTS) leaves
      // that file, which is someone else's data.
      if (move.detail?.files !== undefined) removeShardFile(this.shardPath(move.target.master, s));
    }
  }

  async dropMoved(move: MoveRecord, options: { movedBack?: boolean } = {}): Promise<number> {
    // Moved back: the source's file is the live shard again (the old one went with the move back).
    if (options.movedBack) return 0;
    let dropped = 0;
    for (const s of moveShards(move)) {
      const path = this.shardPath(move.source.master, s);
      if (!existsSync(path)) continue;
      if (!isFenced(path, this.busyTimeoutMs)) {
        throw new ShardKitError('MOVE_FENCE_MISMATCH', `${path} is not fenced: refusing to drop a shard file that may still serve (move ${move.id})`);
      }
      removeShardFile(path);
      dropped++;
    }
    return dropped;
  }

  async close(): Promise<void> {}
}

function openWal(path: string, busyTimeoutMs: number): Database.Database {
  const db = new Database(path, { timeout: busyTimeoutMs });
  db.pragma('journal_mode = WAL');
  return db;
}

function userTables(db: Database.Database): string[] {
  return db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name").pluck().all() as string[];
}

const quote = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/**
 * The fence: in one IMMEDIATE transaction (it waits for the writer in flight, so nothing
 * acknowledged is left behind), every table is renamed aside and MOVED_BIT set. Statements of
 * other processes then fail with "no such table" (SHARD_MOVED). A shard that was never created
 * gets an empty fenced file, so a stale service cannot create it on the old host. Idempotent.
 */
export function fenceFile(path: string, busyTimeoutMs = 5000): void {
  mkdirSync(dirname(path), { recursive: true });
  const db = openWal(path, busyTimeoutMs);
  try {
    db.transaction(() => {
      for (const t of userTables(db)) if (!t.startsWith(MOVED_TABLE_PREFIX)) db.exec(`ALTER TABLE ${quote(t)} RENAME TO ${quote(MOVED_TABLE_PREFIX + t)}`);
      const bits = Number(db.pragma('user_version', { simple: true }));
      if ((bits & MOVED_BIT) === 0) db.pragma(`user_version = ${bits | MOVED_BIT}`);
    }).immediate();
  } finally {
    db.close();
  }
}

/** Undoes fenceFile (abort): tables back under their names, MOVED_BIT cleared; an empty placeholder is removed. */
export function unfenceFile(path: string, busyTimeoutMs = 5000): void {
  if (!existsSync(path)) return;
  const db = openWal(path, busyTimeoutMs);
  let empty = false;
  try {
    db.transaction(() => {
      const bits = Number(db.pragma('user_version', { simple: true }));
      const tables = userTables(db);
      for (const t of tables) if (t.startsWith(MOVED_TABLE_PREFIX)) db.exec(`ALTER TABLE ${quote(t)} RENAME TO ${quote(t.slice(MOVED_TABLE_PREFIX.length))}`);
      if ((bits & MOVED_BIT) !== 0) db.pragma(`user_version = ${bits & ~MOVED_BIT}`);
      empty = tables.length === 0 && (bits & ~MOVED_BIT) === 0;
    }).immediate();
  } finally {
    db.close();
  }
  if (empty) removeShardFile(path);
}

export function isFenced(path: string, busyTimeoutMs = 5000): boolean {
  const db = new Database(path, { readonly: true, timeout: busyTimeoutMs });
  try {
    return (Number(db.pragma('user_version', { simple: true })) & MOVED_BIT) !== 0;
  } finally {
    db.close();
  }
}

function removeShardFile(path: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
}

/**
 * Copies a fenced source file to `target` with the online backup API (WAL content included),
 * renames the tables back and clears MOVED_BIT in the copy, then renames it into place. An
 * empty placeholder (the shard never existed) copies as nothing.
 */
export async function copyFenced(source: string, target: string, busyTimeoutMs = 5000): Promise<void> {
  if (!existsSync(source)) return;
  const src = new Database(source, { readonly: true, timeout: busyTimeoutMs });
  const tmp = `${target}.moving-${process.pid}.tmp`;
  try {
    const bits = Number(src.pragma('user_version', { simple: true }));
    if ((bits & MOVED_BIT) === 0) throw new ShardKitError('MOVE_FENCE_MISMATCH', `${source} is not fenced: refusing to copy a shard that still takes writes`);
    if (userTables(src).length === 0) {
      removeShardFile(target);
      return;
    }
    mkdirSync(dirname(target), { recursive: true });
    removeShardFile(tmp);
    await src.backup(tmp);
  } finally {
    src.close();
  }
  const dst = new Database(tmp, { timeout: busyTimeoutMs });
  try {
    // A private temp file, fsynced once below and discarded on a crash: no journal, no syncs per commit.
    dst.pragma('journal_mode = OFF');
    dst.pragma('synchronous = OFF');
    dst.transaction(() => {
      for (const t of userTables(dst)) if (t.startsWith(MOVED_TABLE_PREFIX)) dst.exec(`ALTER TABLE ${quote(t)} RENAME TO ${quote(t.slice(MOVED_TABLE_PREFIX.length))}`);
      const b = Number(dst.pragma('user_version', { simple: true }));
      dst.pragma(`user_version = ${b & ~MOVED_BIT}`);
    }).immediate();
    // Back to WAL (what every shard file uses); the file is complete, with no -wal beside it.
    dst.pragma('journal_mode = WAL');
    dst.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    dst.close();
  }
  const fd = openSync(tmp, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  for (const suffix of ['-wal', '-shm']) rmSync(target + suffix, { force: true });
  renameSync(tmp, target);
  removeShardFile(tmp);
}

interface TableInfo {
  name: string;
  keys: string[];
  columns: string[];
}

function tableInfo(db: Database.Database, prefix: string): TableInfo[] {
  return userTables(db)
    .filter((t) => (prefix === '' ? !t.startsWith(MOVED_TABLE_PREFIX) : t.startsWith(prefix)))
    .map((t) => {
      const cols = db.prepare(`PRAGMA table_info(${quote(t)})`).all() as Array<{ name: string; pk: number }>;
      const keys = cols.filter((c) => Number(c.pk) > 0).sort((a, b) => Number(a.pk) - Number(b.pk)).map((c) => c.name);
      return { name: t.slice(prefix.length), keys: keys.length > 0 ? keys : ['rowid'], columns: cols.map((c) => c.name) };
    });
}

/** Opens a shard file for verify: its live tables, or the fenced ones (prefix) when a move fenced it. */
function openForVerify(path: string): { db: Database.Database; prefix: string } | undefined {
  if (!existsSync(path)) return undefined;
  const db = new Database(path, { readonly: true, timeout: 5000 });
  db.defaultSafeIntegers(true);
  const fenced = (Number(db.pragma('user_version', { simple: true })) & MOVED_BIT) !== 0;
  return { db, prefix: fenced ? MOVED_TABLE_PREFIX : '' };
}

/**
 * Compares two copies of one shard table by table, in primary-key chunks of CHUNK_ROWS: the
 * source chunk's key range is read from both sides and hashed; a mismatching chunk is reported
 * with its key range and the row counts of each side. Rows only on the target past the last
 * source key are a chunk of their own.
 */
export function compareFiles(shard: number, sourcePath: string, targetPath: string): VerifyReport {
  const report = emptyReport(1);
  const a = openForVerify(sourcePath);
  const b = openForVerify(targetPath);
  try {
    const ta = a === undefined ? [] : tableInfo(a.db, a.prefix);
    const tb = b === undefined ? [] : tableInfo(b.db, b.prefix);
    const names = new Set([...ta, ...tb].map((t) => t.name));
    for (const name of [...names].sort()) {
      const ia = ta.find((t) => t.name === name);
      const ib = tb.find((t) => t.name === name);
      const keys = (ia ?? ib)!.keys;
      report.tables++;
      const reader = (side: { db: Database.Database; prefix: string } | undefined, info: TableInfo | undefined) => {
        if (side === undefined || info === undefined) return undefined;
        const t = quote(side.prefix + name);
        const k = keys.map(quote).join(', ');
        const tuple = keys.length === 1 ? k : `(${k})`;
        const qs = keys.length === 1 ? '?' : `(${keys.map(() => '?').join(', ')})`;
        // Prepared on first use: most tables of a shard are empty and need one query only.
        const memo = new Map<string, Database.Statement>();
        const st = (sql: string): Database.Statement => {
          let x = memo.get(sql);
          if (x === undefined) memo.set(sql, (x = side.db.prepare(sql).raw(true)));
          return x;
        };
        return {
          get first() { return st(`SELECT * FROM ${t} ORDER BY ${k} LIMIT ${CHUNK_ROWS}`); },
          get after() { return st(`SELECT * FROM ${t} WHERE ${tuple} > ${qs} ORDER BY ${k} LIMIT ${CHUNK_ROWS}`); },
          get upTo() { return st(`SELECT * FROM ${t} WHERE ${tuple} <= ${qs} ORDER BY ${k}`); },
          get between() { return st(`SELECT * FROM ${t} WHERE ${tuple} > ${qs} AND ${tuple} <= ${qs} ORDER BY ${k}`); },
          get rest() { return st(`SELECT * FROM ${t} WHERE ${tuple} > ${qs} ORDER BY ${k}`); },
          get all() { return st(`SELECT * FROM ${t} ORDER BY ${k}`); },
          keyIdx: keys.map((key) => info.columns.indexOf(key)),
        };
      };
      const ra = reader(a, ia);
      const rb = reader(b, ib);
      const keyOf = (row: unknown[], idx: number[]): unknown[] => idx.map((i) => row[i]);
      let last: unknown[] | undefined;
      for (;;) {
        const rowsA = ra === undefined ? [] : ((last === undefined ? ra.first.all() : ra.after.all(...last)) as unknown[][]);
        if (rowsA.length === 0) break;
        const lo = keyOf(rowsA[0]!, ra!.keyIdx);
        const hi = keyOf(rowsA[rowsA.length - 1]!, ra!.keyIdx);
        // Target rows in (previous chunk's last key, this chunk's last key]: none falls between chunks.
        const rowsB = rb === undefined ? [] : ((last === undefined ? rb.upTo.all(...hi) : rb.between.all(...last, ...hi)) as unknown[][]);
        report.chunks++;
        report.rows += rowsA.length;
        if (hashRows(rowsA) !== hashRows(rowsB)) {
          report.mismatches.push({ shard, table: name, fromKey: last === undefined ? '-inf' : keyText(lo), toKey: keyText(hi), sourceRows: rowsA.length, targetRows: rowsB.length });
        }
        last = hi;
      }
      const extra = rb === undefined ? [] : ((last === undefined ? rb.all.all() : rb.rest.all(...last)) as unknown[][]);
      if (extra.length > 0) {
        report.chunks++;
        report.mismatches.push({ shard, table: name, fromKey: last === undefined ? '-inf' : keyText(last), toKey: '+inf', sourceRows: 0, targetRows: extra.length });
      }
    }
  } finally {
    a?.db.close();
    b?.db.close();
  }
  return report;
}


export type { ChunkMismatch };
