import { setTimeout as sleep } from 'node:timers/promises';
import { ShardKitError } from '../../errors.js';
import { changeShardMap } from '../../topology/change-shard-map.js';
import { createTopologyStore } from '../../topology/index.js';
import { ShardMap, type ShardMapJson } from '../../topology/shard-map.js';
import type { TopologyStore } from '../../topology/topology-store.js';
import type { DevCluster } from '../dev/dev-cluster.js';
import { pgServer } from '../dev/dev-postgres.js';
import { liveShardMap } from '../dev/dev-writable.js';
import type { PostgresServer } from '../postgres/postgres-server.js';
import type { FailoverResult } from './emergency-failover.js';
import { slaveOf } from './failover-context.js';
import { setSlave } from './set-slave.js';
import { setSyncStandby } from '../postgres/pg-sync-standby.js';
import { DEFAULT_FAILOVER_HOLD_MS, promotedReleasingFreeze } from './failover-freeze.js';
import { FailoverFreeze, undoSteps } from './failover-freeze-steps.js';
import { fenceReadOnly, liftReadOnlyFence, READ_ONLY_FENCE_SETTING, replayedBy, type PgAdminSql } from './pg-read-only-fence.js';

/**
 * Failover and rebuild-slave for a PostgreSQL dev cluster (`dev up --engine postgres`): promote
 * with pg_promote(), rebuild with pg_basebackup. These need the servers' data directories, so they
 * work on a dev cluster only (--dir); a remote fleet is not covered (docs/failover.md).
 */

async function withStore<T>(c: DevCluster, fn: (store: TopologyStore) => Promise<T>): Promise<T> {
  const store = createTopologyStore(c.config().topologyStore, { dataDir: c.dir });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

async function cas(c: DevCluster, edit: (m: ShardMap) => ShardMapJson): Promise<number> {
  const config = c.config();
  return withStore(c, async (store) => (await changeShardMap(store, edit, { seed: ShardMap.fromJSON(config.shardMap), hosts: Object.keys(config.hosts) })).after.version);
}

/** The standby must be in recovery and configured to stream from `master` (streaming too, when `requireStreaming`). */
async function requireStandbyOf(standby: PostgresServer, master: PostgresServer, requireStreaming: boolean): Promise<void> {
  let row: { rec: boolean; status: string | null; conninfo: string } | undefined;
  try {
    [row] = await standby.sql<{ rec: boolean; status: string | null; conninfo: string }>("SELECT pg_is_in_recovery() AS rec, (SELECT status FROM pg_stat_wal_receiver) AS status, current_setting('primary_conninfo') AS conninfo");
  } catch (err) {
    throw new ShardKitError('PRECONDITION_FAILED', `standby ${standby.name} does not answer (${(err as Error).message}): nothing changed`);
  }
  if (!row?.rec) throw new ShardKitError('PRECONDITION_FAILED', `slave ${standby.name} is not replicating (it is not in recovery): nothing changed`);
  if (!new RegExp(`\\bport=${master.port}\\b`).test(row.conninfo)) throw new ShardKitError('PRECONDITION_FAILED', `slave ${standby.name} does not stream from ${master.name} (primary_conninfo: ${row.conninfo || 'none'}): nothing changed`);
  if (requireStreaming && row.status !== 'streaming') throw new ShardKitError('PRECONDITION_FAILED', `slave ${standby.name} is not replicating from ${master.name} (WAL receiver: ${row.status ?? 'none'}): nothing changed`);
}

async function promote(server: PostgresServer): Promise<string> {
  const [r] = await server.sql<{ ok: boolean }>('SELECT pg_promote(true, 60) AS ok');
  if (!r?.ok) throw new ShardKitError('INTERNAL', `pg_promote() on ${server.name} did not finish within 60 s`);
  const [lsn] = await server.sql<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
  return lsn?.lsn ?? '';
}

function recordRoles(c: DevCluster, master: string, slave: string, rebuild: boolean): void {
  const m = c.server(master);
  m.role = 'master';
  delete m.master;
  delete m.rebuild;
  const s = c.server(slave);
  s.role = 'slave';
  s.master = master;
  if (rebuild) s.rebuild = true;
  else delete s.rebuild;
  c.save();
}

/**
 * Planned, as on MariaDB (planned-failover.ts): the old master's object ranges frozen in the map
 * (services hold writes to them), the read-only fence (pg-read-only-fence.ts: a write meeting it
 * is held and sent to the new master), then the old master stopped cleanly (a clean shutdown sends
 * all its WAL to the standby), the standby's replay of its shutdown checkpoint awaited,
 * pg_promote(), the compare-and-set that switches the frozen ranges, and the old master restarted
 * as a standby of the new one (it follows the new timeline). Before the promotion, a failure
 * leaves the pair as it was: the old master writable, the freeze lifted.
 */
export async function pgPlannedFailover(c: DevCluster, master: string, options: { timeoutMs?: number; holdMs?: number; log?: (m: string) => void } = {}): Promise<FailoverResult> {
  const map = await liveShardMap(c);
  const slave = slaveOf(map, master);
  // The map edit is tried first (a running shard move holding a range of the master refuses it):
  // nothing is stopped or promoted for a failover that could not be recorded.
  promotedReleasingFreeze(map, master);
  const old = pgServer(c, master);
  const next = pgServer(c, slave);
  await requireStandbyOf(next, old, true);
  const config = c.config();
  return withStore(c, async (store) => {
    const holdMs = options.holdMs ?? DEFAULT_FAILOVER_HOLD_MS;
    const frozen = await FailoverFreeze.begin(store, config.shardMap, Object.keys(config.hosts), master, slave, { holdMs, ...(options.log ? { log: options.log } : {}) });
    const fencedAt = Date.now();
    const sql: PgAdminSql = (text, values) => old.sql(text, values);
    const log = options.log ?? (() => undefined);
    const timeoutMs = options.timeoutMs ?? 30_000;
    try {
      await fenceReadOnly(sql, { drainMs: await frozen.beforeFence(slave, holdMs, log), terminate: false });
      // The standby shows it keeps up before the master stops: a stop waits for its walsenders,
      // for as long as wal_sender_timeout when a WAL receiver hangs, with every write refused.
      const [end] = await old.sql<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
      await replayedBy((text, values) => next.sql(text, values), slave, end!.lsn, Date.now() + timeoutMs, `${master} is writable again and nothing changed`);
      await old.stop();
      await replayedBy((text, values) => next.sql(text, values), slave, await old.checkpointLsn(), Date.now() + timeoutMs, `${master} was restarted as master and nothing changed`);
    } catch (err) {
      await undoSteps(log, [
        old.isRunning()
          ? [`make ${master} writable again`, () => liftReadOnlyFence(sql)]
          : [`restart ${master} as master`, async () => {
            old.resetAutoConf(READ_ONLY_FENCE_SETTING);
            await old.start();
          }],
        ['lift the freeze', () => frozen.release()],
      ]);
      throw err;
    }
    const position = await promote(next);
    // Before the map names it: its copied auto.conf may name itself as its synchronous standby.
    await setSyncStandby(next, c.state.semiSync ? master : undefined);
    const mapVersion = await frozen.switch();
    const writePauseMs = Date.now() - fencedAt;
    // A standby now, read-only anyway; the fence must not outlive it into a later promotion.
    old.resetAutoConf(READ_ONLY_FENCE_SETTING);
    old.markStandby();
    old.setPrimary(next);
    await old.start();
    recordRoles(c, slave, master, false);
    return { kind: 'planned', oldMaster: master, newMaster: slave, position, mapVersion, oldMasterFenced: true, oldMasterIsSlave: true, writePauseMs, frozenRanges: frozen.ids.length };
  });
}

/**
 * Commits in the stopped old master's WAL past what the standby received (read before the
 * promotion, when nothing more can arrive). Undefined when the old master's WAL cannot be read
 * (its disk is gone): the loss is then unknown, not zero.
 */
async function diverged(old: PostgresServer, standby: PostgresServer): Promise<number | undefined> {
  if (old.isRunning()) return undefined;
  const [r] = await standby.sql<{ lsn: string | null }>('SELECT pg_last_wal_receive_lsn()::text AS lsn');
  if (!r?.lsn) return undefined;
  try {
    return await old.commitsAfter(r.lsn);
  } catch {
    return undefined;
  }
}

/** Whether `server` runs a query within `ms` (a connection to a frozen postmaster hangs). */
async function answers(server: PostgresServer, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([server.sql('SELECT 1').then(() => true, () => false), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Emergency: the master is gone; promote the standby, compare-and-set the map; the old master needs a rebuild. */
export async function pgEmergencyFailover(c: DevCluster, master: string): Promise<FailoverResult> {
  const started = Date.now();
  const map = await liveShardMap(c);
  const slave = slaveOf(map, master);
  // As in the planned failover: refused before the old master is stopped and its standby promoted.
  promotedReleasingFreeze(map, master);
  const old = pgServer(c, master);
  const next = pgServer(c, slave);
  await requireStandbyOf(next, old, false);
  // Never a writer again: if it still runs, stop it; any later start is as a standby.
  let oldMasterFenced = false;
  if (old.isRunning()) {
    // A frozen (SIGSTOP) postmaster never answers, and pg_ctl stop would wait its 60 s for it:
    // one that does not answer at once is killed (with its backends) instead of stopped.
    if (await answers(old, 1500)) await old.stop().catch(() => old.kill());
    else await old.kill();
    oldMasterFenced = true;
  }
  old.markStandby();
  const divergedTransactions = await diverged(old, next);
  const position = await promote(next);
  // No standby until rebuild-slave: waiting for one would block every commit.
  await setSyncStandby(next, undefined);
  const mapVersion = await cas(c, (m) => promotedReleasingFreeze(m, master));
  recordRoles(c, slave, master, true);
  return {
    kind: 'emergency', oldMaster: master, newMaster: slave, position, mapVersion, oldMasterFenced, oldMasterIsSlave: false, writePauseMs: Date.now() - started,
    ...(divergedTransactions !== undefined ? { divergedTransactions } : {}), syncStandby: c.state.semiSync === true,
  };
}

export interface PgRebuildResult {
  master: string;
  slave: string;
  mapVersion: number;
}

/** rebuild-slave: the slave's datadir is replaced by pg_basebackup -R of the master, then it streams. */
export async function pgRebuildSlave(c: DevCluster, master: string, options: { slave?: string; timeoutMs?: number } = {}): Promise<PgRebuildResult> {
  const map = await liveShardMap(c);
  const json = map.toJSON();
  const all = [...json.ranges, ...json.modShards.ranges];
  const mastered = all.filter((r) => r.master === master);
  if (mastered.length === 0) throw new ShardKitError('INVALID_ARGUMENT', `host ${master} is not a master in the shard map (version ${map.version}): nothing changed`);
  const named = new Set(mastered.map((r) => r.slave).filter((s): s is string => s !== undefined));
  const slave = options.slave ?? (named.size === 1 ? [...named][0]! : undefined);
  if (slave === undefined) throw new ShardKitError('INVALID_ARGUMENT', `the map names no single slave for ${master}: give --slave HOST`);
  if (all.some((r) => r.master === slave)) throw new ShardKitError('INVALID_ARGUMENT', `host ${slave} is a master in the map: it cannot be rebuilt as a slave`);
  const target = pgServer(c, slave);
  const source = pgServer(c, master);
  await target.stop().catch(() => target.kill());
  await target.initStandbyOf(source);
  await target.start();
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    const [r] = await target.sql<{ status: string | null }>('SELECT (SELECT status FROM pg_stat_wal_receiver) AS status');
    if (r?.status === 'streaming') break;
    if (Date.now() > deadline) throw new ShardKitError('INTERNAL', `${slave} was rebuilt but does not stream from ${master}`);
    await sleep(50);
  }
  if (c.state.semiSync) await setSyncStandby(source, slave);
  const mapVersion = await cas(c, (m) => setSlave(m, master, slave));
  recordRoles(c, master, slave, false);
  return { master, slave, mapVersion };
}
