import { modShard } from '../../src/ids/mod-shard.js';
import { ShardMap } from '../../src/topology/shard-map.js';

const MOD_SHARDS = 16;

/** The dev cluster's layout: each pair masters object shards and the mod shards with the same numbers. */
export function sharedHostsMap(): ShardMap {
  const pair = (first: number, last: number, n: number) => ({ range: [first, last] as [number, number], master: `MySQL00${n}A`, slave: `MySQL00${n}B` });
  return ShardMap.fromJSON({
    version: 1,
    ranges: [{ ...pair(0, 7, 1), open: true }, { ...pair(8, 15, 2), open: true }],
    modShards: { count: MOD_SHARDS, ranges: [pair(0, 7, 1), pair(8, 15, 2)] },
  });
}

/** A key on mod shard `shard` (md5(key) mod 16), distinct per `tag`. */
export function keyOn(shard: number, tag: string): string {
  for (let i = 0; ; i++) if (modShard(`${tag}-${i}`, MOD_SHARDS) === shard) return `${tag}-${i}`;
}
