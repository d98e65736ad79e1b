import { isAbsolute, join } from 'node:path';
import type { TopologyStore } from './topology-store.js';
import { MemoryTopologyStore } from './memory/memory-topology-store.js';
import { FileTopologyStore, type FileTopologyStoreOptions } from './file/file-topology-store.js';
import { EtcdTopologyStore } from './etcd/etcd-topology-store.js';

export { MemoryTopologyStore, MemoryTopologyBacking, type MemoryTopologyStoreOptions } from './memory/memory-topology-store.js';
export { FileTopologyStore, parseTopologyText, type FileTopologyStoreOptions } from './file/file-topology-store.js';
export { EtcdTopologyStore, DEFAULT_ETCD_TOPOLOGY_KEY, type EtcdTopologyStoreOptions } from './etcd/etcd-topology-store.js';
export type { TopologyListener } from './version-listeners.js';

/** The config file's `topologyStore` section. */
export type TopologyStoreSpec =
  | { kind: 'file'; path?: string }
  | { kind: 'memory' }
  | { kind: 'etcd'; endpoints: readonly string[]; key?: string; dialTimeoutMs?: number };

/**
 * Opens the store a config names; a relative file path resolves against `dataDir`. The etcd store
 * connects (and loads etcd3) on first use, so this stays synchronous and never fails on a down etcd.
 */
export function createTopologyStore(
  spec: TopologyStoreSpec,
  options: { dataDir?: string } & Omit<FileTopologyStoreOptions, 'path'> = {},
): TopologyStore {
  if (spec.kind === 'memory') return new MemoryTopologyStore();
  if (spec.kind === 'etcd') {
    return new EtcdTopologyStore({
      endpoints: spec.endpoints,
      ...(spec.key !== undefined ? { key: spec.key } : {}),
      ...(spec.dialTimeoutMs !== undefined ? { dialTimeoutMs: spec.dialTimeoutMs } : {}),
      ...(options.onError !== undefined ? { onError: options.onError } : {}),
    });
  }
  const { dataDir, ...fileOptions } = options;
  const path = spec.path ?? 'topology.json';
  return new FileTopologyStore({ ...fileOptions, path: isAbsolute(path) || dataDir === undefined ? path : join(dataDir, path) });
}
export { changeShardMap, type ChangeShardMapOptions, type ShardMapChange } from './change-shard-map.js';
export { promoteSlave, moveShards, setOpen, mergeAdjacent, parseShardSpan, diffShardMaps, formatShardMapDiff, type ShardSpan, type HostPair, type Fleet, type RangeChange } from './map-edits.js';
