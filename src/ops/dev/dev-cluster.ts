import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseConfig, type ConfigInput, type ShardKitConfig } from '../../config/config.js';

export type { DevClusterExtension } from './dev-cluster-view.js';
import { ShardKitError } from '../../errors.js';
import type { ShardMapJson } from '../../topology/shard-map.js';
import { MariadbInstance } from '../mariadb/mariadb-instance.js';
import type { DevClusterExtension, DevClusterView } from './dev-cluster-view.js';
import { CONFIG_FILE, readState, STATE_FILE, writeJsonAtomic, type DevClusterState, type DevServer } from './dev-cluster-state.js';
import { buildDevConfig, devShardMapJson } from './dev-config.js';
import { devStatus, type DevServerDetail } from './dev-status.js';

/** A dev cluster recorded in a directory: its state file, its servers and its config. */
export class DevCluster implements DevClusterView {
  readonly dir: string;
  readonly state: DevClusterState;
  private readonly cache = new Map<string, MariadbInstance>();

  constructor(dir: string, state: DevClusterState) {
    this.dir = resolve(dir);
    this.state = state;
  }

  /** The cluster recorded in `dir`, or undefined when `dev up` never ran there. */
  static open(dir: string): DevCluster | undefined {
    const state = readState(join(resolve(dir), STATE_FILE));
    return state ? new DevCluster(dir, state) : undefined;
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
    return devShardMapJson(this);
  }

  /** The config written to `D/shardkit.json`: the default schema on this cluster's masters. */
  buildConfig(extensions: DevClusterExtension[] = []): ConfigInput {
    return buildDevConfig(this, extensions);
  }

  /** MariaDB-only methods refuse a PostgreSQL cluster (devClusterStatus / devClusterDown handle both). */
  private requireMariadb(): void {
    if (this.state.engine === 'postgres') throw new ShardKitError('INVALID_ARGUMENT', `the cluster in ${this.dir} is a PostgreSQL cluster: use devClusterStatus / devClusterDown (src/ops/dev/dev-engine.ts)`);
  }

  /** Every server's status; replication state is read from the running slaves. */
  async status(): Promise<DevServerDetail[]> {
    this.requireMariadb();
    return devStatus(this);
  }

  /** Stops every server (clean shutdown, concurrently); resolves when none is running. */
  async down(): Promise<string[]> {
    this.requireMariadb();
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
