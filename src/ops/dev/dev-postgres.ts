import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultConfig, parseConfig, type ConfigInput } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import { postgresBackendFromConfig } from '../../kit/backends-from-config.js';
import { evenRanges, type ShardMap, type ShardMapJson } from '../../topology/shard-map.js';
import { pickFreePort } from '../free-port.js';
import { PostgresServer } from '../postgres/postgres-server.js';
import { initShards, type ShardInitResult } from '../shard-init.js';
import { DevCluster } from './dev-cluster.js';
import { publishHosts } from './dev-host-records.js';
import { pad3, writeJsonAtomic, type DevClusterState, type DevServer } from './dev-cluster-state.js';
import type { DevServerDetail } from './dev-status.js';
import type { DevUpOptions, DevUpResult } from './dev-up-options.js';
import { liveShardMap, mastersOf } from './dev-writable.js';
import { setSyncStandby } from '../postgres/pg-sync-standby.js';

export const PG_DATABASE = 'shardkit';

const pgName = (i: number, role: 'master' | 'slave') => `PG${pad3(i)}${role === 'master' ? 'A' : 'B'}`;

/** The PostgreSQL server of a dev cluster made with `--engine postgres`. */
export function pgServer(cluster: DevCluster, name: string): PostgresServer {
  const s = cluster.server(name);
  const server = PostgresServer.load(join(cluster.dir, s.dir));
  if (!server) throw new ShardKitError('NOT_FOUND', `server ${name} has no instance.json in ${join(cluster.dir, s.dir)}`);
  return server;
}

/**
 * Servers that start as primaries: the masters the live map names, and the masters of pairs no
 * range names (added by `dev add-pair`, waiting to be a move's target or being one, which writes
 * to them with a subscription). A failed master is still in the map (as a slave): it starts as a
 * standby.
 */
export function pgMasters(c: Pick<DevCluster, 'serversWithRole'>, map: ShardMap): Set<string> {
  const masters = mastersOf(map);
  // Named by a range (a failed master is its range's slave): map.hostNames() also names the
  // hosts of moves, and a move's target pair, which serves no range until the switch, came back
  // as a standby with no primary (the mover's copy into it then failed read-only).
  const json = map.toJSON();
  const inRanges = new Set([...json.ranges, ...json.modShards.ranges].flatMap((r) => [r.master, ...(r.slave !== undefined ? [r.slave] : [])]));
  for (const s of c.serversWithRole('master')) if (!inRanges.has(s.name)) masters.add(s.name);
  return masters;
}

export const isPostgresCluster = (c: DevCluster): boolean => c.state.engine === 'postgres';

function newPgState(pairs: number, shards: number, modShards: number, sync: boolean): DevClusterState {
  const servers: DevServer[] = [];
  for (let i = 1; i <= pairs; i++) {
    servers.push({ name: pgName(i, 'master'), role: 'master', dir: join('servers', pgName(i, 'master')), pair: i });
    servers.push({ name: pgName(i, 'slave'), role: 'slave', master: pgName(i, 'master'), dir: join('servers', pgName(i, 'slave')), pair: i });
  }
  // Trust authentication on loopback: the dev servers have no passwords.
  return { version: 1, engine: 'postgres', pairs, shards, modShards, appUser: 'postgres', appPassword: '', replUser: 'postgres', replPassword: '', ...(sync ? { semiSync: true } : {}), servers };
}

function pgShardMap(state: DevClusterState): ShardMapJson {
  return {
    version: 1,
    ranges: evenRanges(state.shards, state.pairs, pgName, true),
    modShards: { count: state.modShards, ranges: evenRanges(state.modShards, state.pairs, pgName) },
  };
}

/**
 * `shardkit dev up --engine postgres`: master/standby pairs of PostgreSQL 15 (the standby a
 * streaming replica made by pg_basebackup), on loopback ports with their own data directories,
 * a config in D/shardkit.json and every shard created. Later runs restart what is down; a server
 * the live map does not name master starts as a standby (standby.signal): a failed master that
 * comes back is read-only.
 */
export async function devUpPostgres(options: DevUpOptions): Promise<DevUpResult> {
  const log = options.log ?? (() => undefined);
  const dir = resolve(options.dir);
  let cluster = DevCluster.open(dir);
  const created = cluster === undefined;
  if (cluster && !isPostgresCluster(cluster)) throw new ShardKitError('INVALID_ARGUMENT', `the cluster in ${dir} is a MariaDB cluster: use another directory for --engine postgres`);
  if (!cluster) {
    const pairs = options.pairs ?? 1;
    const shards = options.shards ?? 16;
    const modShards = options.modShards ?? shards;
    if (!Number.isInteger(pairs) || pairs < 1 || pairs > 16) throw new ShardKitError('INVALID_ARGUMENT', `--pairs must be in 1..16 for postgres, got ${pairs}`);
    for (const [what, n] of [['--shards', shards], ['--mod-shards', modShards]] as const) {
      if (!Number.isInteger(n) || n < pairs || n % pairs !== 0 || n > 65536) throw new ShardKitError('INVALID_ARGUMENT', `${what} must be a multiple of --pairs (${pairs}) in ${pairs}..65536, got ${n}`);
    }
    mkdirSync(join(dir, 'servers'), { recursive: true });
    cluster = new DevCluster(dir, newPgState(pairs, shards, modShards, options.semiSync === true));
    cluster.save();
  }
  const c = cluster;
  // As root the servers run as the postgres user, which must be able to reach their directories.
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'servers'), { recursive: true });
  chmodSync(join(dir, 'servers'), 0o755);

  const used = new Set<number>();
  for (const s of c.state.servers) {
    const existing = PostgresServer.load(join(dir, s.dir));
    if (existing) used.add(existing.port);
  }
  for (const s of c.state.servers) {
    if (PostgresServer.load(join(dir, s.dir))) continue;
    const port = await pickFreePort(used);
    used.add(port);
    new PostgresServer({ name: s.name, dir: join(dir, s.dir), port }).writeFiles();
  }

  const configWritten = existsSync(c.configPath);
  const masters = configWritten ? pgMasters(c, await liveShardMap(c)) : new Set(c.serversWithRole('master').map((s) => s.name));
  const started: string[] = [];
  const start = async (s: DevServer) => {
    const server = pgServer(c, s.name);
    if (server.isRunning()) return;
    log(`starting ${s.name} on 127.0.0.1:${server.port}`);
    await server.start();
    started.push(s.name);
  };
  for (const s of c.state.servers.filter((x) => masters.has(x.name))) {
    const server = pgServer(c, s.name);
    if (!server.isInitialized()) {
      log(`creating ${s.name} in ${server.dir}`);
      await server.initMaster();
    }
    await start(s);
    const have = await server.sql('SELECT 1 FROM pg_database WHERE datname = $1', [PG_DATABASE]);
    if (have.length === 0) await server.sql(`CREATE DATABASE ${PG_DATABASE}`);
  }
  for (const s of c.state.servers.filter((x) => !masters.has(x.name))) {
    const server = pgServer(c, s.name);
    if (!server.isInitialized()) {
      log(`creating ${s.name} as a standby of ${s.master} (pg_basebackup)`);
      await server.initStandbyOf(pgServer(c, s.master!));
    }
    server.markStandby();
    await start(s);
  }

  if (!configWritten) {
    const hosts: Record<string, { host: string; port: number }> = {};
    for (const s of c.state.servers) hosts[s.name] = { host: '127.0.0.1', port: pgServer(c, s.name).port };
    const config: ConfigInput = {
      storage: { backend: 'postgres', user: 'postgres', database: PG_DATABASE, poolSize: 10, connectTimeoutMs: 2000, queryTimeoutMs: 5000 },
      hosts,
      shardMap: pgShardMap(c.state),
      topologyStore: { kind: 'file', path: join(dir, 'topology.json') },
      schema: defaultConfig().schema,
    };
    parseConfig(config);
    writeJsonAtomic(c.configPath, config);
    log(`wrote ${c.configPath}`);
  }

  await applyPgSync(c);

  let init: ShardInitResult | undefined;
  if (!options.skipInit) {
    const config = c.config();
    const backend = postgresBackendFromConfig(config);
    try {
      init = await initShards(backend, await liveShardMap(c), { concurrencyPerHost: 4 });
    } finally {
      await backend.close();
    }
  }
  return { cluster: c, created, started, ...(init ? { init } : {}) };
}

/**
 * Every running master the live map names gets its pair's standby as its synchronous standby on a
 * cluster made with --sync (commits wait for it), or none (asynchronous). A standby marked for
 * rebuild is never waited for: the master would block every commit until the rebuild.
 */
export async function applyPgSync(c: DevCluster): Promise<void> {
  const json = (await liveShardMap(c)).toJSON();
  const slaveOfMaster = new Map<string, string | undefined>();
  for (const r of [...json.ranges, ...json.modShards.ranges]) slaveOfMaster.set(r.master, r.slave);
  for (const [master, slave] of slaveOfMaster) {
    const server = pgServer(c, master);
    if (!server.isRunning()) continue;
    const usable = slave !== undefined && c.state.servers.some((s) => s.name === slave && !s.rebuild);
    await setSyncStandby(server, c.state.semiSync && usable ? slave : undefined);
  }
}

/** `dev status` rows of a postgres cluster: a standby's replication is its WAL receiver's state. */
export async function devPgStatus(c: DevCluster): Promise<DevServerDetail[]> {
  return Promise.all(c.state.servers.map(async (s) => {
    const server = pgServer(c, s.name);
    const pid = server.pid ?? null;
    const row: DevServerDetail = { name: s.name, role: s.role, host: server.host, port: server.port, socket: server.socket, pid, master: s.master ?? null, replicationLagSeconds: null, running: pid !== null, replication: s.role === 'slave' ? 'down' : '-' };
    if (s.rebuild) row.replication = 'needs rebuild (shardkit pair rebuild-slave)';
    else if (pid !== null && s.role === 'slave') {
      try {
        // An idle master sends nothing, so the time since the last replayed commit grows without
        // any lag: a standby that replayed all it received is 0 s behind.
        const [r] = await server.sql<{ status: string | null; lag: string | null }>("SELECT (SELECT status FROM pg_stat_wal_receiver) AS status, CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN '0' ELSE EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())::text END AS lag");
        row.replication = r?.status === 'streaming' ? 'running' : `not streaming (${r?.status ?? 'no WAL receiver'})`;
        row.replicationLagSeconds = r?.lag == null ? null : Math.max(0, Math.round(Number(r.lag)));
      } catch (err) {
        row.replication = `unknown: ${(err as Error).message}`;
      }
    }
    return row;
  }));
}

export async function devPgDown(c: DevCluster): Promise<string[]> {
  const stopped: string[] = [];
  for (const s of c.state.servers) {
    const server = pgServer(c, s.name);
    if (!server.isRunning()) continue;
    await server.stop();
    stopped.push(s.name);
  }
  return stopped;
}


/**
 * `shardkit dev add-pair` on a PostgreSQL dev cluster: one more master (initdb, the shardkit
 * database) and its streaming standby (pg_basebackup), added to D/shardkit.json's hosts but to
 * no range of the map. Unlike a MariaDB pair, its master is a writable primary at once: a shard
 * move fills it through a subscription, and no service writes there before a move switches a
 * range to it.
 */
export async function devAddPairPostgres(c: DevCluster, log: (m: string) => void): Promise<{ pair: number; master: string; slave: string }> {
  const pair = Math.max(0, ...c.state.servers.map((s) => s.pair ?? 0)) + 1;
  const master: DevServer = { name: pgName(pair, 'master'), role: 'master', dir: join('servers', pgName(pair, 'master')), pair };
  const slave: DevServer = { name: pgName(pair, 'slave'), role: 'slave', master: master.name, dir: join('servers', pgName(pair, 'slave')), pair };
  const used = new Set<number>();
  for (const s of c.state.servers) {
    const existing = PostgresServer.load(join(c.dir, s.dir));
    if (existing) used.add(existing.port);
  }
  for (const s of [master, slave]) {
    if (PostgresServer.load(join(c.dir, s.dir))) continue;
    const port = await pickFreePort(used);
    used.add(port);
    new PostgresServer({ name: s.name, dir: join(c.dir, s.dir), port }).writeFiles();
  }
  c.state.servers.push(master, slave);
  c.save();
  const m = pgServer(c, master.name);
  log(`creating ${master.name} in ${m.dir}`);
  await m.initMaster();
  log(`starting ${master.name} on 127.0.0.1:${m.port}`);
  await m.start();
  const have = await m.sql('SELECT 1 FROM pg_database WHERE datname = $1', [PG_DATABASE]);
  if (have.length === 0) await m.sql(`CREATE DATABASE ${PG_DATABASE}`);
  const sl = pgServer(c, slave.name);
  log(`creating ${slave.name} as a standby of ${master.name} (pg_basebackup)`);
  await sl.initStandbyOf(m);
  sl.markStandby();
  log(`starting ${slave.name} on 127.0.0.1:${sl.port}`);
  await sl.start();
  if (c.state.semiSync) await setSyncStandby(m, slave.name);

  const config = JSON.parse(readFileSync(c.configPath, 'utf8')) as ConfigInput;
  const hosts = { ...(config.hosts ?? {}) } as Record<string, unknown>;
  for (const s of [master, slave]) hosts[s.name] = { host: '127.0.0.1', port: pgServer(c, s.name).port };
  const next = { ...config, hosts } as ConfigInput;
  parseConfig(next);
  writeJsonAtomic(c.configPath, next);
  log(`added ${master.name} and ${slave.name} to ${c.configPath}`);
  await publishHosts(c, 'postgres', [{ name: master.name, port: m.port, role: 'master' }, { name: slave.name, port: sl.port, role: 'slave' }]);
  log(`published ${master.name} and ${slave.name} in the topology store`);
  return { pair, master: master.name, slave: slave.name };
}
