import type { Fleet, ShardBackend } from '../storage/shard-backend.js';
import type { ShardMap } from '../topology/shard-map.js';

export interface ShardInitProgress {
  /** Shards checked so far (present or created), over every host and both fleets. */
  done: number;
  total: number;
  created: number;
}

export interface ShardInitResult {
  total: number;
  /** Shards that were missing or incomplete and got their database/tables. */
  created: number;
  /** Per master: shards created there. */
  hosts: Record<string, { objects: number; lookups: number }>;
  elapsedMs: number;
}

export interface ShardInitOptions {
  /** Shards created at once on one server (each a handful of DDL statements in sequence). */
  concurrencyPerHost?: number;
  onProgress?: (p: ShardInitProgress) => void;
}

/**
 * Makes every shard of the map exist with every table of the backend's schema, on its master
 * (slaves get them by replication). Idempotent: shards that `listShards` reports complete are
 * skipped, so a second run sends one query per host and changes nothing; an interrupted run is
 * finished by the next one. All masters work at once, `concurrencyPerHost` shards each.
 * The same operation adds the tables of new types, mappings and keyspaces (`schema apply`).
 */
export async function initShards(backend: ShardBackend, map: ShardMap, options: ShardInitOptions = {}): Promise<ShardInitResult> {
  const started = Date.now();
  const concurrency = Math.max(1, options.concurrencyPerHost ?? 4);
  const perHost = new Map<string, Array<{ fleet: Fleet; shards: number[] }>>();
  let total = 0;
  for (const host of map.hostNames()) {
    const objects = map.shardsOnHost(host);
    const lookups = map.modShardsOnHost(host);
    if (objects.length + lookups.length === 0) continue;
    perHost.set(host, [{ fleet: 'objects', shards: objects }, { fleet: 'lookups', shards: lookups }]);
    total += objects.length + lookups.length;
  }
  let done = 0;
  let created = 0;
  const report = () => options.onProgress?.({ done, total, created });
  const hosts: ShardInitResult['hosts'] = {};
  report();
  await Promise.all([...perHost].map(async ([host, fleets]) => {
    const counts = (hosts[host] = { objects: 0, lookups: 0 });
    const todo: Array<{ fleet: Fleet; shard: number }> = [];
    for (const { fleet, shards } of fleets) {
      if (shards.length === 0) continue;
      const present = new Set(await backend.listShards(host, fleet));
      for (const shard of shards) {
        if (present.has(shard)) done++;
        else todo.push({ fleet, shard });
      }
      report();
    }
    let next = 0;
    const worker = async () => {
      while (next < todo.length) {
        const item = todo[next++]!;
        await backend.createShard({ host, shard: item.shard, fleet: item.fleet });
        counts[item.fleet]++;
        created++;
        done++;
        report();
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, todo.length) }, worker));
  }));
  return { total, created, hosts, elapsedMs: Date.now() - started };
}
