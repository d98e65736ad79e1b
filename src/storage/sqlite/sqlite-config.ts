import { z } from 'zod';

/** Config `storage` when backend is sqlite; composed into the config file's schema by config.ts. */
export const sqliteStorageSchema = z.object({
  backend: z.literal('sqlite'),
  /** Directory holding one sub-directory per host; relative paths resolve against the data dir. */
  dir: z.string().default('hosts'),
  maxOpenShards: z.number().int().min(1).max(100000).default(256),
  /** "normal": a commit survives a killed process; "full": also an OS crash or power loss (fsync per commit). */
  synchronous: z.enum(['normal', 'full']).default('normal'),
  /** How long a write waits for another process's lock on a shard file before SHARD_UNAVAILABLE. */
  busyTimeoutMs: z.number().int().min(0).max(600000).default(5000),
}).strict();

export type SqliteStorageConfig = z.output<typeof sqliteStorageSchema>;
