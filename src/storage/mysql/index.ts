import { requireOptional } from '../../util/optional-dependency.js';
import type { BackendSetup } from '../backend-setup.js';
import type { MysqlStorageConfig } from './mysql-config.js';
import { MysqlBackend } from './mysql-backend.js';

export { MysqlBackend, type MysqlBackendOptions, type MysqlHostAddress, type MysqlStorageOptions } from './mysql-backend.js';
export { mysqlStorageSchema, type MysqlStorageConfig } from './mysql-config.js';
export { mapMysqlError, isConnectionError } from './mysql-errors.js';
// For the MyRocks wide-column engine, which talks to the same servers through the same pools.
export { MysqlHostPool, type SqlValue } from './mysql-host-pool.js';
export { mysqlDatabaseName, shardDdl } from './mysql-ddl.js';
export { gtidDomains, gtidsNotReached } from './gtid.js';

/** The hook src/kit/backend-factory.ts loads when config.storage.backend is "mysql". */
export function createBackend(setup: BackendSetup<MysqlStorageConfig>): MysqlBackend {
  // The driver is an optional peer dependency: a missing one fails here, at open, naming it.
  requireOptional('mysql2', 'the MySQL backend');
  const { storage } = setup;
  return new MysqlBackend({
    hosts: setup.hosts,
    storage: {
      user: storage.user,
      ...(storage.password !== undefined ? { password: storage.password } : {}),
      poolSize: storage.poolSize,
      connectTimeoutMs: storage.connectTimeoutMs,
      queryTimeoutMs: storage.queryTimeoutMs,
    },
    schema: setup.schema,
  });
}
