import { join } from 'node:path';
import { z } from 'zod';
import { ShardKitError } from '../errors.js';
import { compact, type CompactionReport } from './compaction.js';
import type { Logger } from './types.js';
import { WideColumnStore, type WideColumnStoreOptions } from './wide-column-store.js';

/** The `widecolumn` section of the config file. */
export const wideColumnConfigSchema = z.object({
  /** Seconds between compaction runs of the service; 0 turns the schedule off. Daily by default; at most
   *  ~23 days (a Node timer cannot wait longer). */
  compactionIntervalSeconds: z.number().int().min(0).max(2_000_000).default(24 * 3600),
  /** Logical shards, fixed when the store is created. */
  shards: z.number().int().min(1).max(65535).optional(),
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

export function storeOptions(config: WideColumnConfig, extra: WideColumnStoreOptions = {}): WideColumnStoreOptions {
  const limits = Object.fromEntries(Object.entries(config.limits).filter(([, v]) => v !== undefined));
  return { ...(config.shards !== undefined ? { shards: config.shards } : {}), limits, ...extra };
}

/**
 * Runs compaction every `intervalMs` (never two at once); the timer does not keep the process
 * alive. Returns a function that stops the schedule and waits for a running compaction.
 */
export function startCompactionSchedule(store: WideColumnStore, intervalMs: number, logger?: Logger): () => Promise<void> {
  if (intervalMs <= 0) return async () => undefined;
  let running: Promise<CompactionReport | void> | null = null;
  const timer = setInterval(() => {
    if (running || store.closed) return;
    running = compact(store)
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
  store: WideColumnStore;
  /** Stops the compaction schedule and closes the store. */
  close(): Promise<void>;
}

/** What `shardkit serve` needs: the store in `<data>/widecolumn` and its compaction schedule. */
export async function openWideColumnService(options: { dataDir: string; config?: unknown; logger?: Logger }): Promise<WideColumnService> {
  const config = parseWideColumnConfig(options.config);
  const store = await WideColumnStore.open(wideColumnDir(options.dataDir), storeOptions(config, options.logger ? { logger: options.logger } : {}));
  const stop = startCompactionSchedule(store, config.compactionIntervalSeconds * 1000, options.logger);
  return {
    store,
    async close() {
      await stop();
      await store.close();
    },
  };
}
