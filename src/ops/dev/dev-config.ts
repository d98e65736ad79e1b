import { join } from 'node:path';
import { defaultConfig, type ConfigInput } from '../../config/config.js';
import { evenRanges, type ShardMapJson } from '../../topology/shard-map.js';
import type { DevClusterExtension, DevClusterView as DevCluster } from './dev-cluster-view.js';
import { pad3 } from './dev-cluster-state.js';

/** The shard map a cluster is created with: object and mod shards evenly over the pairs. */
export function devShardMapJson(cluster: DevCluster): ShardMapJson {
  const { shards, modShards, pairs } = cluster.state;
  const name = (i: number, role: 'master' | 'slave') => `MySQL${pad3(i)}${role === 'master' ? 'A' : 'B'}`;
  return {
    version: 1,
    ranges: evenRanges(shards, pairs, name, true),
    modShards: { count: modShards, ranges: evenRanges(modShards, pairs, name) },
  };
}

/** The config written to `D/shardkit.json`: the default schema on this cluster's masters. */
export function buildDevConfig(cluster: DevCluster, extensions: DevClusterExtension[] = []): ConfigInput {
  const base = defaultConfig();
  const hosts: Record<string, { host: string; port: number }> = {};
  for (const s of cluster.state.servers) {
    if (s.role !== 'master' && s.role !== 'slave') continue;
    hosts[s.name] = { host: '127.0.0.1', port: cluster.instance(s.name).port };
  }
  const { appUser, appPassword } = cluster.state;
  const config: ConfigInput = {
    storage: { backend: 'mysql', user: appUser, password: appPassword, poolSize: 10, connectTimeoutMs: 2000, queryTimeoutMs: 5000 },
    hosts,
    shardMap: devShardMapJson(cluster),
    topologyStore: { kind: 'file', path: join(cluster.dir, 'topology.json') },
    schema: base.schema,
  };
  for (const ext of extensions) ext.configure?.(config, cluster);
  return config;
}
