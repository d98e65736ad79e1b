import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { Fleet } from '../storage/shard-backend.js';

/** One chunk of a table as the last run left it: the rows up to `end` (undefined: the last chunk). */
export interface ChunkState {
  /** The chunk's last key (table-kinds.ts encodes it); undefined for the open-ended last chunk. */
  end: string | undefined;
  /** Checksum of the rows the target got for this chunk; undefined: unknown (compare with the target). */
  sum: string | undefined;
}

/**
 * What a migration remembers between runs, in a SQLite file beside the source's data: which
 * shards it has started (their target shards hold its rows, not someone else's), and per table
 * the chunk boundaries with the checksum of what the target holds. A chunk's checksum is cleared
 * (committed) before its target rows are touched and written after, so a run killed at any point
 * leaves only chunks that are right or marked unknown: the next run compares those with the target.
 */
export class MigrationState {
  private readonly db: Database.Database;

  constructor(readonly path: string) {
    mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS shards (fleet TEXT NOT NULL, shard INTEGER NOT NULL, PRIMARY KEY (fleet, shard));
      CREATE TABLE IF NOT EXISTS chunks (fleet TEXT NOT NULL, shard INTEGER NOT NULL, tbl TEXT NOT NULL, idx INTEGER NOT NULL,
        end_key TEXT, sum TEXT, PRIMARY KEY (fleet, shard, tbl, idx));`);
  }

  get(key: string): string | undefined {
    return this.db.prepare('SELECT v FROM meta WHERE k = ?').pluck().get(key) as string | undefined;
  }

  set(key: string, value: string): void {
    this.db.prepare('INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v').run(key, value);
  }

  started(fleet: Fleet): Set<number> {
    return new Set(this.db.prepare('SELECT shard FROM shards WHERE fleet = ?').pluck().all(fleet) as number[]);
  }

  markStarted(fleet: Fleet, shards: number[]): void {
    const st = this.db.prepare('INSERT OR IGNORE INTO shards (fleet, shard) VALUES (?, ?)');
    this.db.transaction(() => {
      for (const s of shards) st.run(fleet, s);
    })();
  }

  chunks(fleet: Fleet, shard: number, table: string): ChunkState[] {
    const rows = this.db.prepare('SELECT end_key, sum FROM chunks WHERE fleet = ? AND shard = ? AND tbl = ? ORDER BY idx').all(fleet, shard, table) as Array<{ end_key: string | null; sum: string | null }>;
    return rows.map((r) => ({ end: r.end_key ?? undefined, sum: r.sum ?? undefined }));
  }

  /** Clears the checksum of chunk `idx` (as last saved) before its target rows change. */
  markUnknown(fleet: Fleet, shard: number, table: string, idx: number): void {
    this.db.prepare('UPDATE chunks SET sum = NULL WHERE fleet = ? AND shard = ? AND tbl = ? AND idx = ?').run(fleet, shard, table, idx);
  }

  saveChunks(fleet: Fleet, shard: number, table: string, chunks: ChunkState[]): void {
    const del = this.db.prepare('DELETE FROM chunks WHERE fleet = ? AND shard = ? AND tbl = ?');
    const ins = this.db.prepare('INSERT INTO chunks (fleet, shard, tbl, idx, end_key, sum) VALUES (?, ?, ?, ?, ?, ?)');
    this.db.transaction(() => {
      del.run(fleet, shard, table);
      chunks.forEach((c, i) => ins.run(fleet, shard, table, i, c.end ?? null, c.sum ?? null));
    })();
  }

  close(): void {
    this.db.close();
  }
}
