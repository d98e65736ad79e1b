import { ShardKitError } from '../../errors.js';
import { resolveSchema, type ShardKitConfig } from '../../config/config.js';
import type { BackendFactoryOptions } from '../../kit/backend-factory.js';
import { PostgresBackend } from './postgres-backend.js';

export { PostgresBackend, type PostgresBackendOptions, type PostgresHostAddress, type PostgresStorageOptions } from './postgres-backend.js';
export { mapPostgresError, isConnectionError } from './postgres-errors.js';
export { postgresSchemaName, shardDdl } from './postgres-ddl.js';

/** The PostgreSQL backend described by a validated config whose storage.backend is "postgres". */
export function postgresBackendFromConfig(config: ShardKitConfig): PostgresBackend {
  const storage = config.storage;
  if (storage.backend !== 'postgres') throw new ShardKitError('INVALID_CONFIG', `storage.backend is ${storage.backend}, not postgres`);
  return new PostgresBackend({
    hosts: config.hosts,
    storage: {
      user: storage.user,
      ...(storage.password !== undefined ? { password: storage.password } : {}),
      database: storage.database,
      poolSize: storage.poolSize,
      connectTimeoutMs: storage.connectTimeoutMs,
      queryTimeoutMs: storage.queryTimeoutMs,
    },
    schema: resolveSchema(config),
  });
}

/** The hook src/kit/backend-factory.ts loads when config.storage.backend is "postgres". */
export function createBackend(options: BackendFactoryOptions): PostgresBackend {
  const backend = postgresBackendFromConfig(options.config);
  backend.setSchema(options.schema);
  return backend;
}
