import { readFileSync } from 'node:fs';
import type { ConfigInput } from '../../config/config.js';
import { parseConfig } from '../../config/config.js';
import { setupAccounts } from './dev-accounts.js';
import { DevCluster } from './dev-cluster.js';
import { devAddPairPostgres, isPostgresCluster } from './dev-postgres.js';
import { isPairMember, pairOf, pairServers, writeJsonAtomic } from './dev-cluster-state.js';
import { ensureInstances, startServers } from './dev-up.js';
import { setupReplication } from './dev-replication.js';
import { applyMasterFence } from './dev-writable.js';
import { publishHosts } from './dev-host-records.js';

export interface AddedPair {
  pair: number;
  master: string;
  slave: string;
}

/**
 * `shardkit dev add-pair`: one more empty master/slave pair in a running dev cluster (the
 * target of a shard move), added to D/shardkit.json's hosts and to the topology store's host
 * records (services with other config files learn it there) but to no range of the map. Its
 * master stays read-only until the map names it master (applyMasterFence). PostgreSQL clusters:
 * devAddPairPostgres.
 */
export async function devAddPair(dir: string, options: { log?: (m: string) => void } = {}): Promise<AddedPair> {
  const log = options.log ?? (() => undefined);
  const c = DevCluster.require(dir);
  if (isPostgresCluster(c)) return devAddPairPostgres(c, log);
  const pair = Math.max(0, ...c.state.servers.filter(isPairMember).map((s) => pairOf(s) ?? 0)) + 1;
  const [masterServer, slaveServer] = pairServers(pair);
  c.state.servers.push(masterServer!, slaveServer!);
  const usedPorts = new Set<number>();
  const fresh = await ensureInstances(c, new Map(), usedPorts, log);
  // Its ports are in no config yet: a port taken since it was picked may be re-picked.
  await startServers(c, fresh, usedPorts, false, log);
  for (const s of [masterServer!, slaveServer!]) await setupAccounts(c, c.instance(s.name));
  await setupReplication(c, slaveServer!);

  const config = JSON.parse(readFileSync(c.configPath, 'utf8')) as ConfigInput;
  const hosts = { ...(config.hosts ?? {}) } as Record<string, unknown>;
  for (const s of [masterServer!, slaveServer!]) hosts[s.name] = { host: '127.0.0.1', port: c.instance(s.name).port };
  const next = { ...config, hosts } as ConfigInput;
  parseConfig(next);
  writeJsonAtomic(c.configPath, next);
  log(`added ${masterServer!.name} and ${slaveServer!.name} to ${c.configPath}`);
  await publishHosts(c, 'mariadb', [{ name: masterServer!.name, port: c.instance(masterServer!.name).port, role: 'master' }, { name: slaveServer!.name, port: c.instance(slaveServer!.name).port, role: 'slave' }]);
  log(`published ${masterServer!.name} and ${slaveServer!.name} in the topology store`);
  await applyMasterFence(c);
  return { pair, master: masterServer!.name, slave: slaveServer!.name };
}
