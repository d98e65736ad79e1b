import { z } from 'zod';

/** Config `storage` when backend is postgres; composed into the config file's schema by config.ts. */
export const postgresStorageSchema = z.object({
  backend: z.literal('postgres'),
  user: z.string().default('postgres'),
  password: z.string().optional(),
  database: z.string().default('shardkit'),
  poolSize: z.number().int().min(1).max(1000).default(10),
  connectTimeoutMs: z.number().int().min(1).default(2000),
  queryTimeoutMs: z.number().int().min(1).default(5000),
  /** `init` / `schema apply`: one wait for a lock another session holds (capped below queryTimeoutMs). */
  ddlLockTimeoutMs: z.number().int().min(10).max(600_000).default(2000),
  /** `init` / `schema apply`: waits per shard before LOCK_TIMEOUT. */
  ddlAttempts: z.number().int().min(1).max(100).default(8),
}).strict();

export type PostgresStorageConfig = z.output<typeof postgresStorageSchema>;
