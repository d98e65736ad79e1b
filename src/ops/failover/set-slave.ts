import type { ShardMap, ShardMapJson, ShardRange } from '../../topology/shard-map.js';
import { mergeAdjacent } from '../../topology/map-edits.js';

/** Every range (object and mod shards) mastered by `master` gets `slave` as its slave. */
export function setSlave(map: ShardMap, master: string, slave: string): ShardMapJson {
  const json = map.toJSON();
  const edit = (r: ShardRange): ShardRange => (r.master === master ? { ...r, slave } : r);
  return {
    version: json.version,
    ranges: mergeAdjacent(json.ranges.map(edit)),
    modShards: { count: json.modShards.count, ranges: mergeAdjacent(json.modShards.ranges.map(edit)) },
  };
}
