import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { loadConfigFile, resolveSchema, type ShardKitConfig } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import { shardDatabaseName } from '../../storage/shard-names.js';
import { createTopologyStore } from '../../topology/index.js';
import { ShardMap } from '../../topology/shard-map.js';
import { removeStalePartialsIn, writeParquetColumns, type ColumnBatch, type ParquetColumn } from '../../util/parquet-file.js';
import { DevCluster } from '../dev/dev-cluster.js';
import { PG_DATABASE, pgServer } from '../dev/dev-postgres.js';
import { liveShardMap } from '../dev/dev-writable.js';
import { openFleet, type FleetContext } from '../failover/failover-context.js';
import { declaredFields, mappingBatch, MAPPING_COLUMNS, objectBatch, objectColumns } from './export-columns.js';
import { sqliteHostDirs } from './sqlite-host-dirs.js';
import { mariadbConnections, mariadbShardReader, postgresConnections, postgresShardReader, slaveShards, sqliteShardPath, sqliteShardReader, type ExportShard, type ExportSource, type ShardReader } from './export-sources.js';

export interface ExportLocation {
  /** A dev cluster directory. */
  dir?: string;
  /** A config file (a MariaDB fleet: admin account from SHARDKIT_ADMIN_USER / _PASSWORD; or the embedded default). */
  config?: string;
  /** The embedded default's data directory (its shardkit.json), or where a config's file topology store resolves. */
  data?: string;
}

export interface ExportRequest {
  what: 'objects' | 'mappings';
  /** The type (objects) or mapping name. */
  name: string;
  /** The directory the files go to: `<to>/<name>/db00005.parquet`. */
  to: string;
  /** Objects: only rows whose ts is at or after this (unix ms). */
  sinceMs?: number;
  /** Rows per round trip (default PAGE_ROWS; tests cross many page boundaries with a small one). */
  pageRows?: number;
  /** Told after each shard (awaited before that lane takes its next shard). */
  onShard?: (done: number, total: number, rows: number) => void | Promise<void>;
}

export interface ExportReport {
  what: 'objects' | 'mappings';
  name: string;
  engine: ExportSource['engine'];
  dir: string;
  shards: number;
  /** Files written by this run, and those a previous run had completed (resumed over). */
  written: number;
  skipped: number;
  rows: number;
  sinceMs?: number;
  durationMs: number;
}

/** Shards read and encoded at once (bench/RESULTS.md, Parquet export: measured on 2 cores). */
const SHARDS_AT_ONCE = 2;

/** The file an export run records its request in: a re-run resumes only the same request. */
const STATE_FILE = '_export.json';

function embeddedSource(config: ShardKitConfig, dataDir: string): ExportSource {
  const store = createTopologyStore(config.topologyStore, { dataDir });
  let dirs: Map<string, string> | undefined;
  const map = async () => (await store.read()) ?? ShardMap.fromJSON(config.shardMap);
  return {
    engine: 'sqlite',
    mapVersion: async () => (await map()).version,
    async shards() {
      const m = await map();
      if (m.moves().length > 0) throw new ShardKitError('PRECONDITION_FAILED', `a shard move is in progress (map version ${m.version}): export after it finished: nothing written`);
      dirs = sqliteHostDirs(config, dataDir, m);
      const out: ExportShard[] = [];
      // No slaves on the embedded default: each shard file is read where the service writes it.
      for (const r of m.objectRanges()) for (let s = r.range[0]; s <= r.range[1]; s++) out.push({ shard: s, host: r.master });
      return { version: m.version, shards: out.sort((a, b) => a.shard - b.shard) };
    },
    open: async (s, _table, pageRows) => sqliteShardReader(sqliteShardPath(dirs!.get(s.host)!, s.shard), pageRows),
    close: () => store.close(),
  };
}

function mariadbSource(fleet: FleetContext): ExportSource {
  const conns = mariadbConnections(fleet.admin);
  return {
    engine: 'mariadb',
    mapVersion: async () => (await fleet.map()).version,
    shards: async () => slaveShards(await fleet.map()),
    open: (s, table, pageRows) => mariadbShardReader(conns, s.host, s.shard, table, pageRows),
    close: async () => {
      await conns.close();
      await fleet.close();
    },
  };
}

/** The source of a dev cluster, a config's fleet or the embedded default (as `backup` opens them). */
export function openExportSource(where: ExportLocation): { source: ExportSource; config: ShardKitConfig } {
  if (where.dir !== undefined) {
    const cluster = DevCluster.require(where.dir);
    const config = cluster.config();
    if (cluster.state.engine === 'postgres') {
      const conns = postgresConnections((host) => pgServer(cluster, host), PG_DATABASE);
      return {
        config,
        source: {
          engine: 'postgres',
          mapVersion: async () => (await liveShardMap(cluster)).version,
          shards: async () => slaveShards(await liveShardMap(cluster)),
          open: (s, table, pageRows) => postgresShardReader(conns, s.host, s.shard, table, pageRows),
          close: () => conns.close(),
        },
      };
    }
    return { config, source: mariadbSource(openFleet({ dir: where.dir })) };
  }
  const configPath = where.config ?? (where.data !== undefined ? join(where.data, 'shardkit.json') : undefined);
  if (configPath === undefined) throw new ShardKitError('INVALID_ARGUMENT', 'give --dir DIR (a dev cluster), --config FILE (a fleet) or --data DIR (the embedded default)');
  if (!existsSync(configPath)) throw new ShardKitError('INVALID_CONFIG', `no config file at ${configPath}`);
  const config = loadConfigFile(configPath);
  const dataDir = resolve(where.data ?? dirname(resolve(configPath)));
  if (config.storage.backend === 'sqlite') return { config, source: embeddedSource(config, dataDir) };
  if (config.storage.backend !== 'mysql') throw new ShardKitError('INVALID_ARGUMENT', `exports of a ${config.storage.backend} fleet from a config are not built yet (a PostgreSQL dev cluster: --dir)`);
  return { config, source: mariadbSource(openFleet({ config: configPath, dataDir })) };
}

interface Plan {
  table: string;
  columns: ParquetColumn[];
  read: (reader: ShardReader, shard: number, append: (b: ColumnBatch) => Promise<void>) => Promise<void>;
}

/** What to read and how it becomes columns; bad names refused before anything is read or written. */
function plan(config: ShardKitConfig, req: ExportRequest): Plan {
  const schema = resolveSchema(config);
  if (req.what === 'objects') {
    const def = schema.types.find((t) => t.name === req.name);
    if (def === undefined) throw new ShardKitError('UNKNOWN_TYPE', `unknown type ${JSON.stringify(req.name.slice(0, 70))} (the schema has ${schema.types.map((t) => t.name).join(', ') || 'none'}): nothing written`);
    const fields = declaredFields(config.schema.types.find((t) => t.name === req.name)?.dataSchema);
    return {
      table: def.table,
      columns: objectColumns(fields),
      read: (reader, shard, append) => reader.objects(def.table, req.sinceMs, (rows) => append(objectBatch(rows, shard, def, fields))),
    };
  }
  const def = schema.mappings.find((m) => m.name === req.name);
  if (def === undefined) throw new ShardKitError('UNKNOWN_MAPPING', `unknown mapping ${JSON.stringify(req.name.slice(0, 70))} (the schema has ${schema.mappings.map((m) => m.name).join(', ') || 'none'}): nothing written`);
  if (req.sinceMs !== undefined) throw new ShardKitError('INVALID_ARGUMENT', 'mappings keep no write time (their sequence is the application\'s order): --since is for objects: nothing written');
  return { table: def.table, columns: MAPPING_COLUMNS, read: (reader, _shard, append) => reader.mappings(def.table, (rows) => append(mappingBatch(rows))) };
}

/** Refuses a directory that holds another request's files; else records this one. */
function claimDir(dir: string, req: ExportRequest, engine: string): void {
  const path = join(dir, STATE_FILE);
  const mine = { what: req.what, name: req.name, sinceMs: req.sinceMs ?? null, engine };
  if (existsSync(path)) {
    let had: typeof mine;
    try {
      had = JSON.parse(readFileSync(path, 'utf8')) as typeof mine;
    } catch {
      throw new ShardKitError('INVALID_CONFIG', `${path} is not an export's state file (not JSON): remove it, or give another --to: nothing written`);
    }
    if (had.what !== mine.what || had.name !== mine.name || had.sinceMs !== mine.sinceMs) {
      throw new ShardKitError('ALREADY_EXISTS', `${dir} holds an export of ${had.what} ${had.name}${had.sinceMs === null ? '' : ` since ${new Date(had.sinceMs).toISOString()}`}: give another --to (a re-run resumes only the same export): nothing written`);
    }
    return;
  }
  mkdirSync(dir, { recursive: true });
  // Written aside and renamed: a kill in the middle leaves no truncated file to trip every re-run.
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(mine)}\n`);
  renameSync(tmp, path);
}

/** The table went away under the read (a move's fence renamed it, or a drop): the map decides what that means. */
function isMissingTable(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === 'ER_NO_SUCH_TABLE' || code === '42P01';
}

/**
 * Exports one type's objects or one mapping of every shard, each from its slave, one Parquet file
 * per shard (`<to>/<name>/db00005.parquet`). A file appears only when complete, and a re-run
 * skips the shards whose file exists: a killed export resumes where it stopped.
 */
export async function exportShards(where: ExportLocation, req: ExportRequest): Promise<ExportReport> {
  const started = Date.now();
  const to = resolve(req.to);
  if (existsSync(to) && !statSync(to).isDirectory()) throw new ShardKitError('INVALID_ARGUMENT', `--to ${to} is not a directory: nothing written`);
  const { source, config } = openExportSource(where);
  try {
    const p = plan(config, req);
    const { version, shards } = await source.shards();
    const dir = join(to, req.name);
    claimDir(dir, req, source.engine);
    let written = 0;
    let skipped = 0;
    let rows = 0;
    // Shards whose table went away while they were read: no file; the map version says why.
    const vanished: number[] = [];
    // Once per run, not per shard: dead runs' temp files, then each shard's file is one stat.
    removeStalePartialsIn(dir);
    const one = async (s: ExportShard): Promise<void> => {
      const file = join(dir, `${shardDatabaseName(s.shard)}.parquet`);
      if (existsSync(file)) {
        skipped++;
        return;
      }
      const reader = await source.open(s, p.table, req.pageRows).catch((err: unknown) => {
        if (isMissingTable(err)) return null;
        throw err;
      });
      // A shard that never held the table has no file (nothing to resume either).
      if (reader === null) {
        vanished.push(s.shard);
      } else if (reader !== undefined) {
        try {
          const r = await writeParquetColumns(file, p.columns, (append) => p.read(reader, s.shard, append), {
            metadata: { 'shardkit.kind': req.what, 'shardkit.name': req.name, 'shardkit.shard': String(s.shard), 'shardkit.host': s.host, ...(req.sinceMs !== undefined ? { 'shardkit.sinceMs': String(req.sinceMs) } : {}) },
          });
          rows += r.rows;
          written++;
        } catch (err) {
          if (!isMissingTable(err)) throw err;
          vanished.push(s.shard);
        } finally {
          await reader.close();
        }
      }
    };
    // Two shards at once: while this process encodes one, the server reads the other (one at a
    // time left the server or this process idle a quarter of the time). Each in its own snapshot,
    // as before; the first failure stops the run once the shard beside it ended.
    let next = 0;
    let done = 0;
    let failed: { err: unknown } | undefined;
    const lane = async () => {
      while (failed === undefined && next < shards.length) {
        const s = shards[next++]!;
        try {
          await one(s);
          await req.onShard?.(++done, shards.length, rows);
        } catch (err) {
          failed ??= { err };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(SHARDS_AT_ONCE, shards.length) }, lane));
    if (failed !== undefined) throw failed.err;
    // A move or failover switched meanwhile: a shard read where it no longer lives may have been
    // fenced away (no file) while it was read. The complete files stay; a re-run reads the rest
    // where the new map puts them.
    const now = await source.mapVersion();
    if (now !== version) throw new ShardKitError('PRECONDITION_FAILED', `the shard map changed during the export (version ${version} -> ${now}: a move or failover): run it again; the ${written + skipped} complete file(s) are kept and skipped`);
    if (vanished.length > 0) throw new ShardKitError('SHARD_UNAVAILABLE', `the ${p.table} table of shard(s) ${vanished.slice(0, 10).join(', ')}${vanished.length > 10 ? ', ...' : ''} went away while it was read, and the shard map did not change (dropped by hand?): those have no file; the ${written + skipped} complete file(s) are kept`);
    return { what: req.what, name: req.name, engine: source.engine, dir, shards: shards.length, written, skipped, rows, ...(req.sinceMs !== undefined ? { sinceMs: req.sinceMs } : {}), durationMs: Date.now() - started };
  } finally {
    await source.close();
  }
}
