import { z } from 'zod';
import { ShardKitError } from '../../errors.js';
import type { ShardMap } from '../../topology/shard-map.js';
import type { MysqlHostAddress, MysqlStorageOptions } from '../../storage/mysql/index.js';
import type { Logger } from '../types.js';
import type { WideColumnLimits } from '../limits.js';
import { MyrocksEngine } from './myrocks-engine.js';

/** `widecolumn.myrocks` in the config file (used when `widecolumn.engine` is "myrocks"). */
export const myrocksConfigSchema = z.object({
  /** How old a service's copy of the dataset catalogue may get before it is reloaded (ms). */
  catalogRefreshMs: z.number().int().min(0).max(3_600_000).default(1000),
}).strict();

export type MyrocksConfig = z.output<typeof myrocksConfigSchema>;

/** What the MyRocks engine takes from the rest of the config: the MariaDB hosts and the live shard map. */
export interface MyrocksFleet {
  /** The config's storage section; the engine needs `backend: "mysql"` (the pairs are MariaDB servers). */
  storage: { backend: string } & MysqlStorageOptions;
  hosts: Record<string, MysqlHostAddress>;
  /** The shard map in force, read on every call (follows topology pushes). */
  shardMap: () => ShardMap;
  /** Re-reads the map from the topology store now (MyrocksEngineOptions.refreshMap). */
  refreshMap?: () => Promise<unknown>;
}

/** Opens the MyRocks engine over the object fleet's MariaDB pairs; INVALID_CONFIG on any other backend. */
export function openMyrocksEngine(fleet: MyrocksFleet | undefined, config: MyrocksConfig | undefined, extra: { limits?: Partial<WideColumnLimits>; logger?: Logger; clock?: () => number } = {}): MyrocksEngine {
  if (!fleet || fleet.storage.backend !== 'mysql') {
    throw new ShardKitError('INVALID_CONFIG', `invalid config at widecolumn.engine: "myrocks" runs on MariaDB pairs and needs storage.backend "mysql" (it is "${fleet?.storage.backend ?? 'unknown'}")`);
  }
  const { backend: _backend, ...storage } = fleet.storage;
  const cfg = myrocksConfigSchema.parse(config ?? {});
  return new MyrocksEngine({
    hosts: fleet.hosts,
    storage,
    shardMap: fleet.shardMap,
    ...(fleet.refreshMap ? { refreshMap: fleet.refreshMap } : {}),
    catalogRefreshMs: cfg.catalogRefreshMs,
    ...(extra.limits ? { limits: extra.limits } : {}),
    ...(extra.logger ? { logger: extra.logger } : {}),
    ...(extra.clock ? { clock: extra.clock } : {}),
  });
}
