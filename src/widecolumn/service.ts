import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { z } from 'zod';
import { ShardKitError } from '../errors.js';
import { restore } from './backup.js';
import type { EngineCompactionReport, WideColumnEngine, WideColumnEngineDriver } from './engine.js';
import { DEFAULT_EXPORT_DIR, defaultExportDir } from './export-dir.js';
import type { Logger } from './types.js';
import { WideColumnStore, type WideColumnStoreOptions } from './wide-column-store.js';
import { myrocksConfigSchema, openMyrocksEngine, type MyrocksFleet } from './myrocks/myrocks-config.js';

/** The `widecolumn` section of the config file. */
export const wideColumnConfigSchema = z.object({
  /** "rocksdb": the embedded store in the data directory (default); "myrocks": MariaDB's RocksDB
   *  engine on the object fleet's pairs (docs/widecolumn.md, "One node or a fleet"). */
  engine: z.enum(['rocksdb', 'myrocks']).default('rocksdb'),
  myrocks: myrocksConfigSchema.optional(),
  /** Seconds between compaction runs of the service; 0 turns the schedule off. Daily by default; at most
   *  ~23 days (a Node timer cannot wait longer). */
  compactionIntervalSeconds: z.number().int().min(0).max(2_000_000).default(24 * 3600),
  /** Logical shards, fixed when the store is created. */
  shards: z.number().int().min(1).max(65535).optional(),
  /** The only directory where backups and exports asked for over HTTP are written; relative to
   *  the data directory unless absolute. Default `widecolumn-exports`. */
  exportDir: z.string().min(1).refine((s) => !s.includes('\0'), 'must not contain NUL').optional(),
  limits: z.object({
    maxRowKeyBytes: z.number().int().min(1).max(64 * 1024).optional(),
    maxColumnBytes: z.number().int().min(1).max(64 * 1024).optional(),
    maxValueBytes: z.number().int().min(0).max(64 * 1024 * 1024).optional(),
    maxItemsPerRow: z.number().int().min(1).max(1_000_000).optional(),
    maxBatchRows: z.number().int().min(1).max(100_000).optional(),
    maxBatchBytes: z.number().int().min(1).max(1024 * 1024 * 1024).optional(),
    maxFutureSkewMs: z.number().int().min(0).optional(),
  }).strict().default({}),
}).strict();

export type WideColumnConfig = z.output<typeof wideColumnConfigSchema>;

export function parseWideColumnConfig(input: unknown): WideColumnConfig {
  const parsed = wideColumnConfigSchema.safeParse(input ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ShardKitError('INVALID_CONFIG', `invalid config at widecolumn.${issue.path.join('.')}: ${issue.message}`);
  }
  return parsed.data;
}

/** Where the service and the `wc` commands keep the store inside a data directory. */
export function wideColumnDir(dataDir: string): string {
  return join(dataDir, 'widecolumn');
}

/**
 * The directory that HTTP backups and exports are confined to. It must neither hold the store nor
 * lie inside it: an export with overwrite would otherwise replace the store's own files (or the
 * config, were it the data directory).
 */
export function wideColumnExportDir(dataDir: string, config: WideColumnConfig): string {
  const dir = resolve(dataDir, config.exportDir ?? DEFAULT_EXPORT_DIR);
  const store = resolve(wideColumnDir(dataDir));
  if (within(dir, store) || within(store, dir) || dir === resolve(dataDir)) {
    throw new ShardKitError('INVALID_CONFIG', `invalid config at widecolumn.exportDir: ${dir} must be a directory of its own, not the data directory, the store or a directory holding them`);
  }
  return dir;
}

/** Whether `inner` is `outer` or below it. */
function within(inner: string, outer: string): boolean {
  const rel = relative(outer, inner);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

// The HTTP plugin is handed only the engine (`widecolumnRoutes(service.engine)`), so the service
// records here which export directory its config chose for that engine.
const exportDirs = new WeakMap<WideColumnEngine, string>();

/**
 * The export directory of an engine opened by openWideColumnService, else (an embedded store)
 * the one next to the store's directory.
 */
export function exportDirOf(engine: WideColumnEngine): string {
  const dir = exportDirs.get(engine) ?? (engine instanceof WideColumnStore ? defaultExportDir(engine.path) : undefined);
  if (dir === undefined) throw new ShardKitError('INVALID_CONFIG', `no export directory is configured for the ${engine.kind} wide-column engine`);
  return dir;
}

/** The embedded RocksDB engine in directory `path` (SPEC §6: the default engine). */
export function rocksDbDriver(path: string, options: WideColumnStoreOptions = {}): WideColumnEngineDriver {
  return {
    kind: 'rocksdb',
    open: () => WideColumnStore.open(path, options),
    restore: (backupDir, restoreOptions = {}) => restore(backupDir, path, restoreOptions),
  };
}

export function storeOptions(config: WideColumnConfig, extra: WideColumnStoreOptions = {}): WideColumnStoreOptions {
  const limits = Object.fromEntries(Object.entries(config.limits).filter(([, v]) => v !== undefined));
  return { ...(config.shards !== undefined ? { shards: config.shards } : {}), limits, ...extra };
}

/**
 * Runs compaction every `intervalMs` (never two at once); the timer does not keep the process
 * alive. Returns a function that stops the schedule and waits for a running compaction.
 */
export function startCompactionSchedule(engine: WideColumnEngine, intervalMs: number, logger?: Logger): () => Promise<void> {
  if (intervalMs <= 0) return async () => undefined;
  let running: Promise<EngineCompactionReport | void> | null = null;
  const timer = setInterval(() => {
    if (running || engine.closed) return;
    running = engine.compact()
      .catch((err: unknown) => logger?.error({ err }, 'wide-column compaction failed'))
      .finally(() => {
        running = null;
      });
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}

export interface WideColumnService {
  engine: WideColumnEngine;
  /** Where HTTP backups and exports go (config `widecolumn.exportDir`). */
  exportDir: string;
  /** Stops the compaction schedule and closes the store. */
  close(): Promise<void>;
}

/** What `shardkit serve` needs: the store in `<data>/widecolumn`, its compaction schedule and export directory. */
export async function openWideColumnService(options: { dataDir: string; config?: unknown; logger?: Logger; fleet?: MyrocksFleet }): Promise<WideColumnService> {
  const config = parseWideColumnConfig(options.config);
  const exportDir = wideColumnExportDir(options.dataDir, config);
  const engine: WideColumnEngine = config.engine === 'myrocks'
    ? openMyrocksEngine(options.fleet, config.myrocks, { limits: storeOptions(config).limits ?? {}, ...(options.logger ? { logger: options.logger } : {}) })
    : await rocksDbDriver(wideColumnDir(options.dataDir), storeOptions(config, options.logger ? { logger: options.logger } : {})).open();
  exportDirs.set(engine, exportDir);
  const stop = startCompactionSchedule(engine, config.compactionIntervalSeconds * 1000, options.logger);
  return {
    engine,
    exportDir,
    async close() {
      await stop();
      await engine.close();
    },
  };
}
