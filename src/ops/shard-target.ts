import { dirname, resolve } from 'node:path';
import { loadConfigFile, resolveSchema, type ShardKitConfig } from '../config/config.js';
import type { SchemaDef, ShardBackend } from '../storage/shard-backend.js';
import { createBackend } from '../kit/backend-factory.js';
import { createTopologyStore } from '../topology/index.js';
import { ShardMap } from '../topology/shard-map.js';
import { withHostRecords } from './fleet-hosts.js';

/** What `init` and `schema apply` work on: the backend, the schema and the live shard map. */
export interface ShardTarget {
  config: ShardKitConfig;
  schema: SchemaDef;
  map: ShardMap;
  backend: ShardBackend;
  close(): Promise<void>;
}

/**
 * Opens the config's backend and reads the shard map from its topology store (the live map,
 * which may have more ranges than the file's seed); the config's map when the store is empty.
 */
export async function openShardTarget(configPath: string): Promise<ShardTarget> {
  const config = loadConfigFile(configPath);
  const dataDir = resolve(dirname(configPath));
  const schema = resolveSchema(config);
  const topology = createTopologyStore(config.topologyStore, { dataDir });
  let map: ShardMap;
  let known: ShardKitConfig;
  try {
    map = (await topology.read()) ?? ShardMap.fromJSON(config.shardMap, { hosts: Object.keys(config.hosts) });
    // A pair recorded with `topology hosts add` is as declared as one in the file, as for the
    // edits that opened its shards and the services that write there.
    known = await withHostRecords(config, topology);
  } finally {
    await topology.close();
  }
  const backend = await createBackend({ config: known, dataDir, schema });
  return { config: known, schema, map, backend, close: () => backend.close() };
}
