import { z } from 'zod';
import { mysqlStorageSchema } from './mysql/mysql-config.js';
import { postgresStorageSchema } from './postgres/postgres-config.js';
import { sqliteStorageSchema } from './sqlite/sqlite-config.js';

/**
 * The config file's `storage` section: each backend owns the schema of its own
 * (src/storage/<kind>/<kind>-config.ts); the storage module lists them here, so config.ts
 * composes one schema from storage's root and never reaches into a backend's folder.
 */
export const storageConfigSchema = z.discriminatedUnion('backend', [sqliteStorageSchema, mysqlStorageSchema, postgresStorageSchema]);
