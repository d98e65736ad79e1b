/**
 * The fleet a chaos run hits: a MariaDB dev cluster (semi-sync, strict: a commit never falls back to
 * async) or a PostgreSQL one (synchronous standbys, --sync), a TCP proxy in front of every server for the services, two `shardkit serve` processes
 * on the proxied config, `shardkit heal --mode act`, and HTTP writers keeping a ledger of
 * acknowledged writes. chaos-run.ts applies the faults; this file holds the parts and the checks.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DevCluster } from '../../src/ops/dev-cluster.js';
import { pairOf } from '../../src/ops/dev/dev-cluster-state.js';
import { liveShardMap } from '../../src/ops/dev/dev-writable.js';
import { pairsOf } from '../../src/ops/heal/heal-supervisor.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { startService, type Service } from '../failover/serve-fixture.js';
import { startHeal, type HealProcess } from '../failover/heal-process.js';
import { TcpProxy, type ProxyMode } from './tcp-proxy.js';
import { chaosEngine, type ChaosEngine, type ChaosEngineName } from './chaos-engines.js';

/** An acknowledged write: when it was sent and when the answer came. */
export interface Ack { id: string; sentAt: number; at: number; shard: number }

export class ChaosFleet {
  readonly proxies = new Map<string, TcpProxy>();
  services: Service[] = [];
  heal!: HealProcess;
  readonly acked: Ack[] = [];
  readonly errors = new Map<string, number>();
  /** Masters a fault killed or stopped, and while (until the supervisor settled): failovers are due there only. */
  readonly hits: Array<{ master: string; from: number; to: number }> = [];
  /** Decisions of supervisors killed earlier in the run. */
  private readonly pastDecisions: HealProcess['decisions'] = [];
  /** Moments when two servers of one pair both accepted writes. */
  readonly doubleWriters: Array<{ at: number; pair: number; hosts: string[] }> = [];
  private stopping = false;
  private loops: Promise<void>[] = [];

  private constructor(readonly dir: string, private readonly stopCluster: () => Promise<void>, readonly shards: number, private readonly servicesConfig: string, private readonly witness: boolean, readonly engine: ChaosEngine) {}

  static async start(options: { engine?: ChaosEngineName; pairs: number; shards: number; services: number; writersPerService: number; witness?: boolean; log: (m: string) => void }): Promise<ChaosFleet> {
    const engine = chaosEngine(options.engine ?? 'mariadb');
    const fx = await startTestCluster({ ...(engine.name === 'postgres' ? { engine: 'postgres' as const } : {}), pairs: options.pairs, shards: options.shards, modShards: options.shards, semiSync: true, prefix: 'shardkit-chaos-' });
    const fleet = new ChaosFleet(fx.dir, fx.stop, options.shards, join(fx.dir, 'chaos-services.json'), options.witness ?? true, engine);
    try {
      await fleet.afterRestart();
      const config = JSON.parse(readFileSync(fx.cluster.configPath, 'utf8')) as { hosts: Record<string, { port?: number }> };
      for (const name of Object.keys(config.hosts)) {
        const proxy = await TcpProxy.start(engine.port(fx.cluster, name));
        fleet.proxies.set(name, proxy);
        config.hosts[name]!.port = proxy.port;
      }
      writeFileSync(fleet.servicesConfig, JSON.stringify(config, null, 2));
      for (let i = 0; i < options.services; i++) fleet.services.push(await startService(fleet.servicesConfig, fleet.dir));
      fleet.heal = await fleet.startHeal();
      for (let i = 0; i < options.services; i++) for (let w = 0; w < options.writersPerService; w++) fleet.loops.push(fleet.writer(i));
      fleet.loops.push(fleet.probeWriters());
      options.log(`${engine.name} fleet up in ${fx.dir}: ${options.pairs} pairs, ${options.shards} shards, ${options.services} services`);
    } catch (err) {
      await fleet.stop();
      throw err;
    }
    return fleet;
  }

  cluster(): DevCluster {
    return DevCluster.require(this.dir);
  }

  allDecisions(): HealProcess['decisions'] {
    return [...this.pastDecisions, ...(this.heal?.decisions ?? [])];
  }

  async killHeal(): Promise<void> {
    await this.heal.kill();
    this.pastDecisions.push(...this.heal.decisions);
  }

  async startHeal(): Promise<HealProcess> {
    const heal = startHeal(['--dir', this.dir, '--mode', 'act', '--interval-ms', '200', '--dead-after', '3', '--flap-window-s', '0', '--rebuild', ...(this.witness ? ['--witness', 'services'] : [])]);
    await heal.ready;
    return heal;
  }

  async restartService(i: number): Promise<void> {
    this.services[i]!.proc.kill('SIGKILL');
    await new Promise<void>((r) => (this.services[i]!.proc.exitCode !== null || this.services[i]!.proc.signalCode !== null ? r() : this.services[i]!.proc.once('exit', () => r())));
    this.services[i] = await startService(this.servicesConfig, this.dir);
  }

  /**
   * `mode` on the supervisor's way to `hosts` for `ms`: a proxy takes each server's unix socket
   * path (the supervisor reaches dev servers by socket), the server's own socket renamed aside
   * and put back after (each rename atomic: no connect finds no socket). The services (TCP, their
   * own proxies) and the slaves (TCP to the port) still reach the servers.
   */
  async supervisorPath(hosts: string[], mode: ProxyMode, ms: number): Promise<void> {
    const c = this.cluster();
    const installed: Array<{ socket: string; real: string; proxy: TcpProxy }> = [];
    try {
      for (const h of hosts) {
        const socket = this.engine.supervisorSocket(c, h);
        if (socket === undefined || !this.engine.isRunning(c, h)) continue;
        const real = `${socket}.chaos-real`;
        const proxy = await TcpProxy.start(real, Math.random, `${socket}.chaos-proxy`);
        renameSync(socket, real);
        renameSync(`${socket}.chaos-proxy`, socket);
        installed.push({ socket, real, proxy });
        proxy.mode = mode;
      }
      await sleep(ms);
    } finally {
      for (const x of installed) {
        renameSync(x.real, x.socket);
        await x.proxy.close();
      }
    }
  }

  /** What a restarted server lost that the run relies on (MariaDB: the strict semi-sync wait). */
  async afterRestart(): Promise<void> {
    await this.engine.afterRestart(this.cluster());
  }

  /** Writers: create a pin on a random shard through service i, retrying whatever fails. */
  private async writer(i: number): Promise<void> {
    let k = 0;
    while (!this.stopping) {
      const shard = Math.floor(Math.random() * this.shards);
      const url = this.services[i]!.url;
      let code: string;
      const sentAt = Date.now();
      try {
        const res = await fetch(`${url}/v1/objects/pin`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: { k: k++ }, shard }), signal: AbortSignal.timeout(30_000) });
        const body = await res.text();
        if (res.status === 201) {
          this.acked.push({ id: (JSON.parse(body) as { id: string }).id, sentAt, at: Date.now(), shard });
          continue;
        }
        code = `${res.status} ${(/"code":"(\w+)"/.exec(body) ?? [])[1] ?? body.slice(0, 40)}`;
      } catch (err) {
        code = (err as Error).name === 'TimeoutError' ? 'client timeout' : 'connection failed';
      }
      this.errors.set(code, (this.errors.get(code) ?? 0) + 1);
      await sleep(25);
    }
  }

  /** Every 250 ms: how many servers of each pair accept writes. More than one is a split brain. */
  private async probeWriters(): Promise<void> {
    while (!this.stopping) {
      const c = this.cluster();
      const byPair = new Map<number, string[]>();
      await Promise.all(c.state.servers.map(async (s) => {
        const pair = s.pair ?? pairOf(s);
        if (pair === undefined || !this.engine.isRunning(c, s.name)) return;
        // A server that does not answer accepts no write either.
        if ((await this.engine.writable(c, s.name)) === true) byPair.set(pair, [...(byPair.get(pair) ?? []), s.name]);
      }));
      for (const [pair, hosts] of byPair) if (hosts.length > 1) this.doubleWriters.push({ at: Date.now(), pair, hosts });
      await sleep(250);
    }
  }

  /** Resolves once a write to one of `shards` sent after `since` was acknowledged; `since` until then (ms). */
  async ackedAfter(since: number, shards: Set<number>, timeoutMs = 120_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const a = this.acked.find((x) => x.sentAt > since && shards.has(x.shard));
      if (a !== undefined) return a.at - since;
      if (Date.now() > deadline) throw new Error(`no write to shards ${[...shards].join(',')} acknowledged within ${timeoutMs} ms`);
      await sleep(50);
    }
  }

  /** Shards the map places on `master` now. */
  async shardsOf(master: string): Promise<Set<number>> {
    const map = await liveShardMap(this.cluster());
    const out = new Set<number>();
    for (let s = 0; s < this.shards; s++) if (map.locate(s).master === master) out.add(s);
    return out;
  }

  /**
   * Whether every pair the map names is whole: the master writable, its slave replicating (IO and
   * SQL threads running, no error). The reason when not.
   */
  async health(): Promise<string | undefined> {
    const c = this.cluster();
    for (const { master, slave } of pairsOf(await liveShardMap(c))) {
      try {
        const problem = await this.engine.pairProblem(c, master, slave);
        if (problem !== undefined) return problem;
      } catch (err) {
        return `${master}/${slave}: ${(err as Error).message}`;
      }
    }
    return undefined;
  }

  /**
   * Waits until every slave the map names applied its master's writes (MASTER_GTID_WAIT on the
   * master's position; PostgreSQL: its replay LSN), at most `boundMs`: a slave rebuilt or back from a crash under load may
   * apply for long after its threads run, and `shards verify` waits for each chunk only 30 s.
   */
  async slavesCaughtUp(boundMs: number): Promise<number> {
    const c = this.cluster();
    const started = Date.now();
    for (const { master, slave } of pairsOf(await liveShardMap(c))) {
      const left = boundMs - (Date.now() - started);
      if (left <= 0 || !(await this.engine.caughtUp(c, master, slave, left))) throw new Error(`${slave} did not apply ${master}'s writes within ${boundMs} ms`);
    }
    return Date.now() - started;
  }

  async stopWriters(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.loops);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.allSettled(this.loops);
    await this.heal?.stop().catch(() => undefined);
    await Promise.allSettled(this.services.map((s) => s.stop()));
    for (const p of this.proxies.values()) await p.close().catch(() => undefined);
    const c = this.cluster();
    // A server left stopped (SIGSTOP) would never shut down.
    for (const s of c.state.servers) for (const pid of this.engine.pids(c, s.name)) try { process.kill(pid, 'SIGCONT'); } catch { /* gone */ }
    await this.stopCluster();
  }
}
