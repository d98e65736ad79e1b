import { mkdirSync } from 'node:fs';
import type { SchemaDef, ShardBackend } from '../storage/shard-backend.js';
import { shardDdl } from '../storage/sqlite/sqlite-ddl.js';
import type { SqliteBackend } from '../storage/sqlite/sqlite-backend.js';
import { fenceShardFile, type WriteFence } from '../storage/sqlite/sqlite-write-fence.js';
import type { ShardMap } from '../topology/shard-map.js';

export interface FencedSource {
  backend: ShardBackend;
  schema: SchemaDef;
  map: ShardMap;
}

/**
 * Fences every file a writer of the source could write, before the copy that must see its last
 * write: each existing shard file, and the file of every shard the map places on a host (made now
 * when missing). Each gets the tables of both fleets first, because a trigger only guards a table
 * that exists: a service's first lookup put to a file that held only objects (or a first write to
 * a shard with no file) would otherwise create its tables or file after the fence, unguarded, and
 * be acknowledged after the last copy (issue 26). Returns the fenced files.
 */
export async function fenceSource(source: FencedSource, sqlite: SqliteBackend, fence: WriteFence): Promise<string[]> {
  const ddl = `${shardDdl(source.schema, 'objects')}\n${shardDdl(source.schema, 'lookups')}`;
  const paths = new Map<string, boolean>(); // path -> create when missing
  for (const host of source.map.hostNames()) {
    for (const fleet of ['objects', 'lookups'] as const) {
      // Files on hosts the map does not name as master (a slave's copy, a move's leftover): fenced as they are.
      for (const shard of await source.backend.listShards(host, fleet)) {
        const p = sqlite.shardPath({ host, shard, fleet });
        if (!paths.has(p)) paths.set(p, false);
      }
      const mine = fleet === 'objects' ? source.map.shardsOnHost(host) : source.map.modShardsOnHost(host);
      if (mine.length > 0) mkdirSync(sqlite.hostDir(host), { recursive: true });
      for (const shard of mine) paths.set(sqlite.shardPath({ host, shard, fleet }), true);
    }
  }
  const out: string[] = [];
  for (const [path, create] of [...paths].sort(([a], [b]) => a.localeCompare(b))) {
    if (fenceShardFile(path, fence, undefined, { ddl, create })) out.push(path);
  }
  return out;
}
