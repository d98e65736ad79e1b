import { createTopologyStore } from '../../topology/index.js';
import { ShardMap } from '../../topology/shard-map.js';
import type { DevClusterView as DevCluster } from './dev-cluster-view.js';
import { isPairMember } from './dev-cluster-state.js';

/** The live shard map: the topology store's, else the config's (a store that was never written). */
export async function liveShardMap(cluster: DevCluster): Promise<ShardMap> {
  const config = cluster.config();
  const store = createTopologyStore(config.topologyStore, { dataDir: cluster.dir });
  try {
    return (await store.read()) ?? ShardMap.fromJSON(config.shardMap);
  } finally {
    await store.close();
  }
}

/** Hosts that are master of at least one object or mod range. */
export function mastersOf(map: ShardMap): Set<string> {
  const json = map.toJSON();
  return new Set([...json.ranges, ...json.modShards.ranges].map((r) => r.master));
}

/**
 * Masters take writes only while the map names them master (SPEC §5): every running pair member
 * the live map names master is made writable, every other one read-only. Servers start read-only
 * (dev-replication.ts), so a failed master that `dev up` restarts stays fenced. Returns the
 * servers made writable.
 */
export async function applyMasterFence(cluster: DevCluster): Promise<string[]> {
  const masters = mastersOf(await liveShardMap(cluster));
  const writable: string[] = [];
  for (const s of cluster.state.servers.filter(isPairMember)) {
    const inst = cluster.instance(s.name);
    if (!inst.isRunning()) continue;
    const write = masters.has(s.name);
    await inst.admin(`SET GLOBAL read_only = ${write ? 0 : 1}`);
    if (write) writable.push(s.name);
  }
  return writable;
}
