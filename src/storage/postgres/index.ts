import { requireOptional } from '../../util/optional-dependency.js';
import type { BackendSetup } from '../backend-setup.js';
import type { PostgresStorageConfig } from './postgres-config.js';
import { PostgresBackend } from './postgres-backend.js';

export { type DdlLockWait } from './ddl-lock-wait.js';
export { PostgresBackend, type PostgresBackendOptions, type PostgresHostAddress, type PostgresStorageOptions } from './postgres-backend.js';
export { postgresStorageSchema, type PostgresStorageConfig } from './postgres-config.js';
export { mapPostgresError, isConnectionError } from './postgres-errors.js';
export { postgresDialect } from './postgres-dialect.js';
export { postgresSchemaName, shardDdl } from './postgres-ddl.js';
export { formatLsn, parseLsn, recordSearchStart, WAL_SEGMENT_BYTES } from './lsn.js';

/** The hook src/kit/backend-factory.ts loads when config.storage.backend is "postgres". */
export function createBackend(setup: BackendSetup<PostgresStorageConfig>): PostgresBackend {
  // The driver is an optional peer dependency: a missing one fails here, at open, naming it.
  requireOptional('pg', 'the PostgreSQL backend');
  const { storage } = setup;
  return new PostgresBackend({
    hosts: setup.hosts,
    storage: {
      user: storage.user,
      ...(storage.password !== undefined ? { password: storage.password } : {}),
      database: storage.database,
      poolSize: storage.poolSize,
      connectTimeoutMs: storage.connectTimeoutMs,
      queryTimeoutMs: storage.queryTimeoutMs,
      ddlLockTimeoutMs: storage.ddlLockTimeoutMs,
      ddlAttempts: storage.ddlAttempts,
    },
    schema: setup.schema,
  });
}
