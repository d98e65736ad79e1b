import { createReadStream, createWriteStream, existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import Database from 'better-sqlite3';
import type { ShardKitConfig } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import type { TopologyStore } from '../../topology/topology-store.js';
import { ShardMap } from '../../topology/shard-map.js';
import type { BackupEngine, BackupUnitSource, BytesListener } from './backup-engine.js';
import { refuseMovesInProgress } from './fleet-pairs.js';
import type { TableSummary, UnitBackup } from './backup-manifest.js';
import type { BackupTarget } from './backup-target.js';
import { raiseSqliteCounters, sqliteCounters } from './restore-counters.js';
import { sqliteHostDirs } from './sqlite-host-dirs.js';
import { sqliteInUse } from './sqlite-in-use.js';
import { sqliteTableSummaries } from './sqlite-tables.js';

const UNIT = 'embedded';
const SHARD_FILE = /^db\d{5}\.sqlite$/;

/**
 * The embedded default: every shard file copied with SQLite's online backup API (a consistent
 * image of each file while the service writes to it), then stored. Each shard file is its own
 * unit of consistency, as it is for the service (a write never spans two shard files).
 */
export class SqliteBackupEngine implements BackupEngine {
  readonly kind = 'sqlite' as const;

  constructor(private readonly config: ShardKitConfig, private readonly store: TopologyStore, private readonly dataDir: string) {}

  private async map(): Promise<ShardMap> {
    return (await this.store.read()) ?? ShardMap.fromJSON(this.config.shardMap);
  }

  async mapVersion(): Promise<number> {
    return (await this.map()).version;
  }

  shardMap(): Promise<ShardMap> {
    return this.map();
  }

  /** Each host's directory, as the SQLite backend resolves it. */
  private hostDirs(map: ShardMap): Map<string, string> {
    return sqliteHostDirs(this.config, this.dataDir, map);
  }

  async units(): Promise<BackupUnitSource[]> {
    const map = await this.map();
    refuseMovesInProgress(map);
    return [{ unit: UNIT, source: resolve(this.dataDir) }];
  }

  async backupUnit(unit: BackupUnitSource, target: BackupTarget, prefix: string, onBytes: BytesListener): Promise<UnitBackup> {
    const scratch = join(tmpdir(), `shardkit-bk-${process.pid}-${Date.now()}`);
    mkdirSync(scratch, { recursive: true });
    const files: string[] = [];
    const tables: Record<string, TableSummary> = {};
    let bytes = 0;
    const at = Date.now();
    try {
      for (const [host, dir] of this.hostDirs(await this.map())) {
        if (!existsSync(dir)) continue;
        for (const name of readdirSync(dir).filter((n) => SHARD_FILE.test(n)).sort()) {
          const copy = join(scratch, name);
          const db = new Database(join(dir, name), { readonly: true, fileMustExist: true });
          try {
            await db.backup(copy);
          } finally {
            db.close();
          }
          const file = `${UNIT}/${host}/${name}`;
          Object.assign(tables, sqliteTableSummaries(copy, `${host}/${name}`));
          bytes += await target.put(`${prefix}/${file}`, createReadStream(copy));
          rmSync(copy);
          files.push(file);
          onBytes(bytes);
        }
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    return { unit: unit.unit, source: unit.source, position: '', files, bytes, tables, at };
  }

  async recover(): Promise<void> {
    // Nothing on a server to undo: a killed run leaves only its own files.
  }

  /**
   * Every host directory's shard files become exactly the backup's: its files swapped in, then the
   * shard files it lacks (first written after the backup: object or mod shards, `dbNNNNN.sqlite`
   * by name) replaced with their `-wal`/`-shm`. Other files in the directories are left alone.
   * The id counters (sqlite_sequence, which travels inside each file) are read from each live file
   * first and raised in what replaces it (restore-counters.ts): a file the backup lacks becomes
   * one holding only its counters (no fleet: it reads empty), or goes when it had none.
   */
  async restoreUnit(unit: UnitBackup, target: BackupTarget, prefix: string, options: { force: boolean }): Promise<void> {
    const dirs = this.hostDirs(await this.map());
    const places = unit.files.map((f) => {
      const [, host, name] = f.split('/') as [string, string, string];
      const dir = dirs.get(host);
      if (dir === undefined) throw new ShardKitError('NOT_FOUND', `the backup's host ${host} is not in the shard map: nothing changed`);
      return { from: `${prefix}/${f}`, dir, name };
    });
    const kept = new Set(places.map((p) => resolve(p.dir, p.name)));
    const extra = [...new Set([...dirs.values()].map((d) => resolve(d)))].filter((d) => existsSync(d)).flatMap((dir) =>
      readdirSync(dir).filter((n) => SHARD_FILE.test(n) && !kept.has(join(dir, n))).map((name) => ({ dir, name })));
    if (!options.force) {
      const open = [...places, ...extra].filter((p) => sqliteInUse(join(p.dir, p.name)));
      if (open.length > 0) throw new ShardKitError('PRECONDITION_FAILED', `${open.length} shard file(s) are open (${join(open[0]!.dir, open[0]!.name)} is in use by another connection): stop the service first (or --force): nothing changed`);
    }
    for (const p of places) {
      mkdirSync(p.dir, { recursive: true });
      const path = join(p.dir, p.name);
      // Written aside, its counters raised to the live file's, then the stale WAL removed and the file swapped in.
      await pipeline(target.get(p.from), createWriteStream(`${path}.restore`));
      raiseSqliteCounters(`${path}.restore`, sqliteCounters(path));
      swapIn(path);
    }
    // A shard first written after the backup held nothing then: it reads empty, its counters stay.
    for (const p of extra) {
      const path = join(p.dir, p.name);
      const counters = sqliteCounters(path);
      rmSync(`${path}.restore`, { force: true });
      raiseSqliteCounters(`${path}.restore`, counters);
      if (counters.size > 0) swapIn(path);
      else for (const side of ['-wal', '-shm', '']) rmSync(`${path}${side}`, { force: true });
    }
  }

  async drillUnit(unit: UnitBackup, target: BackupTarget, prefix: string, scratchDir: string): Promise<Record<string, TableSummary>> {
    const out: Record<string, TableSummary> = {};
    for (const f of unit.files) {
      const [, host, name] = f.split('/') as [string, string, string];
      const path = join(scratchDir, `${host}-${name}`);
      await pipeline(target.get(`${prefix}/${f}`), createWriteStream(path));
      Object.assign(out, sqliteTableSummaries(path, `${host}/${name}`));
    }
    return out;
  }

  async close(): Promise<void> {
    await this.store.close();
  }
}

/** `<path>.restore` becomes the shard file: the old file's WAL removed first, then the rename. */
function swapIn(path: string): void {
  for (const side of ['-wal', '-shm']) rmSync(`${path}${side}`, { force: true });
  renameSync(`${path}.restore`, path);
}
