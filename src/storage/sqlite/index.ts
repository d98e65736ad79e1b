import { resolve } from 'node:path';
import type { BackendSetup } from '../backend-setup.js';
import type { SqliteStorageConfig } from './sqlite-config.js';
import { SqliteBackend } from './sqlite-backend.js';

export { SqliteBackend, type SqliteBackendOptions } from './sqlite-backend.js';
// For `migrate --final` (src/migrate/source-fence.ts): the fence of an embedded source.
export { shardDdl as sqliteShardDdl } from './sqlite-ddl.js';
export { fenceShardCreation, fenceShardFile, type WriteFence } from './sqlite-write-fence.js';
export { sqliteStorageSchema, type SqliteStorageConfig } from './sqlite-config.js';
// For the SQLite move engine: how a fenced shard file is marked.
export { MOVED_BIT, MOVED_TABLE_PREFIX } from './moved-marks.js';
// For a backup restore (src/ops/backup/restore-counters.ts): the id counters' statements.
export { SEQUENCE_SQL } from './sqlite-statements.js';
export { MAX_LOOKUP_KEY_BYTES, MAX_STORED_ID } from '../backend-args.js';

/** The built-in backend's hook (src/kit/backend-factory.ts): host directories resolve against the data dir. */
export function createBackend(setup: BackendSetup<SqliteStorageConfig>): SqliteBackend {
  const { storage, dataDir } = setup;
  const hostDirs: Record<string, string | undefined> = {};
  for (const [name, host] of Object.entries(setup.hosts)) if (host.dir !== undefined) hostDirs[name] = resolve(dataDir, host.dir);
  return new SqliteBackend({
    root: resolve(dataDir, storage.dir),
    schema: setup.schema,
    maxOpenShards: storage.maxOpenShards,
    synchronous: storage.synchronous,
    busyTimeoutMs: storage.busyTimeoutMs,
    hostDirs,
  });
}
