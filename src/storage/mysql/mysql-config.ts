import { z } from 'zod';

/** Config `storage` when backend is mysql; composed into the config file's schema by config.ts. */
export const mysqlStorageSchema = z.object({
  backend: z.literal('mysql'),
  user: z.string().default('root'),
  password: z.string().optional(),
  poolSize: z.number().int().min(1).max(1000).default(10),
  connectTimeoutMs: z.number().int().min(1).default(2000),
  queryTimeoutMs: z.number().int().min(1).default(5000),
}).strict();

export type MysqlStorageConfig = z.output<typeof mysqlStorageSchema>;
