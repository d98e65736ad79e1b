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
  const map = await liveShardMap(cluster);
  const masters = mastersOf(map);
  const json = map.toJSON();
  const slaveOf = new Map([...json.ranges, ...json.modShards.ranges].map((r) => [r.master, r.slave]));
  const writable: string[] = [];
  for (const s of cluster.state.servers.filter(isPairMember)) {
    const inst = cluster.instance(s.name);
    if (!inst.isRunning()) continue;
    const write = masters.has(s.name);
    await inst.admin(`SET GLOBAL read_only = ${write ? 0 : 1}`);
    if (cluster.state.semiSync) {
      // Only a master with a slave waits for acks: a slave that waited would hold its SQL thread
      // (its applied transactions go to its own binlog) for the timeout, and a master whose slave
      // is gone would hold its first commit for it.
      const slave = slaveOf.get(s.name);
      const hasSlave = write && slave !== undefined && cluster.state.servers.some((x) => x.name === slave && !x.rebuild);
      await inst.admin(`SET GLOBAL rpl_semi_sync_master_enabled = ${hasSlave ? 1 : 0}`);
    }
    if (write) writable.push(s.name);
  }
  return writable;
}
