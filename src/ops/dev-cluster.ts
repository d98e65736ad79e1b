import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultConfig, parseConfig, type ConfigInput, type ShardKitConfig } from '../config/config.js';
import { ShardKitError, isShardKitError } from '../errors.js';
import { mysqlBackendFromConfig } from '../kit/backends-from-config.js';
import { evenRanges, ShardMap, type ShardMapJson } from '../topology/shard-map.js';
import { findMariadbBinaries } from './mariadb/mariadb-binaries.js';
import { MariadbInstance, type MysqldSettings } from './mariadb/mariadb-instance.js';
import { pickFreePort } from './free-port.js';
import { initShards, type ShardInitOptions, type ShardInitResult } from './shard-init.js';

/** One server of the dev cluster as recorded in `D/cluster.json`. */
export interface DevServer {
  name: string;
  /** `master`, `slave`, or a role added by an extension (e.g. `ticket`). */
  role: string;
  /** A slave's master. */
  master?: string;
  /** Relative to the cluster directory. */
  dir: string;
}

/** `D/cluster.json`: what `dev up` created, so later commands (any process) can manage it. */
export interface DevClusterState {
  version: 1;
  pairs: number;
  shards: number;
  modShards: number;
  appUser: string;
  appPassword: string;
  replUser: string;
  replPassword: string;
  servers: DevServer[];
}

/** One row of `dev status --json` (exactly these keys). */
export interface DevServerStatus {
  name: string;
  role: string;
  host: string;
  port: number;
  socket: string;
  pid: number | null;
  master: string | null;
  replicationLagSeconds: number | null;
}

/** `dev status` details for the text view. */
export interface DevServerDetail extends DevServerStatus {
  running: boolean;
  /** "-" for non-replicas; for slaves: running, connecting, stopped, or the last error. */
  replication: string;
}

/**
 * A hook for other kinds of dev servers (ticket servers, ...): `dev up` creates, starts and
 * restarts them with the pairs, and they appear in `dev status` with their own role.
 */
export interface DevClusterExtension {
  name: string;
  /** Servers to add; those already in cluster.json (same name) are kept as they are. */
  servers(cluster: DevCluster): Array<{ name: string; role: string; settings?: MysqldSettings }>;
  /** After every server runs, on every `dev up`: create databases, tables, users (idempotently). */
  afterStart?(cluster: DevCluster): Promise<void>;
  /** Adds its section to the config before `D/shardkit.json` is written (first `dev up` only). */
  configure?(config: ConfigInput, cluster: DevCluster): void;
  /** Extra settings for the pairs' servers, when they are created (e.g. a storage engine plugin). */
  pairSettings?(): MysqldSettings;
}

export interface DevUpOptions {
  dir: string;
  pairs?: number;
  shards?: number;
  /** Mod shards (lookup fleet); default: same as shards. */
  modShards?: number;
  extensions?: DevClusterExtension[];
  /** Skip creating the shards (tests that only need servers). */
  skipInit?: boolean;
  onInitProgress?: ShardInitOptions['onProgress'];
  /** Called with a short message at each step. */
  log?: (message: string) => void;
}

export interface DevUpResult {
  cluster: DevCluster;
  created: boolean;
  /** Servers that were started (not already running). */
  started: string[];
  init?: ShardInitResult;
}

export const DEFAULT_DEV_PAIRS = 2;
export const DEFAULT_DEV_SHARDS = 256;

const STATE_FILE = 'cluster.json';
const CONFIG_FILE = 'shardkit.json';
const pad3 = (n: number) => String(n).padStart(3, '0');

/** Binlog + GTID settings every pair member gets; slaves are also read-only. */
function replicationSettings(role: string): MysqldSettings {
  return {
    log_bin: 'mysql-bin',
    binlog_format: 'ROW',
    log_slave_updates: true,
    gtid_strict_mode: true,
    relay_log: 'relay-bin',
    max_binlog_size: '64M',
    expire_logs_days: 2,
    // Reconnect quickly after the master restarts (default 60 s).
    slave_net_timeout: 10,
    ...(role === 'slave' ? { read_only: true } : {}),
  };
}

function writeJsonAtomic(path: string, value: unknown): void {
  writeFileSync(`${path}.tmp`, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
}

async function limit<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

export class DevCluster {
  readonly dir: string;
  readonly state: DevClusterState;
  private readonly cache = new Map<string, MariadbInstance>();

  constructor(dir: string, state: DevClusterState) {
    this.dir = resolve(dir);
    this.state = state;
  }

  /** The cluster recorded in `dir`, or undefined when `dev up` never ran there. */
  static open(dir: string): DevCluster | undefined {
    const file = join(resolve(dir), STATE_FILE);
    if (!existsSync(file)) return undefined;
    let state: DevClusterState;
    try {
      state = JSON.parse(readFileSync(file, 'utf8')) as DevClusterState;
    } catch (err) {
      throw new ShardKitError('INVALID_CONFIG', `${file} is not valid JSON: ${(err as Error).message}`);
    }
    return new DevCluster(dir, state);
  }

  /** Like open, but NOT_FOUND when there is no cluster in `dir`. */
  static require(dir: string): DevCluster {
    const c = DevCluster.open(dir);
    if (!c) throw new ShardKitError('NOT_FOUND', `no dev cluster in ${resolve(dir)} (run \`shardkit dev up --dir ${dir}\` first)`);
    return c;
  }

  get configPath(): string {
    return join(this.dir, CONFIG_FILE);
  }

  get statePath(): string {
    return join(this.dir, STATE_FILE);
  }

  save(): void {
    mkdirSync(this.dir, { recursive: true });
    writeJsonAtomic(this.statePath, this.state);
  }

  server(name: string): DevServer {
    const s = this.state.servers.find((x) => x.name === name);
    if (!s) throw new ShardKitError('NOT_FOUND', `no server ${name} in the dev cluster ${this.dir}`);
    return s;
  }

  /** The MariadbInstance of a server (must have been created by `dev up`). */
  instance(name: string): MariadbInstance {
    let inst = this.cache.get(name);
    if (inst) return inst;
    const s = this.server(name);
    inst = MariadbInstance.load(join(this.dir, s.dir));
    if (!inst) throw new ShardKitError('NOT_FOUND', `server ${name} has no instance.json in ${join(this.dir, s.dir)}`);
    this.cache.set(name, inst);
    return inst;
  }

  /** Servers of one role (`master`, `slave`, `ticket`, ...). */
  serversWithRole(role: string): DevServer[] {
    return this.state.servers.filter((s) => s.role === role);
  }

  /** The validated `D/shardkit.json`. */
  config(): ShardKitConfig {
    return parseConfig(JSON.parse(readFileSync(this.configPath, 'utf8')));
  }

  /** The shard map the cluster was created with: object and mod shards evenly over the pairs. */
  shardMapJson(): ShardMapJson {
    const name = (i: number, role: 'master' | 'slave') => `MySQL${pad3(i)}${role === 'master' ? 'A' : 'B'}`;
    return {
      version: 1,
      ranges: evenRanges(this.state.shards, this.state.pairs, name, true),
      modShards: { count: this.state.modShards, ranges: evenRanges(this.state.modShards, this.state.pairs, name) },
    };
  }

  /** The config written to `D/shardkit.json`: the default schema on this cluster's masters. */
  buildConfig(extensions: DevClusterExtension[] = []): ConfigInput {
    const base = defaultConfig();
    const hosts: Record<string, { host: string; port: number }> = {};
    for (const s of this.state.servers) {
      if (s.role !== 'master' && s.role !== 'slave') continue;
      hosts[s.name] = { host: '127.0.0.1', port: this.instance(s.name).port };
    }
    const config: ConfigInput = {
      storage: { backend: 'mysql', user: this.state.appUser, password: this.state.appPassword, poolSize: 10, connectTimeoutMs: 2000, queryTimeoutMs: 5000 },
      hosts,
      shardMap: this.shardMapJson(),
      topologyStore: { kind: 'file', path: join(this.dir, 'topology.json') },
      schema: base.schema,
    };
    for (const ext of extensions) ext.configure?.(config, this);
    return config;
  }

  /** Every server's status; replication state is read from the running slaves. */
  async status(): Promise<DevServerDetail[]> {
    return Promise.all(this.state.servers.map(async (s) => {
      const inst = this.instance(s.name);
      const pid = inst.pid ?? null;
      const row: DevServerDetail = {
        name: s.name,
        role: s.role,
        host: inst.host,
        port: inst.port,
        socket: inst.socket,
        pid,
        master: s.master ?? null,
        replicationLagSeconds: null,
        running: pid !== null,
        replication: s.role === 'slave' ? 'down' : '-',
      };
      if (pid !== null && s.role === 'slave') {
        try {
          const rows = await inst.admin<Array<Record<string, unknown>>>('SHOW SLAVE STATUS');
          const r = rows[0];
          if (!r) row.replication = 'not configured';
          else {
            const io = String(r.Slave_IO_Running);
            const sql = String(r.Slave_SQL_Running);
            const lag = r.Seconds_Behind_Master;
            row.replicationLagSeconds = lag === null || lag === undefined ? null : Number(lag);
            const error = String(r.Last_IO_Error || r.Last_SQL_Error || '');
            row.replication = io === 'Yes' && sql === 'Yes' ? 'running' : io === 'Connecting' ? `connecting${error ? `: ${error}` : ''}` : `stopped (io ${io}, sql ${sql})${error ? `: ${error}` : ''}`;
          }
        } catch (err) {
          row.replication = `unknown: ${(err as Error).message}`;
        }
      }
      return row;
    }));
  }

  /** Stops every server (clean shutdown, concurrently); resolves when none is running. */
  async down(): Promise<string[]> {
    const stopped: string[] = [];
    await Promise.all(this.state.servers.map(async (s) => {
      const inst = this.instance(s.name);
      if (!inst.isRunning()) return;
      await inst.stop();
      stopped.push(s.name);
    }));
    const still = this.state.servers.filter((s) => this.instance(s.name).isRunning()).map((s) => s.name);
    if (still.length > 0) throw new ShardKitError('INTERNAL', `servers still running after stop: ${still.join(', ')}`);
    return stopped;
  }

  /** Waits until every slave has applied everything its master had written when this was called. */
  async waitForReplication(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    await Promise.all(this.serversWithRole('slave').map(async (s) => {
      const [row] = await this.instance(s.master!).admin<Array<{ pos: string }>>('SELECT @@GLOBAL.gtid_binlog_pos AS pos');
      const pos = row?.pos ?? '';
      if (pos === '') return;
      const left = Math.max(1, Math.ceil((deadline - Date.now()) / 1000));
      const [res] = await this.instance(s.name).admin<Array<{ r: number | string }>>({ sql: 'SELECT MASTER_GTID_WAIT(?, ?) AS r', values: [pos, left] });
      if (Number(res?.r) !== 0) throw new ShardKitError('INTERNAL', `slave ${s.name} did not reach ${pos} within ${timeoutMs} ms`);
    }));
  }
}

function newState(pairs: number, shards: number, modShards: number): DevClusterState {
  const servers: DevServer[] = [];
  for (let i = 1; i <= pairs; i++) {
    const master = `MySQL${pad3(i)}A`;
    const slave = `MySQL${pad3(i)}B`;
    servers.push({ name: master, role: 'master', dir: join('servers', master) });
    servers.push({ name: slave, role: 'slave', master, dir: join('servers', slave) });
  }
  const secret = () => randomBytes(12).toString('hex');
  return { version: 1, pairs, shards, modShards, appUser: 'shardkit', appPassword: secret(), replUser: 'repl', replPassword: secret(), servers };
}

/** Users every server gets, outside the binlog so that master and slave GTID histories stay equal. */
async function setupServer(cluster: DevCluster, inst: MariadbInstance): Promise<void> {
  const { appUser, appPassword, replUser, replPassword } = cluster.state;
  const conn = await inst.connect();
  try {
    await conn.query('SET SESSION sql_log_bin = 0');
    const [anon] = await conn.query("SELECT Host AS host FROM mysql.user WHERE User = ''");
    for (const r of anon as Array<{ host: string }>) await conn.query("DROP USER ''@?", [r.host]);
    // CREATE then ALTER: the password in cluster.json wins even over an older account.
    const account = async (user: string, host: string, password: string, grant: string) => {
      await conn.query('CREATE USER IF NOT EXISTS ?@? IDENTIFIED BY ?', [user, host, password]);
      await conn.query('ALTER USER ?@? IDENTIFIED BY ?', [user, host, password]);
      await conn.query(`GRANT ${grant} ON *.* TO ?@?`, [user, host]);
    };
    for (const host of ['127.0.0.1', 'localhost']) await account(appUser, host, appPassword, 'ALL PRIVILEGES');
    await account(replUser, '127.0.0.1', replPassword, 'REPLICATION SLAVE');
  } finally {
    await conn.end().catch(() => conn.destroy());
  }
}

/** Points a slave at its master with GTID (slave_pos) the first time; later only makes sure it runs. */
async function setupReplication(cluster: DevCluster, slave: DevServer): Promise<void> {
  const inst = cluster.instance(slave.name);
  const master = cluster.instance(slave.master!);
  const conn = await inst.connect();
  try {
    const [rows] = await conn.query('SHOW SLAVE STATUS');
    if ((rows as unknown[]).length === 0) {
      await conn.query(
        "CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = ?, MASTER_USER = ?, MASTER_PASSWORD = ?, MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1",
        [master.port, cluster.state.replUser, cluster.state.replPassword],
      );
    }
    await conn.query('START SLAVE');
  } finally {
    await conn.end().catch(() => conn.destroy());
  }
}

/**
 * `shardkit dev up`: creates (first time) or restarts (later) a local cluster of master/slave
 * pairs of real mariadbd under `dir`, writes `dir/shardkit.json` and creates every shard.
 * A second call starts whatever is not running, keeping the data.
 */
export async function devUp(options: DevUpOptions): Promise<DevUpResult> {
  findMariadbBinaries();
  const log = options.log ?? (() => undefined);
  const dir = resolve(options.dir);
  const extensions = options.extensions ?? [];
  let cluster = DevCluster.open(dir);
  const created = cluster === undefined;
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
  } else {
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
    cluster = new DevCluster(dir, newState(pairs, shards, modShards));
  }
  const c = cluster;
  const extraSettings = new Map<string, MysqldSettings>();
  for (const ext of extensions) {
    for (const s of ext.servers(c)) {
      if (c.state.servers.some((x) => x.name === s.name)) continue;
      c.state.servers.push({ name: s.name, role: s.role, dir: join('servers', s.name) });
      extraSettings.set(s.name, s.settings ?? {});
    }
  }

  // Servers without an instance yet get a port, a server id and a datadir; all are (re)initialised
  // idempotently, a few at a time (mariadb-install-db takes ~0.5 s of CPU each).
  const existing = new Map<string, MariadbInstance>();
  for (const s of c.state.servers) {
    const inst = MariadbInstance.load(join(dir, s.dir));
    if (inst) existing.set(s.name, inst);
  }
  const usedPorts = new Set([...existing.values()].map((i) => i.port));
  let nextServerId = Math.max(0, ...[...existing.values()].map((i) => i.serverId)) + 1;
  const fresh = new Set<string>();
  const instances: MariadbInstance[] = [];
  for (const s of c.state.servers) {
    let inst = existing.get(s.name);
    if (!inst) {
      const port = await pickFreePort(usedPorts);
      usedPorts.add(port);
      const extra = extraSettings.get(s.name) ?? {};
      const pairExtra = Object.assign({}, ...extensions.map((e) => e.pairSettings?.() ?? {})) as MysqldSettings;
      const settings = s.role === 'master' || s.role === 'slave' ? { ...replicationSettings(s.role), ...pairExtra, ...extra } : extra;
      inst = new MariadbInstance({ name: s.name, dir: join(dir, s.dir), port, serverId: nextServerId++, settings });
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

  // Start what is not running; a port taken since we picked it is re-picked on a first start only.
  const started: string[] = [];
  const configWritten = existsSync(c.configPath);
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

  await limit(c.state.servers, 4, (s) => setupServer(c, c.instance(s.name)));
  for (const s of c.serversWithRole('slave')) await setupReplication(c, s);
  for (const ext of extensions) await ext.afterStart?.(c);

  if (!configWritten) {
    const config = c.buildConfig(extensions);
    parseConfig(config);
    writeJsonAtomic(c.configPath, config);
    log(`wrote ${c.configPath}`);
  }

  let init: ShardInitResult | undefined;
  if (!options.skipInit) {
    const config = c.config();
    const backend = mysqlBackendFromConfig(config);
    try {
      init = await initShards(backend, ShardMap.fromJSON(config.shardMap), { concurrencyPerHost: 4, ...(options.onInitProgress ? { onProgress: options.onInitProgress } : {}) });
    } finally {
      await backend.close();
    }
  }
  return { cluster: c, created, started, ...(init ? { init } : {}) };
}
