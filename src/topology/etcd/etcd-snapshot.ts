import type { ShardMap } from '../shard-map.js';
import type { DecodedRecord, MapRoot } from '../map-records.js';

// Its own file, free of etcd3's types: the store's public declarations name it, and a consumer
// without the optional etcd3 package must still compile them (test/packaging/optional-peers).
/** What the map's keys hold at one etcd revision. */
export type EtcdSnapshot =
  | { layout: 0; revision: number; modRevision: '0' }
  | { layout: 1; revision: number; modRevision: string; map: ShardMap; text: string }
  | { layout: 2; revision: number; modRevision: string; map: ShardMap; text: string; root: MapRoot; records: Map<string, { text: string; decoded: DecodedRecord }> };

