import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseConfig } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import { createTopologyStore } from '../../topology/index.js';
import { defaultShardMapJson, ShardMap, type ShardRange } from '../../topology/shard-map.js';
import { textTable } from '../text-table.js';

/**
 * Reads a shard map from a topology JSON file (the store's file, `topology show --json` output)
 * or from a whole shardkit config file: the live map in its topology store when one was written
 * there (`dataDir`, default the config's directory), else the config's `shardMap` seed.
 */
export async function loadShardMapFile(path: string, dataDir?: string): Promise<ShardMap> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ShardKitError('INVALID_ARGUMENT', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ShardKitError('INVALID_CONFIG', `${path} is not valid JSON: ${(err as Error).message}`);
  }
  const prefixed = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (err) {
      if (err instanceof ShardKitError) throw new ShardKitError(err.code, `${path}: ${err.message}`, { cause: err });
      throw err;
    }
  };
  if (json !== null && typeof json === 'object' && !Array.isArray(json) && 'shardMap' in json) {
    const config = prefixed(() => parseConfig(json));
    // The config's shardMap only seeds the topology store; once a service has run, the store
    // holds the live map (possibly a later version), which is what an operator wants to see.
    if (config.topologyStore.kind === 'file') {
      const store = createTopologyStore(config.topologyStore, { dataDir: dataDir ?? dirname(path) });
      try {
        const live = await store.read();
        if (live !== undefined) return live;
      } finally {
        await store.close();
      }
    }
    return prefixed(() => ShardMap.fromJSON(config.shardMap));
  }
  return prefixed(() => ShardMap.fromJSON(json));
}

const rangeText = (r: ShardRange): string => (r.range[0] === r.range[1] ? `${r.range[0]}` : `${r.range[0]}..${r.range[1]}`);

export function formatShardMapTable(map: ShardMap): string {
  const objects = map.objectRanges();
  const mod = map.modShardRanges();
  return [
    `shard map version ${map.version}: ${map.shardCount} object shards (${map.openShardCount} open) on ${objects.length} ranges; ${map.modShardCount} mod shards`,
    '',
    textTable(['RANGE', 'MASTER', 'SLAVE', 'OPEN'], objects.map((r) => [rangeText(r), r.master, r.slave ?? '-', r.open ? 'yes' : 'no'])),
    '',
    `mod shards (${map.modShardCount}):`,
    textTable(['RANGE', 'MASTER', 'SLAVE'], mod.map((r) => [rangeText(r), r.master, r.slave ?? '-'])),
  ].join('\n');
}

/** `topology show`: the map of --file, or the built-in default map. */
export async function showTopology(opts: { file?: string; json?: boolean; data?: string }): Promise<void> {
  const map = opts.file === undefined ? ShardMap.fromJSON(defaultShardMapJson()) : await loadShardMapFile(opts.file, opts.data);
  process.stdout.write(`${opts.json ? JSON.stringify(map.toJSON()) : formatShardMapTable(map)}\n`);
}
