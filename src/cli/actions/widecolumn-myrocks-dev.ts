import { existsSync } from 'node:fs';
import { ShardKitError } from '../../errors.js';
import type { DevClusterExtension } from '../../ops/dev-cluster.js';
import { ROCKSDB_SETTINGS } from '../../ops/mariadb/index.js';
import { ShardMap } from '../../topology/shard-map.js';
import { parseConfig } from '../../config/config.js';
import { openMyrocksEngine } from '../../widecolumn/myrocks/index.js';

/** Where Debian's mariadb-plugin-rocksdb installs MyRocks. */
export const MYROCKS_PLUGIN_FILE = '/usr/lib/mysql/plugin/ha_rocksdb.so';

/**
 * (In cli/: it joins ops (the dev cluster) and widecolumn, which do not import each other.)
 * `shardkit dev up --widecolumn myrocks`: the pairs' servers load MyRocks (when they are
 * created), the config says `widecolumn.engine: "myrocks"`, and every `dev up` creates the
 * wide-column shards. Installs nothing: without Debian's package it refuses with a clear error.
 */
export function myrocksDevExtension(pluginFile = MYROCKS_PLUGIN_FILE): DevClusterExtension {
  if (!existsSync(pluginFile)) {
    throw new ShardKitError('MISSING_DEPENDENCY', `MyRocks is not installed (${pluginFile} is missing): apt-get install mariadb-plugin-rocksdb (scripts/install-test-deps.sh does)`);
  }
  return {
    name: 'widecolumn-myrocks',
    servers: () => [],
    pairSettings: () => ({ 'plugin-load-add': 'ha_rocksdb', ...ROCKSDB_SETTINGS }),
    configure: (config) => {
      config.widecolumn = { ...(config.widecolumn ?? {}), engine: 'myrocks' };
    },
    afterStart: async (cluster) => {
      // shardkit.json is written after the servers start: build the same config here.
      const config = parseConfig(cluster.buildConfig());
      const map = ShardMap.fromJSON(config.shardMap);
      const engine = openMyrocksEngine({ storage: config.storage, hosts: config.hosts, shardMap: () => map }, undefined);
      try {
        await engine.createShards();
      } finally {
        await engine.close();
      }
    },
  };
}
