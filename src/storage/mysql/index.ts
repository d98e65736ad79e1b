import { ShardKitError } from '../../errors.js';
import { resolveSchema, type ShardKitConfig } from '../../config/config.js';
import type { BackendFactoryOptions } from '../../kit/backend-factory.js';
import { MysqlBackend } from './mysql-backend.js';

export { MysqlBackend, type MysqlBackendOptions, type MysqlHostAddress, type MysqlStorageOptions } from './mysql-backend.js';
export { mapMysqlError, isConnectionError } from './mysql-errors.js';
export { mysqlDatabaseName, shardDdl } from './mysql-ddl.js';

/** The MySQL backend described by a validated config whose storage.backend is "mysql". */
export function mysqlBackendFromConfig(config: ShardKitConfig): MysqlBackend {
  const storage = config.storage;
  if (storage.backend !== 'mysql') throw new ShardKitError('INVALID_CONFIG', `storage.backend is ${storage.backend}, not mysql`);
  return new MysqlBackend({
    hosts: config.hosts,
    storage: {
      user: storage.user,
      ...(storage.password !== undefined ? { password: storage.password } : {}),
      poolSize: storage.poolSize,
      connectTimeoutMs: storage.connectTimeoutMs,
      queryTimeoutMs: storage.queryTimeoutMs,
    },
    schema: resolveSchema(config),
  });
}

/** The hook src/kit/backend-factory.ts loads when config.storage.backend is "mysql". */
export function createBackend(options: BackendFactoryOptions): MysqlBackend {
  const backend = mysqlBackendFromConfig(options.config);
  backend.setSchema(options.schema);
  return backend;
}
