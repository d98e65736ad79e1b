import { performance } from 'node:perf_hooks';
import { ShardMap, evenRanges } from '../src/topology/shard-map.js';
import { fragmentedMap } from '../bench/moon-map.js';
const pair = (i: number, role: 'master' | 'slave') => `db${String(i).padStart(4, '0')}${role === 'master' ? 'a' : 'b'}`;
function locatePass(map: ShardMap, shards: Int32Array): number {
  let x = 0; const t0 = performance.now();
  for (let i = 0; i < shards.length; i++) x += map.locate(shards[i]!).open ? 1 : 0;
  const ns = ((performance.now() - t0) * 1e6) / shards.length; if (x < 0) console.log(x); return ns;
}
function locateNs(maps: ShardMap[]): number[] {
  let s = 7; const rand = () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const shards = maps.map((m) => Int32Array.from({ length: 1_000_000 }, () => Math.floor(rand() * m.shardCount)));
  const best = maps.map(() => Infinity);
  for (let round = 0; round < 8; round++) for (let k = 0; k < maps.length; k++) { const ns = locatePass(maps[k]!, shards[k]!); if (round > 0) best[k] = Math.min(best[k]!, ns); }
  return best;
}
const base = fragmentedMap(30);
const big = ShardMap.fromJSON(base);
const small = ShardMap.fromJSON({ ...base, ranges: evenRanges(4096, 8, (i, r) => pair(i, r), true) });
for (let i = 0; i < 3; i++) { const [b, sm] = locateNs([big, small]); console.log(b!.toFixed(2), sm!.toFixed(2), (b! / sm!).toFixed(3)); }
