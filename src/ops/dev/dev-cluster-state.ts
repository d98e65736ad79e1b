import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ShardKitError } from '../../errors.js';

/** One server of the dev cluster as recorded in `D/cluster.json`. */
export interface DevServer {
  name: string;
  /** `master`, `slave`, or a role added by an extension (e.g. `ticket`). */
  role: string;
  /** A slave's master. */
  master?: string;
  /** Relative to the cluster directory. */
  dir: string;
  /**
   * A failed master after an emergency failover: it may hold writes its slave never got, so
   * `dev up` starts it read-only without replication until `shardkit pair rebuild-slave` rebuilds it.
   */
  rebuild?: boolean;
  /** The pair a master/slave belongs to (its gtid_domain_id); absent on older clusters (see pairOf). */
  pair?: number;
}

/** `D/cluster.json`: what `dev up` created, so later commands (any process) can manage it. */
export interface DevClusterState {
  version: 1;
  /** The servers' engine; absent: mariadb. */
  engine?: 'mariadb' | 'postgres';
  pairs: number;
  shards: number;
  modShards: number;
  appUser: string;
  appPassword: string;
  replUser: string;
  replPassword: string;
  /**
   * Commits wait for the slave: semi-synchronous replication (AFTER_SYNC) on MariaDB, a synchronous
   * standby on PostgreSQL. Absent on clusters made before it existed.
   */
  semiSync?: boolean;
  servers: DevServer[];
}

export const STATE_FILE = 'cluster.json';
export const CONFIG_FILE = 'shardkit.json';

export const pad3 = (n: number): string => String(n).padStart(3, '0');

/** The host names of pair i (1-based): MySQL001A (master at creation) and MySQL001B (its slave). */
export function pairNames(i: number): { master: string; slave: string } {
  return { master: `MySQL${pad3(i)}A`, slave: `MySQL${pad3(i)}B` };
}

/** The two servers of pair i as cluster.json records them. */
export function pairServers(i: number): DevServer[] {
  const { master, slave } = pairNames(i);
  return [
    { name: master, role: 'master', dir: join('servers', master), pair: i },
    { name: slave, role: 'slave', master, dir: join('servers', slave), pair: i },
  ];
}

export function newState(pairs: number, shards: number, modShards: number, options: { semiSync?: boolean } = {}): DevClusterState {
  const servers: DevServer[] = [];
  for (let i = 1; i <= pairs; i++) servers.push(...pairServers(i));
  const secret = () => randomBytes(12).toString('hex');
  return {
    version: 1, pairs, shards, modShards,
    appUser: 'shardkit', appPassword: secret(), replUser: 'repl', replPassword: secret(),
    ...(options.semiSync ? { semiSync: true } : {}),
    servers,
  };
}

export function writeJsonAtomic(path: string, value: unknown): void {
  writeFileSync(`${path}.tmp`, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
}

/** The state in `file`, or undefined when it does not exist. */
export function readState(file: string): DevClusterState | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as DevClusterState;
  } catch (err) {
    throw new ShardKitError('INVALID_CONFIG', `${file} is not valid JSON: ${(err as Error).message}`);
  }
}

/** The pair number of a master/slave server (recorded, or read from its name MySQLnnnA/B). */
export function pairOf(server: DevServer): number | undefined {
  if (server.pair !== undefined) return server.pair;
  const m = /^MySQL(\d+)[AB]$/.exec(server.name);
  return m ? Number(m[1]) : undefined;
}

/** True for the servers of master/slave pairs (not ticket servers or other extensions). */
export const isPairMember = (s: DevServer): boolean => s.role === 'master' || s.role === 'slave';
