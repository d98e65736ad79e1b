/** The moon-size map of #30's benches: 65,536 shards on 1,000 pairs, fragmented by BENCH_MOVES (10,000) one-shard moves. */
import { ShardMap, evenRanges, type ShardMapJson, type ShardRange } from '../src/topology/shard-map.js';

export const SHARDS = 65_536;
export const PAIRS = 1_000;
export const MOVES = Number(process.env.BENCH_MOVES ?? 10_000);
export const pair = (i: number, role: 'master' | 'slave') => `db${String(i).padStart(4, '0')}${role === 'master' ? 'a' : 'b'}`;

/** 65,536 shards over 1,000 pairs (the last pairs take one more), then MOVES one-shard moves. */
export function fragmentedMap(seed: number): ShardMapJson {
  let s = seed;
  const rand = () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const owner = new Uint16Array(SHARDS);
  for (let i = 0; i < SHARDS; i++) owner[i] = Math.floor((i * PAIRS) / SHARDS) + 1;
  for (let m = 0; m < MOVES; m++) owner[Math.floor(rand() * SHARDS)] = Math.floor(rand() * PAIRS) + 1;
  const ranges: ShardRange[] = [];
  for (let i = 0; i < SHARDS;) {
    let j = i;
    while (j + 1 < SHARDS && owner[j + 1] === owner[i]) j++;
    ranges.push({ range: [i, j], master: pair(owner[i]!, 'master'), slave: pair(owner[i]!, 'slave'), open: true });
    i = j + 1;
  }
  return { version: 0, ranges, modShards: { count: 4096, ranges: evenRanges(4096, 8, (i, r) => `msdb${i}${r[0]}`) } };
}

/** The same map with shard `shard` moved to another pair (splitting its range): pair `to`, or pair 1 (2 when it is on 1). */
export function switchOne(map: ShardMap, shard: number, to?: number): ShardMap {
  const json = map.toJSON();
  const out: ShardRange[] = [];
  for (const r of json.ranges) {
    if (r.range[0] > shard || r.range[1] < shard) {
      out.push(r);
      continue;
    }
    const target = to !== undefined && r.master !== pair(to, 'master') ? to : r.master === pair(1, 'master') ? 2 : 1;
    if (r.range[0] < shard) out.push({ ...r, range: [r.range[0], shard - 1] });
    out.push({ ...r, range: [shard, shard], master: pair(target, 'master'), slave: pair(target, 'slave') });
    if (shard < r.range[1]) out.push({ ...r, range: [shard + 1, r.range[1]] });
  }
  return ShardMap.fromJSON({ ...json, ranges: out });
}

