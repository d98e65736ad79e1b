/**
 * The backends the ShardKit-level suite (kit-suite.ts) runs on, one server set per test file:
 * SQLite files in a temp dir here; a MariaDB dev cluster and two PostgreSQL servers in
 * kit-server-targets.ts (kept apart so that the SQLite run needs no server). Each target serves
 * the same shard map, so the suite never asks which database it talks to.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Cache } from '../../src/cache/index.js';
import { defaultConfig, resolveSchema } from '../../src/config/config.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import type { SchemaDef, ShardBackend } from '../../src/storage/shard-backend.js';
import { SqliteBackend } from '../../src/storage/sqlite/index.js';
import { MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap } from '../../src/topology/shard-map.js';
import { snapshot as sqliteSnapshot } from './kit-fixture.js';

export const HOST_A = 'HOSTA';
export const HOST_B = 'HOSTB';
/** Object shards 0..3 on HOST_A and 128..131 on HOST_B (IDs there are above 2^53); 8 mod shards. */
export const OBJECT_SHARDS = { [HOST_A]: [0, 1, 2, 3], [HOST_B]: [128, 129, 130, 131] } as const;
export const MOD_SHARDS = 8;

export const kitSchema: SchemaDef = resolveSchema({ schema: defaultConfig().schema } as Parameters<typeof resolveSchema>[0]);

export function kitShardMap(): ShardMap {
  return ShardMap.fromJSON({
    version: 1,
    ranges: [
      { range: [0, 3], master: HOST_A, slave: 'HOSTA2', open: true },
      // Never opened, never created: only there so that 128..131 follow.
      { range: [4, 127], master: HOST_A, slave: 'HOSTA2', open: false },
      { range: [128, 131], master: HOST_B, slave: 'HOSTB2', open: true },
    ],
    modShards: {
      count: MOD_SHARDS,
      ranges: [
        { range: [0, 3], master: HOST_A, slave: 'HOSTA2' },
        { range: [4, 7], master: HOST_B, slave: 'HOSTB2' },
      ],
    },
  });
}

export interface KitTarget {
  name: string;
  /** Its backend talks to servers through connection pools (whose gauges /metrics shows). */
  serverPools: boolean;
  /** A fresh ShardKit (and backend) over the target's shards; close() closes both. */
  open(options?: { cache?: Cache }): Promise<ShardKit>;
  /** A digest of every stored row: equal before and after means nothing was written. */
  snapshot(): Promise<string>;
  stop(): Promise<void>;
}

export function kitOver(backend: ShardBackend, cache?: Cache): ShardKit {
  return new ShardKit({ backend, schema: kitSchema, topology: new MemoryTopologyStore(), shardMap: kitShardMap(), ownsResources: true, ...(cache ? { cache } : {}) });
}

export async function createShards(backend: ShardBackend): Promise<void> {
  for (const [host, shards] of Object.entries(OBJECT_SHARDS)) for (const shard of shards) await backend.createShard({ host, shard, fleet: 'objects' });
  for (let shard = 0; shard < MOD_SHARDS; shard++) await backend.createShard({ host: shard < 4 ? HOST_A : HOST_B, shard, fleet: 'lookups' });
}

export async function sqliteTarget(): Promise<KitTarget> {
  const root = mkdtempSync(join(tmpdir(), 'shardkit-kitsuite-'));
  return {
    name: 'sqlite',
    serverPools: false,
    open: async (options = {}) => kitOver(new SqliteBackend({ root, schema: kitSchema, maxOpenShards: 8 }), options.cache),
    snapshot: async () => sqliteSnapshot(root),
    stop: async () => rmSync(root, { recursive: true, force: true }),
  };
}

