import { z } from 'zod';
import type { SchemaDef } from './shard-backend.js';

/** How one physical host is reached (config `hosts`). SQLite hosts are directories; SQL servers are addresses. */
export const hostConfigSchema = z.object({
  dir: z.string().optional(),
  host: z.string().optional(),
  port: z.number().int().min(1).max(65535).optional(),
  socket: z.string().optional(),
  user: z.string().optional(),
  password: z.string().optional(),
}).strict();

export type HostConfig = z.output<typeof hostConfigSchema>;

/**
 * What a backend module's `createBackend(setup)` hook receives: its own validated `storage`
 * section (the schema it exports, e.g. mysql-config.ts), the declared hosts, the data directory
 * relative paths resolve against, and the resolved schema. A backend is typed by what it needs,
 * not by the config file of the layer above it (Kysely's dialect config).
 */
export interface BackendSetup<S> {
  storage: S;
  hosts: Record<string, HostConfig>;
  dataDir: string;
  schema: SchemaDef;
}
