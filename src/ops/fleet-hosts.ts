import type { ShardKitConfig } from '../config/config.js';
import { hostsFromRecords } from '../topology/host-records.js';
import type { TopologyStore } from '../topology/topology-store.js';

/**
 * The config as a running service sees it (#28: hosts are topology): its own `hosts` plus the
 * topology store's host records it lacks, reached with its credentials. An operator who recorded
 * a new pair with `topology hosts add` can then move shards onto it or split a range to it without
 * also editing the config file the tools read. The config's own entries win; a store that keeps
 * no host records, or cannot be read, leaves the config as it is.
 */
export async function withHostRecords(config: ShardKitConfig, store: TopologyStore): Promise<ShardKitConfig> {
  const records = await store.hosts?.readAll().catch(() => undefined);
  if (records === undefined || records.size === 0) return config;
  const learned = hostsFromRecords(records, config.hosts);
  if (Object.keys(learned).length === 0) return config;
  return { ...config, hosts: { ...learned, ...config.hosts } };
}
