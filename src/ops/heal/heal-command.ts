import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { ShardKitConfig } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import { DevCluster } from '../dev/dev-cluster.js';
import { liveShardMap } from '../dev/dev-writable.js';
import { openFleet } from '../failover/failover-context.js';
import { emergencyFailover } from '../failover/emergency-failover.js';
import { rebuildSlave } from '../failover/rebuild-slave.js';
import { isPostgresFleetConfig } from '../failover/pg-fleet-config.js';
import { acquireHealLock } from './heal-lease.js';
import { EtcdActingLease } from './etcd-lease.js';
import { HealReporter } from './heal-report.js';
import type { HealSettings } from './heal-rules.js';
import { DEFAULT_HEAL_SETTINGS, HealSupervisor, type HealTarget, type HealWitness } from './heal-supervisor.js';
import { createTopologyStore } from '../../topology/index.js';
import { casAbortMovesFrom } from '../../moves/move-state.js';
import type { TopologyStore } from '../../topology/topology-store.js';
import { observeMariadbPair } from './mariadb-probe.js';

export interface HealCliOptions {
  config?: string;
  dir?: string;
  data?: string;
  mode?: string;
  intervalMs?: number;
  probeTimeoutMs?: number;
  deadAfter?: number;
  maxLagS?: number;
  flapWindowS?: number;
  once?: boolean;
  rebuild?: boolean;
  spares?: string;
  webhook?: string;
  metricsPort?: number;
  leaseTtlS?: number;
  witness?: string;
  witnessWaitMs?: number;
}

const log = (m: string) => process.stderr.write(`shardkit heal: ${m}\n`);

interface OpenedTarget {
  target: HealTarget;
  lockDir: string;
  /** Where the map lives: an etcd store makes the acting supervisor's lock an etcd lease. */
  topologyStore: ShardKitConfig['topologyStore'];
  /** The store itself: the supervisor's status and the services' heartbeats (the third witness). */
  store: TopologyStore;
  close(): Promise<void>;
}

async function openTarget(opts: HealCliOptions, timeoutMs: number): Promise<OpenedTarget> {
  const cluster = opts.dir !== undefined ? DevCluster.require(opts.dir) : undefined;
  if (cluster?.state.engine === 'postgres') {
    const { observePgPair } = await import('./postgres-probe.js');
    const { pgEmergencyFailover, pgRebuildSlave } = await import('../failover/pg-failover.js');
    const store = createTopologyStore(cluster.config().topologyStore, { dataDir: cluster.dir });
    return {
      store,
      target: {
        map: () => liveShardMap(cluster), observe: (m, s) => observePgPair(cluster, m, s, timeoutMs), failover: (m) => pgEmergencyFailover(cluster, m),
        abortMoves: (m, why) => casAbortMovesFrom(store, m, why),
        rebuild: (m, slave) => pgRebuildSlave(cluster, m, slave !== undefined ? { slave } : {}),
      },
      lockDir: cluster.dir,
      topologyStore: cluster.config().topologyStore,
      close: () => store.close(),
    };
  }
  if (cluster === undefined && opts.config !== undefined && isPostgresFleetConfig(opts.config)) {
    const { observePgPairBy } = await import('./postgres-probe.js');
    const pgFleet = await import('../failover/pg-fleet-failover.js');
    const f = pgFleet.openPgFleet({ config: opts.config, ...(opts.data !== undefined ? { dataDir: opts.data } : {}) });
    return {
      target: {
        map: () => f.map(), observe: (m, s) => observePgPairBy((host, text) => f.sql(host, text, [], timeoutMs), m, s, timeoutMs),
        failover: (m) => pgFleet.pgFleetEmergencyFailover(f, m),
        abortMoves: (m, why) => casAbortMovesFrom(f.store, m, why),
        // Needs the slave's machine: SHARDKIT_REBUILD_COMMAND (docs/failover.md).
        rebuild: (m, slave) => pgFleet.pgFleetRebuildSlave(f, m, slave !== undefined ? { slave } : {}),
      },
      store: f.store,
      lockDir: dirname(resolve(opts.config)),
      topologyStore: f.config.topologyStore,
      close: () => f.close(),
    };
  }
  const fleet = openFleet({ ...(opts.dir !== undefined ? { dir: opts.dir } : {}), ...(opts.config !== undefined ? { config: opts.config } : {}), ...(opts.data !== undefined ? { dataDir: opts.data } : {}) });
  return {
    target: {
      map: () => fleet.map(), observe: (m, s) => observeMariadbPair(fleet.admin, m, s, timeoutMs), failover: (m) => emergencyFailover(fleet, m, { log }),
      abortMoves: (m, why) => casAbortMovesFrom(fleet.store, m, why),
      rebuild: (m, slave) => rebuildSlave(fleet, m, { log, ...(slave !== undefined ? { slave } : {}) }),
    },
    store: fleet.store,
    lockDir: cluster?.dir ?? dirname(resolve(opts.config!)),
    topologyStore: fleet.config.topologyStore,
    close: () => fleet.close(),
  };
}

/**
 * The supervisor's status in the store's heal records (the dashboard's pair states, the suspects
 * the services probe) and, with `ask`, the services' heartbeats as the third witness.
 */
function statusWitness(store: TopologyStore, id: string, intervalMs: number, ask: boolean, waitMs: number): HealWitness | undefined {
  const heal = store.heal;
  const services = store.services;
  if (heal === undefined || services === undefined) return undefined;
  return {
    ask, waitMs,
    services: () => services.readAll(),
    history: () => heal.readAll(),
    publish: (s) => heal.put(id, { ...s, acting: s.mode === 'act', at: Date.now(), ttlMs: Math.max(10_000, 5 * intervalMs), hostname: hostname().slice(0, 256), pid: process.pid }),
  };
}

/** `shardkit heal`: probes every pair; observe recommends, act fails over a confirmed dead master. JSON lines on stdout. */
export async function healCommand(opts: HealCliOptions): Promise<void> {
  const mode = opts.mode ?? 'observe';
  if (mode !== 'observe' && mode !== 'act') throw new ShardKitError('INVALID_ARGUMENT', `--mode is observe or act, got ${JSON.stringify(mode.slice(0, 20))}`);
  const settings: HealSettings = {
    mode,
    deadAfterProbes: opts.deadAfter ?? DEFAULT_HEAL_SETTINGS.deadAfterProbes,
    maxLagSeconds: opts.maxLagS ?? DEFAULT_HEAL_SETTINGS.maxLagSeconds,
    flapWindowMs: opts.flapWindowS !== undefined ? opts.flapWindowS * 1000 : DEFAULT_HEAL_SETTINGS.flapWindowMs,
    rebuild: opts.rebuild === true,
    spares: (opts.spares ?? '').split(',').map((h) => h.trim()).filter((h) => h !== ''),
  };
  if (opts.webhook !== undefined && !/^https?:\/\/[^\s]+$/.test(opts.webhook)) throw new ShardKitError('INVALID_ARGUMENT', '--webhook takes an http:// or https:// URL');
  if (settings.rebuild && mode !== 'act') throw new ShardKitError('INVALID_ARGUMENT', '--rebuild needs --mode act (observe mode changes nothing)');
  if (opts.witness !== undefined && opts.witness !== 'services') throw new ShardKitError('INVALID_ARGUMENT', `--witness takes services, got ${JSON.stringify(opts.witness.slice(0, 20))}`);
  const { target, lockDir, topologyStore, store, close } = await openTarget(opts, opts.probeTimeoutMs ?? 1000);
  const supervisorId = `heal.${hostname().replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 80) || 'host'}.${process.pid}`;
  const intervalMs = opts.intervalMs ?? 1000;
  const witness = statusWitness(store, supervisorId, intervalMs, opts.witness === 'services', opts.witnessWaitMs ?? 5000);
  const reporter = new HealReporter({ ...(opts.webhook !== undefined ? { webhook: opts.webhook } : {}), log });
  const supervisor = new HealSupervisor(target, settings, (d) => {
    process.stdout.write(`${JSON.stringify(d)}\n`);
    reporter.decision(d);
  }, Date.now, (obs) => reporter.pairState(obs.master, obs.slave, obs.masterReachable), witness);
  // Several supervisors may observe; exactly one acts: the holder of an etcd lease when the map is
  // in etcd (the others observe until it is gone), else of a lock file beside the config.
  let release: () => Promise<void> | void = () => {};
  if (mode === 'act' && topologyStore.kind === 'etcd') {
    supervisor.setMode('observe');
    const lease = await EtcdActingLease.open({ endpoints: topologyStore.endpoints, name: `shardkit-heal:${topologyStore.key ?? '/shardkit/topology'}`, ttlSeconds: opts.leaseTtlS ?? 5, id: `${hostname()}:${process.pid}` }, {
      onElected: () => {
        supervisor.setMode('act');
        reporter.setActing(true);
        log('holds the etcd lease: acting');
      },
      onLost: (err) => {
        supervisor.setMode('observe');
        reporter.setActing(false);
        log(`lost the etcd lease (${err.message}): observing until elected again`);
      },
    });
    release = () => lease.close();
  } else if (mode === 'act') {
    try {
      release = acquireHealLock(join(lockDir, 'heal.lock'));
    } catch (err) {
      await close();
      throw err;
    }
    reporter.setActing(true);
  }
  if (opts.metricsPort !== undefined) log(`metrics on http://127.0.0.1:${await reporter.listen(opts.metricsPort)}/metrics and /status`);
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  try {
    log(`${mode} mode, a probe every ${intervalMs} ms, a master is dead after ${settings.deadAfterProbes} failed probes and its slave's agreement${witness?.ask ? ' and no running service reaching it' : ''}`);
    if (opts.once) await supervisor.round();
    else await supervisor.run(intervalMs, stop.signal, (err) => log(`round failed: ${err.message}`));
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await supervisor.settle();
    await store.heal?.remove(supervisorId).catch(() => undefined);
    await release();
    await reporter.close();
    await close();
  }
}
