import { isShardKitError, ShardKitError } from '../errors.js';
import { diffShardMaps, type RangeChange } from './map-edits.js';
import { ShardMap, type ShardMapJson } from './shard-map.js';
import type { TopologyStore } from './topology-store.js';

export interface ChangeShardMapOptions {
  /** The map to start from when the store is empty (a config's `shardMap`, as a service would seed it). */
  seed?: ShardMap;
  /** Hosts the next map may name (a config's `hosts`); undefined: not checked. */
  hosts?: Iterable<string>;
  /** Compute and validate only; write nothing. */
  dryRun?: boolean;
  /** How many times to redo the change on a newer map after VERSION_CONFLICT before giving up. Default 5. */
  attempts?: number;
}

export interface ShardMapChange {
  before: ShardMap;
  /** The written map (its version is the stored one), or the would-be map on a dry run or no change. */
  after: ShardMap;
  changes: RangeChange[];
  written: boolean;
  /** The store was empty: `before` is the seed, and the write seeded the store. */
  fromSeed: boolean;
  /** How many read-change-write rounds it took (more than 1: someone else wrote in between). */
  attempts: number;
}

/**
 * Reads the live map, computes the next one with `change` (pure: it may run several times),
 * validates it and writes it with compare-and-set, redoing it on the newer map when another
 * writer won the race (docs/topology.md). A change that alters nothing writes nothing.
 */
export async function changeShardMap(
  store: TopologyStore,
  change: (current: ShardMap) => ShardMapJson,
  options: ChangeShardMapOptions = {},
): Promise<ShardMapChange> {
  const attempts = options.attempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    const stored = await store.read();
    const before = stored ?? options.seed;
    if (before === undefined) throw new ShardKitError('INVALID_ARGUMENT', 'the topology store holds no shard map and no config seeds one');
    const nextJson = change(before);
    const next = ShardMap.fromJSON({ ...nextJson, version: before.version }, options.hosts === undefined ? {} : { hosts: options.hosts });
    const changes = diffShardMaps(before.toJSON(), next.toJSON());
    // An empty store is seeded even by a no-op, so the store then holds what the services use.
    if (options.dryRun || (changes.length === 0 && stored !== undefined)) return { before, after: next, changes, written: false, fromSeed: stored === undefined, attempts: attempt };
    try {
      const after = await store.write(next, stored?.version ?? 0);
      return { before, after, changes, written: true, fromSeed: stored === undefined, attempts: attempt };
    } catch (err) {
      if (!isShardKitError(err, 'VERSION_CONFLICT')) throw err;
      if (attempt >= attempts) {
        throw new ShardKitError('VERSION_CONFLICT', `the shard map kept changing under this change: gave up after ${attempt} attempts`, { cause: err });
      }
    }
  }
}
