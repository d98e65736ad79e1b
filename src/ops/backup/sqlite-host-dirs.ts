import { isAbsolute, join, resolve } from 'node:path';
import type { ShardKitConfig } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import type { ShardMap } from '../../topology/shard-map.js';

/** Each host's directory of the embedded default, as the SQLite backend resolves it. */
export function sqliteHostDirs(config: ShardKitConfig, dataDir: string, map: ShardMap): Map<string, string> {
  if (config.storage.backend !== 'sqlite') throw new ShardKitError('INVALID_CONFIG', 'not an embedded store');
  const root = resolve(dataDir, config.storage.dir);
  const out = new Map<string, string>();
  for (const host of map.hostNames()) {
    const dir = (config.hosts[host] as { dir?: string } | undefined)?.dir;
    out.set(host, dir === undefined || dir === '' ? join(root, host) : isAbsolute(dir) ? dir : resolve(dataDir, dir));
  }
  return out;
}
