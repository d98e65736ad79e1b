import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseConfig } from '../../config/config.js';
import { ShardKitError, isShardKitError } from '../../errors.js';
import { mysqlBackendFromConfig } from '../../kit/backends-from-config.js';
import { findMariadbBinaries } from '../mariadb/mariadb-binaries.js';
import { MariadbInstance, type MysqldSettings } from '../mariadb/mariadb-instance.js';
import { pickFreePort } from '../free-port.js';
import { initShards, type ShardInitResult } from '../shard-init.js';
import type { DevUpOptions, DevUpResult } from './dev-up-options.js';
import { setupAccounts } from './dev-accounts.js';
import { DevCluster } from './dev-cluster.js';
import type { DevClusterExtension } from './dev-cluster-view.js';
import { isPairMember, newState, pairOf, writeJsonAtomic } from './dev-cluster-state.js';
import { applyMasterFence, liveShardMap } from './dev-writable.js';
import { replicationSettings, setupReplication } from './dev-replication.js';

export type { DevUpOptions, DevUpResult } from './dev-up-options.js';

export const DEFAULT_DEV_PAIRS = 2;
export const DEFAULT_DEV_SHARDS = 256;

export async function limit<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

/** The cluster in `dir` (checked against the options) or a new one from the options. */
function openOrCreate(options: DevUpOptions, dir: string): { cluster: DevCluster; created: boolean } {
  const cluster = DevCluster.open(dir);
  if (cluster) {
    const st = cluster.state;
    const clash = (what: string, want: number | undefined, have: number) => {
      if (want !== undefined && want !== have) {
        throw new ShardKitError('INVALID_ARGUMENT', `the cluster in ${dir} has ${have} ${what}, not ${want}: run \`shardkit dev down --dir ${options.dir}\` and use a new directory to change it`);
      }
    };
    clash('pairs', options.pairs, st.pairs);
    clash('shards', options.shards, st.shards);
    clash('mod shards', options.modShards, st.modShards);
    if (options.semiSync !== undefined && options.semiSync !== (st.semiSync === true)) {
      throw new ShardKitError('INVALID_ARGUMENT', `the cluster in ${dir} was made ${st.semiSync ? 'with' : 'without'} --semi-sync: use a new directory to change it`);
    }
    return { cluster, created: false };
  }
  const pairs = options.pairs ?? DEFAULT_DEV_PAIRS;
  const shards = options.shards ?? DEFAULT_DEV_SHARDS;
  const modShards = options.modShards ?? shards;
  if (!Number.isInteger(pairs) || pairs < 1 || pairs > 64) throw new ShardKitError('INVALID_ARGUMENT', `--pairs must be in 1..64, got ${pairs}`);
  for (const [what, n] of [['--shards', shards], ['--mod-shards', modShards]] as const) {
    if (!Number.isInteger(n) || n < pairs || n % pairs !== 0 || n > 65536) {
      throw new ShardKitError('INVALID_ARGUMENT', `${what} must be a multiple of --pairs (${pairs}) in ${pairs}..65536, got ${n}`);
    }
  }
  mkdirSync(dir, { recursive: true });
  return { cluster: new DevCluster(dir, newState(pairs, shards, modShards, { semiSync: options.semiSync === true })), created: true };
}

/**
 * Servers without an instance yet get a port, a server id and a datadir; all are (re)initialised
 * idempotently, a few at a time (mariadb-install-db takes ~0.5 s of CPU each). Returns the fresh ones.
 */
export async function ensureInstances(c: DevCluster, extraSettings: Map<string, MysqldSettings>, usedPorts: Set<number>, log: (m: string) => void, extensions: DevClusterExtension[] = []): Promise<Set<string>> {
  const existing = new Map<string, MariadbInstance>();
  for (const s of c.state.servers) {
    const inst = MariadbInstance.load(join(c.dir, s.dir));
    if (inst) existing.set(s.name, inst);
  }
  for (const i of existing.values()) usedPorts.add(i.port);
  let nextServerId = Math.max(0, ...[...existing.values()].map((i) => i.serverId)) + 1;
  const fresh = new Set<string>();
  const instances: MariadbInstance[] = [];
  for (const s of c.state.servers) {
    let inst = existing.get(s.name);
    if (inst && isPairMember(s) && inst.settings['skip-slave-start'] === undefined) {
      // A cluster made before pair members got skip-slave-start (dev-replication.ts): from its next start.
      inst.settings['skip-slave-start'] = true;
      inst.writeFiles();
    }
    if (!inst) {
      const port = await pickFreePort(usedPorts);
      usedPorts.add(port);
      const extra = extraSettings.get(s.name) ?? {};
      const pair = pairOf(s);
      const pairExtra = Object.assign({}, ...extensions.map((e) => e.pairSettings?.() ?? {})) as MysqldSettings;
      const settings = isPairMember(s) ? { ...replicationSettings(s.role, { ...(pair !== undefined ? { pair } : {}), semiSync: c.state.semiSync === true }), ...pairExtra, ...extra } : extra;
      inst = new MariadbInstance({ name: s.name, dir: join(c.dir, s.dir), port, serverId: nextServerId++, settings });
      // Recorded before cluster.json names it, so every listed server can be loaded later.
      inst.writeFiles();
      fresh.add(s.name);
    }
    instances.push(inst);
  }
  c.save();
  await limit(instances, 4, async (inst) => {
    if (fresh.has(inst.name)) log(`creating ${inst.name} in ${inst.dir}`);
    await inst.init();
  });
  return fresh;
}

/** Starts what is not running; a port taken since we picked it is re-picked on a first start only. */
export async function startServers(c: DevCluster, fresh: Set<string>, usedPorts: Set<number>, configWritten: boolean, log: (m: string) => void): Promise<string[]> {
  const started: string[] = [];
  await limit(c.state.servers, 4, async (s) => {
    const inst = c.instance(s.name);
    if (inst.isRunning()) return;
    log(`starting ${s.name} on 127.0.0.1:${inst.port}`);
    for (let attempt = 0; ; attempt++) {
      try {
        await inst.start();
        break;
      } catch (err) {
        const portInUse = isShardKitError(err) && err.details?.portInUse === true;
        if (!portInUse || configWritten || !fresh.has(s.name) || attempt >= 5) throw err;
        const port = await pickFreePort(usedPorts);
        usedPorts.add(port);
        inst.setPort(port);
      }
    }
    started.push(s.name);
  });
  return started;
}

/**
 * `shardkit dev up`: creates (first time) or restarts (later) a local cluster of master/slave
 * pairs of real mariadbd under `dir`, writes `dir/shardkit.json` and creates every shard.
 * A second call starts whatever is not running, keeping the data.
 */
export async function devUp(options: DevUpOptions): Promise<DevUpResult> {
  const existing = DevCluster.open(options.dir);
  if (existing && options.engine !== undefined && options.engine !== (existing.state.engine ?? 'mariadb')) {
    throw new ShardKitError('INVALID_ARGUMENT', `the cluster in ${resolve(options.dir)} is a ${existing.state.engine ?? 'mariadb'} cluster: use another directory for --engine ${options.engine}`);
  }
  if ((existing?.state.engine ?? options.engine) === 'postgres') {
    if ((options.extensions ?? []).length > 0) throw new ShardKitError('INVALID_ARGUMENT', 'extensions (ticket servers, MyRocks) are MariaDB dev cluster options');
    return (await import('./dev-postgres.js')).devUpPostgres(options);
  }
  findMariadbBinaries();
  const log = options.log ?? (() => undefined);
  const dir = resolve(options.dir);
  const extensions = options.extensions ?? [];
  const { cluster: c, created } = openOrCreate(options, dir);
  const extraSettings = new Map<string, MysqldSettings>();
  for (const ext of extensions) {
    for (const s of ext.servers(c)) {
      if (c.state.servers.some((x) => x.name === s.name)) continue;
      c.state.servers.push({ name: s.name, role: s.role, dir: join('servers', s.name) });
      extraSettings.set(s.name, s.settings ?? {});
    }
  }

  const usedPorts = new Set<number>();
  const fresh = await ensureInstances(c, extraSettings, usedPorts, log, extensions);
  const configWritten = existsSync(c.configPath);
  const started = await startServers(c, fresh, usedPorts, configWritten, log);

  await limit(c.state.servers, 4, (s) => setupAccounts(c, c.instance(s.name)));
  for (const s of c.serversWithRole('slave')) if (!s.rebuild) await setupReplication(c, s);
  if (!configWritten) {
    const config = c.buildConfig(extensions);
    parseConfig(config);
    writeJsonAtomic(c.configPath, config);
    log(`wrote ${c.configPath}`);
  }
  // Before the shards are created: the app user cannot write to a read-only master.
  await applyMasterFence(c);
  // Extensions create their own databases (MyRocks: the wide-column shards) as the app user, so
  // they run after the fence too: servers start read-only (dev-replication.ts).
  for (const ext of extensions) await ext.afterStart?.(c);

  let init: ShardInitResult | undefined;
  if (!options.skipInit) {
    const config = c.config();
    const backend = mysqlBackendFromConfig(config);
    try {
      // The live map, not the config's seed: a moved range's old source must not get its object
      // tables back (that would undo the missing-table fence and break drop-moved).
      init = await initShards(backend, await liveShardMap(c), { concurrencyPerHost: 4, ...(options.onInitProgress ? { onProgress: options.onInitProgress } : {}) });
    } finally {
      await backend.close();
    }
  }
  return { cluster: c, created, started, ...(init ? { init } : {}) };
}
