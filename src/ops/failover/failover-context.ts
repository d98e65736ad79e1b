import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseConfig, type ShardKitConfig } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import { createTopologyStore } from '../../topology/index.js';
import { ShardMap } from '../../topology/shard-map.js';
import type { TopologyStore } from '../../topology/topology-store.js';
import { DevCluster } from '../dev/dev-cluster.js';
import { configHostAdmin, devHostAdmin, type HostAdmin } from './host-admin.js';

/** What failover and rebuild-slave work on: the config, its live topology store and admin access to the hosts. */
export interface FleetContext {
  config: ShardKitConfig;
  store: TopologyStore;
  admin: HostAdmin;
  /** The live map (the store's, else the config's seed). */
  map(): Promise<ShardMap>;
  close(): Promise<void>;
}

export interface FleetOptions {
  /** A dev cluster directory: its config, and admin over the servers' sockets. */
  dir?: string;
  /** A config file (default with --dir: DIR/shardkit.json). */
  config?: string;
  /** Where a relative file topology store resolves (default: the config file's directory). */
  dataDir?: string;
  admin?: HostAdmin;
}

export function openFleet(options: FleetOptions): FleetContext {
  const cluster = options.dir !== undefined ? DevCluster.require(options.dir) : undefined;
  const path = options.config ?? cluster?.configPath;
  if (path === undefined) throw new ShardKitError('INVALID_ARGUMENT', 'give --config FILE (a server fleet) or --dir DIR (a dev cluster)');
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ShardKitError('INVALID_CONFIG', `cannot read config ${path}: ${(err as Error).message}`);
  }
  const config = parseConfig(json);
  if (config.storage.backend !== 'mysql') throw new ShardKitError('INVALID_CONFIG', `failover works on MariaDB pairs; ${path} has storage.backend ${config.storage.backend}`);
  const store = createTopologyStore(config.topologyStore, { dataDir: options.dataDir ?? dirname(resolve(path)) });
  const admin = options.admin ?? (cluster ? devHostAdmin(cluster) : configHostAdmin(config));
  return {
    config,
    store,
    admin,
    map: async () => (await store.read()) ?? ShardMap.fromJSON(config.shardMap),
    close: () => store.close(),
  };
}

/**
 * The slave of every range `master` masters (object and mod shards). INVALID_ARGUMENT when it
 * masters no range, when a range has no slave, or when its ranges name different slaves.
 */
export function slaveOf(map: ShardMap, master: string): string {
  const json = map.toJSON();
  const ranges = [...json.ranges, ...json.modShards.ranges];
  const mastered = ranges.filter((r) => r.master === master);
  if (mastered.length === 0) {
    const asSlave = ranges.some((r) => r.slave === master);
    throw new ShardKitError('INVALID_ARGUMENT', `host ${master} is not a master in the shard map (version ${map.version})${asSlave ? '; it is a slave' : ''}: nothing changed`);
  }
  const slaves = new Set(mastered.map((r) => r.slave));
  if (slaves.has(undefined)) throw new ShardKitError('INVALID_ARGUMENT', `host ${master} masters a range without a slave: nothing to promote (build one with \`shardkit pair rebuild-slave ${master} --slave HOST\`)`);
  if (slaves.size > 1) throw new ShardKitError('INVALID_ARGUMENT', `the ranges of ${master} name different slaves (${[...slaves].join(', ')}): fail over needs one slave per master`);
  return [...slaves][0]!;
}

/** Records new roles in the dev cluster's cluster.json (dev up then configures replication right). */
export function recordDevRoles(admin: HostAdmin, master: string, slave: string | undefined, options: { rebuild?: boolean } = {}): void {
  const c = admin.dev;
  if (!c) return;
  const m = c.server(master);
  m.role = 'master';
  delete m.master;
  delete m.rebuild;
  if (slave !== undefined) {
    const s = c.server(slave);
    s.role = 'slave';
    s.master = master;
    if (options.rebuild) s.rebuild = true;
    else delete s.rebuild;
  }
  c.save();
}
