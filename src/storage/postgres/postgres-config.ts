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
}).strict();

export type PostgresStorageConfig = z.output<typeof postgresStorageSchema>;
