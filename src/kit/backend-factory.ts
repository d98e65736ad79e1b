import { resolve } from 'node:path';
import { ShardKitError } from '../errors.js';
import type { ShardKitConfig } from '../config/config.js';
import type { SchemaDef, ShardBackend } from '../storage/shard-backend.js';
import { SqliteBackend } from '../storage/sqlite/sqlite-backend.js';

export interface BackendFactoryOptions {
  config: ShardKitConfig;
  dataDir: string;
  schema: SchemaDef;
}

/**
 * Builds the backend a config names. The embedded SQLite backend is built in; any other kind
 * is loaded from `src/storage/<kind>/index.ts`, which exports
 * `createBackend(options: BackendFactoryOptions): ShardBackend | Promise<ShardBackend>`,
 * so the core never imports a database client it does not use.
 */
export async function createBackend(options: BackendFactoryOptions): Promise<ShardBackend> {
  const { config, dataDir, schema } = options;
  const storage = config.storage;
  if (storage.backend === 'sqlite') {
    const hostDirs: Record<string, string | undefined> = {};
    for (const [name, host] of Object.entries(config.hosts)) if (host.dir !== undefined) hostDirs[name] = resolve(dataDir, host.dir);
    return new SqliteBackend({
      root: resolve(dataDir, storage.dir),
      schema,
      maxOpenShards: storage.maxOpenShards,
      synchronous: storage.synchronous,
      busyTimeoutMs: storage.busyTimeoutMs,
      hostDirs,
    });
  }
  let mod: { createBackend?: (o: BackendFactoryOptions) => ShardBackend | Promise<ShardBackend> };
  try {
    mod = (await import(`../storage/${storage.backend}/index.js`)) as typeof mod;
  } catch (err) {
    throw new ShardKitError('INVALID_CONFIG', `storage backend ${storage.backend} is not available in this build`, { cause: err });
  }
  if (typeof mod.createBackend !== 'function') {
    throw new ShardKitError('INVALID_CONFIG', `storage backend ${storage.backend} does not export createBackend()`);
  }
  return mod.createBackend(options);
}
