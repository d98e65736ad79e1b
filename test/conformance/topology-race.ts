/**
 * The sample maps and the read-modify-write race of the topology conformance suite, apart from
 * the suite itself: the writer child processes (file-store-writer.ts, etcd-store-writer.ts) import
 * this, and it loads only the shard map and the errors, not node:test or all of src/index.ts
 * (a child that loaded those cost ~2 s of CPU to start instead of ~0.7 s).
 */
import { ShardKitError } from '../../src/errors.js';
import { ShardMap, type ShardMapJson } from '../../src/topology/shard-map.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';

/** A small valid map whose master names carry `tag`, so tests can tell writes apart. */
export function sampleMapJson(tag: string, version = 0): ShardMapJson {
  const t = tag.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 40);
  return {
    version,
    ranges: [
      { range: [0, 7], master: `${t}-m1`, slave: `${t}-s1`, open: true },
      { range: [8, 15], master: `${t}-m2`, slave: `${t}-s2`, open: false },
    ],
    modShards: { count: 16, ranges: [{ range: [0, 15], master: `${t}-mod1`, slave: `${t}-mod2` }] },
  };
}

export function sampleMap(tag: string, version = 0): ShardMap {
  return ShardMap.fromJSON(sampleMapJson(tag, version));
}

/**
 * The read-modify-write loop every operator tool runs: read, write with the version read, retry
 * on VERSION_CONFLICT. Returns the versions this caller won; across all racers they must be
 * distinct and contiguous, or an update was lost.
 */
export async function raceIncrements(store: TopologyStore, rounds: number, tag: string): Promise<number[]> {
  const won: number[] = [];
  for (let i = 0; i < rounds; i++) {
    for (;;) {
      const current = await store.read();
      const v = current?.version ?? 0;
      try {
        const stored = await store.write(sampleMap(`${tag}-${i}`), v);
        won.push(stored.version);
        break;
      } catch (err) {
        if (!(err instanceof ShardKitError) || err.code !== 'VERSION_CONFLICT') throw err;
      }
    }
  }
  return won;
}
