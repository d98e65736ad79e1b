import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { defaultConfig, parseConfig, resolveSchema } from '../../src/config/config.js';
import { SqliteBackend } from '../../src/storage/sqlite/sqlite-backend.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap } from '../../src/topology/shard-map.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';

export const testConfig = parseConfig(defaultConfig({ shards: 16, pairs: 2 }));
export const testSchema = resolveSchema(testConfig);

export interface KitFixture {
  kit: ShardKit;
  backend: SqliteBackend;
  topology: TopologyStore;
  root: string;
  cleanup(): Promise<void>;
}

/** A ShardKit on SQLite files in a temp dir, 16 object shards over MySQL001A/MySQL002A. */
export function makeKit(options: { topology?: TopologyStore; shardMap?: ShardMap; random?: () => number } = {}): KitFixture {
  const root = mkdtempSync(join(tmpdir(), 'shardkit-store-'));
  const backend = new SqliteBackend({ root, schema: testSchema, maxOpenShards: 8 });
  const topology = options.topology ?? new MemoryTopologyStore();
  const kit = new ShardKit({
    backend,
    schema: testSchema,
    topology,
    shardMap: options.shardMap ?? ShardMap.fromJSON(testConfig.shardMap),
    ...(options.random ? { random: options.random } : {}),
  });
  return {
    kit,
    backend,
    topology,
    root,
    cleanup: async () => {
      await kit.close();
      await backend.close();
      await topology.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/**
 * The shard files under `dir` and a digest of every row in them: equal snapshots mean nothing
 * was written. (-wal/-shm files are left out: opening a WAL database for a read creates them.)
 */
export function snapshot(dir: string): string {
  const out: string[] = [];
  const walk = (d: string) => {
    let names: string[];
    try {
      names = readdirSync(d).sort();
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) {
        out.push(`${p}/`);
        walk(p);
      } else if (!n.endsWith('-wal') && !n.endsWith('-shm')) {
        out.push(n.endsWith('.sqlite') ? `${p} ${digest(p)}` : p);
      }
    }
  };
  walk(dir);
  return out.join('\n');
}

function digest(path: string): string {
  const db = new Database(path, { readonly: true });
  try {
    db.defaultSafeIntegers(true);
    const hash = createHash('sha1');
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[];
    for (const t of tables) {
      hash.update(`[${t}]`);
      for (const row of db.prepare(`SELECT * FROM "${t}"`).raw().iterate()) hash.update(JSON.stringify(row, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
    }
    return hash.digest('hex');
  } finally {
    db.close();
  }
}
