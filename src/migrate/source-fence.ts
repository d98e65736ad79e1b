import { mkdirSync } from 'node:fs';
import type { SchemaDef, ShardBackend } from '../storage/shard-backend.js';
import { fenceShardCreation, fenceShardFile, sqliteShardDdl as shardDdl, type SqliteBackend, type WriteFence } from '../storage/sqlite/index.js';
import type { ShardMap } from '../topology/shard-map.js';

export interface FencedSource {
  backend: ShardBackend;
  schema: SchemaDef;
  map: ShardMap;
}

/**
 * Fences everything a writer of the source could write, before the copy that must see its last
 * write (issue 26: lookups acknowledged after the last copy were lost). First the making of new
 * shard files on every host (a first write to a shard with no file makes one), then every shard
 * file there is; a file the map places a fleet in first gets that fleet's tables, so a first
 * lookup put to a file that held only objects (a host keeping both fleets) cannot add unguarded
 * tables. Returns the fenced files.
 */
export async function fenceSource(source: FencedSource, sqlite: SqliteBackend, fence: WriteFence): Promise<string[]> {
  const ddl = { objects: shardDdl(source.schema, 'objects'), lookups: shardDdl(source.schema, 'lookups') };
  const hosts = source.map.hostNames();
  for (const host of hosts) {
    mkdirSync(sqlite.hostDir(host), { recursive: true });
    fenceShardCreation(sqlite.hostDir(host), fence);
  }
  const files = new Map<string, Set<'objects' | 'lookups'>>(); // path -> fleets the map places there
  for (const host of hosts) {
    const placed = { objects: new Set(source.map.shardsOnHost(host)), lookups: new Set(source.map.modShardsOnHost(host)) };
    for (const fleet of ['objects', 'lookups'] as const) {
      for (const shard of await source.backend.listShards(host, fleet)) {
        const fleets = new Set<'objects' | 'lookups'>();
        for (const f of ['objects', 'lookups'] as const) if (placed[f].has(shard)) fleets.add(f);
        files.set(sqlite.shardPath({ host, shard, fleet }), fleets);
      }
    }
  }
  const out: string[] = [];
  for (const [path, fleets] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    if (fenceShardFile(path, fence, undefined, [...fleets].map((f) => ddl[f]).join('\n'))) out.push(path);
  }
  return out;
}
