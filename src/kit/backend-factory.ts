import { ShardKitError } from '../errors.js';
import type { ShardKitConfig } from '../config/config.js';
import type { BackendSetup } from '../storage/backend-setup.js';
import type { SchemaDef, ShardBackend } from '../storage/shard-backend.js';
import { createBackend as createSqliteBackend } from '../storage/sqlite/index.js';

export interface BackendFactoryOptions {
  config: ShardKitConfig;
  dataDir: string;
  schema: SchemaDef;
}

/**
 * Builds the backend a config names. The embedded SQLite backend is built in; any other kind
 * is loaded from `src/storage/<kind>/index.ts`, which exports
 * `createBackend(setup: BackendSetup<its storage config>): ShardBackend | Promise<ShardBackend>`,
 * so the core never imports a database client it does not use.
 */
export async function createBackend(options: BackendFactoryOptions): Promise<ShardBackend> {
  const { config, dataDir, schema } = options;
  const storage = config.storage;
  const setup = { storage, hosts: config.hosts, dataDir, schema };
  if (storage.backend === 'sqlite') return createSqliteBackend({ ...setup, storage });
  let mod: { createBackend?: (setup: BackendSetup<typeof storage>) => ShardBackend | Promise<ShardBackend> };
  try {
    mod = (await import(`../storage/${storage.backend}/index.js`)) as typeof mod;
  } catch (err) {
    throw new ShardKitError('INVALID_CONFIG', `storage backend ${storage.backend} is not available in this build`, { cause: err });
  }
  if (typeof mod.createBackend !== 'function') {
    throw new ShardKitError('INVALID_CONFIG', `storage backend ${storage.backend} does not export createBackend()`);
  }
  return mod.createBackend(setup);
}
