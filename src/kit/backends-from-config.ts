import { ShardKitError } from '../errors.js';
import { resolveSchema, type ShardKitConfig } from '../config/config.js';
import { createBackend as createMysqlBackend, type MysqlBackend } from '../storage/mysql/index.js';
import { createBackend as createPostgresBackend, type PostgresBackend } from '../storage/postgres/index.js';

/**
 * Typed constructors for tools that need a server backend's own methods (tablesOnHost,
 * nextInstagramIds): the same backend ShardKit.open builds from a validated config. Kept apart
 * from backend-factory.ts so ShardKit does not load mysql2 and pg unless a config asks for them.
 */

/** The MySQL backend described by a validated config whose storage.backend is "mysql". */
export function mysqlBackendFromConfig(config: ShardKitConfig, dataDir = '.'): MysqlBackend {
  const storage = config.storage;
  if (storage.backend !== 'mysql') throw new ShardKitError('INVALID_CONFIG', `storage.backend is ${storage.backend}, not mysql`);
  return createMysqlBackend({ storage, hosts: config.hosts, dataDir, schema: resolveSchema(config) });
}

/** The PostgreSQL backend described by a validated config whose storage.backend is "postgres". */
export function postgresBackendFromConfig(config: ShardKitConfig, dataDir = '.'): PostgresBackend {
  const storage = config.storage;
  if (storage.backend !== 'postgres') throw new ShardKitError('INVALID_CONFIG', `storage.backend is ${storage.backend}, not postgres`);
  return createPostgresBackend({ storage, hosts: config.hosts, dataDir, schema: resolveSchema(config) });
}
