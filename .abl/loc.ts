import { ShardMap, evenRanges } from '../src/topology/shard-map.js';
import { fragmentedMap } from '../bench/moon-map.js';
const pair = (i: number, role: 'master' | 'slave') => `db${String(i).padStart(4, '0')}${role === 'master' ? 'a' : 'b'}`;
const base = fragmentedMap(30);
const big = ShardMap.fromJSON(base);
const small = ShardMap.fromJSON({ ...base, ranges: evenRanges(4096, 8, (i, r) => pair(i, r), true) });
for (const m of [big, small]) {
  const seen: any[] = []; const locs = new Set<any>();
  for (let s = 0; s < m.shardCount; s++) locs.add(m.locate(s));
  for (const l of locs) if (!seen.some((x) => (globalThis as any).same(x, l))) seen.push(l);
  console.log(m.shardCount, 'locations', locs.size, 'shapes', seen.length, seen.map((x) => Object.keys(x).join(',')));
}
