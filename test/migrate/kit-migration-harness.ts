import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, parseConfig, resolveSchema } from '../../src/config/config.js';
import { createBackend } from '../../src/kit/backend-factory.js';
import type { Fleet, ShardBackend, ShardCopy } from '../../src/storage/shard-backend.js';
import { fleetTables } from '../../src/storage/shard-names.js';
import { defaultShardMapJson, ShardMap } from '../../src/topology/shard-map.js';

export type Copier = ShardBackend & ShardCopy;

/**
 * An embedded store (SQLite files) with 8 object shards over two local hosts and 8 mod shards on
 * one: the shape of the targets the tests use (MariaDB dev cluster, PostgreSQL servers), so
 * every shard keeps its number.
 */
export function makeEmbeddedStore(prefix = 'shardkit-migsrc-'): { dir: string; configPath: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const base = defaultConfig({ shards: 8, pairs: 2, hostNames: 'local' });
  const shardMap = defaultShardMapJson({ shards: 8, pairs: 2, hostNames: 'local', modShards: 8, modPairs: 1 });
  const hosts: Record<string, object> = {};
  for (const h of ShardMap.fromJSON(shardMap).hostNames()) hosts[h] = {};
  const config = { ...base, hosts, shardMap };
  parseConfig(config);
  const configPath = join(dir, 'shardkit.json');
  writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`);
  return { dir, configPath };
}

/** Opens the backend of a config file (as the migrator does). */
export async function openBackend(configPath: string): Promise<{ backend: Copier; map: ShardMap; tables: Record<Fleet, string[]> }> {
  const { loadConfigFile } = await import('../../src/config/config.js');
  const { dirname } = await import('node:path');
  const config = loadConfigFile(configPath);
  const schema = resolveSchema(config);
  const backend = (await createBackend({ config, dataDir: dirname(configPath), schema })) as Copier;
  const map = ShardMap.fromJSON(config.shardMap);
  return { backend, map, tables: { objects: fleetTables(schema, 'objects'), lookups: fleetTables(schema, 'lookups') } };
}

/**
 * Every row of every shard of both fleets, as text keyed by fleet/shard/table/key: two stores
 * hold the same data when their dumps are equal (object data compared byte for byte, createdAt to
 * the millisecond, mapping sequences, lookup values).
 */
export async function dumpStore(configPath: string): Promise<Map<string, string>> {
  const { backend, map, tables } = await openBackend(configPath);
  const out = new Map<string, string>();
  try {
    for (const fleet of ['objects', 'lookups'] as const) {
      const count = fleet === 'objects' ? map.shardCount : map.modShardCount;
      for (let shard = 0; shard < count; shard++) {
        const ref = { host: fleet === 'objects' ? map.locate(shard).master : map.locateModShard(shard).master, shard, fleet };
        for (const table of tables[fleet]) {
          let rows: Array<[string, string]> = [];
          try {
            rows = await scanAll(backend, ref, table);
          } catch (err) {
            // A shard the target never created reads as empty.
            if (!/doesn't exist|does not exist|no such/i.test(String((err as Error).message))) throw err;
          }
          for (const [k, v] of rows) out.set(`${fleet}/${shard}/${table}/${k}`, v);
        }
      }
    }
  } finally {
    await backend.close();
  }
  return out;
}

async function scanAll(backend: Copier, ref: { host: string; shard: number; fleet: Fleet }, table: string): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  if (ref.fleet === 'lookups') {
    let after: string | undefined;
    for (;;) {
      const page = await backend.scanLookups(ref, table, after === undefined ? { limit: 1000 } : { limit: 1000, after });
      for (const r of page) out.push([r.key, String(r.value)]);
      if (page.length < 1000) return out;
      after = page[page.length - 1]!.key;
    }
  }
  if (MAPPING_TABLES.has(table)) {
    let after: { fromId: bigint; toId: bigint } | undefined;
    for (;;) {
      const page = await backend.scanMappings(ref, table, after === undefined ? { limit: 1000 } : { limit: 1000, after });
      for (const r of page) out.push([`${r.fromId}:${r.toId}`, String(r.sequence)]);
      if (page.length < 1000) return out;
      after = page[page.length - 1]!;
    }
  }
  let after: number | undefined;
  for (;;) {
    const page = await backend.scanObjects(ref, table, after === undefined ? { limit: 1000 } : { limit: 1000, after });
    for (const r of page) out.push([String(r.localId), `${r.createdAt.getTime()} ${r.data}`]);
    if (page.length < 1000) return out;
    after = page[page.length - 1]!.localId;
  }
}

const MAPPING_TABLES = new Set(resolveSchema(parseConfig(defaultConfig())).mappings.map((m) => m.table));

/** The differences between two dumps (at most `max`), for assertion messages. */
export function diffDumps(a: Map<string, string>, b: Map<string, string>, max = 5): string[] {
  const out: string[] = [];
  for (const [k, v] of a) {
    if (out.length >= max) break;
    if (!b.has(k)) out.push(`only in source: ${k}`);
    else if (b.get(k) !== v) out.push(`differs: ${k}: ${v.slice(0, 60)} vs ${b.get(k)!.slice(0, 60)}`);
  }
  for (const k of b.keys()) {
    if (out.length >= max) break;
    if (!a.has(k)) out.push(`only in target: ${k}`);
  }
  return out;
}

/**
 * The source's mod shards split by their file: an embedded host keeps object shard n and mod shard
 * n in one file, so a mod shard whose host is also its object shard's master shares a file with
 * objects (`withObjects`); the others have a file of their own (`ownFile`).
 */
export function modShardFiles(configPath: string): { withObjects: number[]; ownFile: number[] } {
  const map = ShardMap.fromJSON(JSON.parse(readFileSync(configPath, 'utf8')).shardMap);
  const withObjects: number[] = [];
  const ownFile: number[] = [];
  for (let m = 0; m < map.modShardCount; m++) {
    (m < map.shardCount && map.locate(m).master === map.locateModShard(m).master ? withObjects : ownFile).push(m);
  }
  return { withObjects, ownFile };
}

/** `count` keys of the form `${prefix}${i}` whose mod shard (as `shardOf` says) is `shard`. */
export async function keysOnModShard(shardOf: (key: string) => Promise<number>, prefix: string, shard: number, count: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) if ((await shardOf(`${prefix}${i}`)) === shard) out.push(`${prefix}${i}`);
  return out;
}
