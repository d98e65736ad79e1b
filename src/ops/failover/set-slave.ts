import type { ShardMap, ShardMapJson, ShardRange } from '../../topology/shard-map.js';
import { withPairRanges } from '../../topology/map-edits.js';

/** Every range (object and mod shards) mastered by `master` gets `slave` as its slave. */
export function setSlave(map: ShardMap, master: string, slave: string): ShardMapJson {
  return withPairRanges(map.toJSON(), (r: ShardRange): ShardRange => (r.master === master ? { ...r, slave } : r));
}
