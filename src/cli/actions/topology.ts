import { readFile } from 'node:fs/promises';
import { parseConfig } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import { defaultShardMapJson, ShardMap, type ShardRange } from '../../topology/shard-map.js';
import { textTable } from '../text-table.js';

/**
 * Reads a shard map from a topology JSON file (the store's file, `topology show --json` output)
 * or from a whole shardkit config file (its `shardMap`, validated with the rest of the config).
 */
export async function loadShardMapFile(path: string): Promise<ShardMap> {
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
  const prefixed = (fn: () => ShardMap): ShardMap => {
    try {
      return fn();
    } catch (err) {
      if (err instanceof ShardKitError) throw new ShardKitError(err.code, `${path}: ${err.message}`, { cause: err });
      throw err;
    }
  };
  if (json !== null && typeof json === 'object' && !Array.isArray(json) && 'shardMap' in json) {
    return prefixed(() => ShardMap.fromJSON(parseConfig(json).shardMap));
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
export async function showTopology(opts: { file?: string; json?: boolean }): Promise<void> {
  const map = opts.file === undefined ? ShardMap.fromJSON(defaultShardMapJson()) : await loadShardMapFile(opts.file);
  process.stdout.write(`${opts.json ? JSON.stringify(map.toJSON()) : formatShardMapTable(map)}\n`);
}
