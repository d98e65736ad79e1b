import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseConfig, type ShardKitConfig } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import { createTopologyStore } from '../../topology/index.js';
import { checkRecordName, parseRecord } from '../../topology/record-set.js';
import { hostRecordKind, type HostRecord, type HostRecords } from '../../topology/host-records.js';
import type { TopologyStore } from '../../topology/topology-store.js';
import { textTable } from '../text-table.js';

export interface HostsOptions {
  file?: string;
  data?: string;
  json?: boolean;
}

export interface AddHostOptions extends HostsOptions {
  address?: string;
  port?: string;
  role?: string;
  engine?: string;
  credentialsFrom?: string;
}

/** The config's topology store (any kind: host records are plain keys, no map lock) and the config. */
async function withHosts<T>(opts: HostsOptions, work: (hosts: HostRecords, store: TopologyStore, config: ShardKitConfig) => Promise<T>): Promise<T> {
  if (opts.file === undefined) throw new ShardKitError('INVALID_ARGUMENT', '--file <config> is required: the shardkit config whose topology store keeps the hosts');
  let text: string;
  try {
    text = readFileSync(opts.file, 'utf8');
  } catch (err) {
    throw new ShardKitError('INVALID_ARGUMENT', `cannot read ${opts.file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let config: ShardKitConfig;
  try {
    config = parseConfig(JSON.parse(text));
  } catch (err) {
    throw new ShardKitError(err instanceof ShardKitError ? err.code : 'INVALID_CONFIG', `${opts.file}: ${(err as Error).message}`);
  }
  const store = createTopologyStore(config.topologyStore, { dataDir: opts.data ?? dirname(opts.file) });
  try {
    if (store.hosts === undefined) throw new ShardKitError('INVALID_ARGUMENT', `the "${config.topologyStore.kind}" topology store of ${opts.file} keeps no host records`);
    return await work(store.hosts, store, config);
  } finally {
    await store.close();
  }
}

/** `topology hosts add <name>`: the operator's input checked as the store checks it, as a 400 naming the option. */
export async function addHost(name: string, opts: AddHostOptions): Promise<void> {
  checkRecordName(hostRecordKind, name);
  const record = { address: opts.address, port: opts.port !== undefined && /^\d{1,5}$/.test(opts.port) ? Number(opts.port) : opts.port, role: opts.role, engine: opts.engine, ...(opts.credentialsFrom !== undefined ? { credentialsFrom: opts.credentialsFrom } : {}) };
  let checked: HostRecord;
  try {
    checked = parseRecord(hostRecordKind, JSON.stringify(record), name);
  } catch (err) {
    const message = (err as Error).message.replace(/^host record \S+: /, '');
    throw new ShardKitError('INVALID_ARGUMENT', `topology hosts add ${name}: --${optionOf(message)}: ${message.replace(/^[^:]*: /, '')}`);
  }
  await withHosts(opts, async (hosts, _store, config) => {
    if (checked.credentialsFrom !== undefined && !Object.hasOwn(config.hosts, checked.credentialsFrom)) {
      throw new ShardKitError('INVALID_ARGUMENT', `--credentials-from ${checked.credentialsFrom}: not a host of ${opts.file} "hosts"`);
    }
    await hosts.put(name, checked);
  });
  process.stdout.write(opts.json ? `${JSON.stringify({ added: name, ...checked })}\n` : `host ${name} (${checked.engine} ${checked.role}) at ${checked.address}:${checked.port} is in the topology store; running services learn it when the map names it\n`);
}

function optionOf(message: string): string {
  const field = message.split(':')[0] ?? '';
  return field === 'credentialsFrom' ? 'credentials-from' : field === '(root)' ? 'address' : field;
}

export async function listHosts(opts: HostsOptions): Promise<void> {
  const records = await withHosts(opts, async (hosts) => hosts.readAll());
  const rows = [...records].sort(([a], [b]) => a.localeCompare(b));
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ hosts: rows.map(([name, r]) => ({ name, ...r })) })}\n`);
    return;
  }
  if (rows.length === 0) {
    process.stdout.write('no host records in the topology store (services use their config files\' "hosts" only)\n');
    return;
  }
  process.stdout.write(textTable(['host', 'address', 'port', 'role', 'engine', 'credentials from'], rows.map(([name, r]) => [name, r.address, String(r.port), r.role, r.engine, r.credentialsFrom ?? '(storage section)'])) + '\n');
}

/** Refused while the live map still names the host: services would lose the way to its ranges. */
export async function removeHost(name: string, opts: HostsOptions): Promise<void> {
  checkRecordName(hostRecordKind, name);
  await withHosts(opts, async (hosts, store) => {
    const map = await store.read();
    if (map?.hostNames().includes(name)) throw new ShardKitError('INVALID_ARGUMENT', `host ${name} is still named by shard map version ${map.version}: move its ranges away (shards move) first`);
    if (!(await hosts.readAll()).has(name)) throw new ShardKitError('NOT_FOUND', `no host record ${name} in the topology store`);
    await hosts.remove(name);
  });
  process.stdout.write(opts.json ? `${JSON.stringify({ removed: name })}\n` : `host ${name} removed from the topology store\n`);
}
