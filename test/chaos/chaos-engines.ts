/**
 * The per-engine part of a chaos run: how a server of the dev fleet is killed, frozen and asked
 * whether it takes writes, whether a pair is whole, and when a slave has applied its master's
 * writes. Everything else (faults, ledger, proxies, checks) is engine-neutral (chaos-fleet.ts,
 * chaos-run.ts).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DevCluster } from '../../src/ops/dev-cluster.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import { procStat } from '../../src/ops/proc-stat.js';
import { parseLsn } from '../../src/ops/postgres/postgres-server.js';
import { superuserQuery } from '../../src/ops/postgres/postgres-instance.js';
import { gtidsNotReached } from '../../src/storage/mysql/index.js';

export type ChaosEngineName = 'mariadb' | 'postgres';

export interface ChaosEngine {
  name: ChaosEngineName;
  /** The server's port (what the proxies forward to). */
  port(c: DevCluster, host: string): number;
  isRunning(c: DevCluster, host: string): boolean;
  /** kill -9 of the server (with its backends). */
  kill(c: DevCluster, host: string): Promise<void>;
  /** Its processes, for SIGSTOP / SIGCONT (the zombie master). */
  pids(c: DevCluster, host: string): number[];
  /** Whether it accepts writes now; undefined when it does not answer (it accepts none either). */
  writable(c: DevCluster, host: string): Promise<boolean | undefined>;
  /** Why the pair is not whole (master writable, slave replicating from it), or undefined. */
  pairProblem(c: DevCluster, master: string, slave: string): Promise<string | undefined>;
  /** The slave runs but does not replicate: `pair rebuild-slave` of its master is due. */
  slaveBroken(c: DevCluster, slave: string): Promise<boolean>;
  /** Waits (at most `leftMs`) until the slave applied what the master wrote; false when it did not. */
  caughtUp(c: DevCluster, master: string, slave: string, leftMs: number): Promise<boolean>;
  /** After a (re)start: settings the run relies on that a restart resets. */
  afterRestart(c: DevCluster): Promise<void>;
  /** The unix socket the supervisor reaches the server by; undefined when it reaches it by its port (then no supervisor-only partition). */
  supervisorSocket(c: DevCluster, host: string): string | undefined;
}

/**
 * Commits wait this long (ms) for their slave's ack before MariaDB falls back to async: far past
 * any ack on a loaded machine (the dev cluster's 2 s is not), yet finite, so a master whose slave
 * came back unregistered (seen once after a SIGSTOP: writes waited an hour) serves again. A
 * master is failed over only while semi-sync is on (pairProblem waits for it), so a fallback
 * never decides whether a killed master's writes survive.
 */
const STRICT_SEMI_SYNC_MS = 30_000;

const children = (pid: number): number[] => readdirSync('/proc').filter((p) => /^\d+$/.test(p)).map(Number).filter((p) => procStat(p)?.ppid === pid);

export const mariadbChaos: ChaosEngine = {
  name: 'mariadb',
  port: (c, h) => c.instance(h).port,
  isRunning: (c, h) => c.instance(h).isRunning(),
  kill: (c, h) => c.instance(h).kill(),
  pids: (c, h) => (c.instance(h).pid !== undefined ? [c.instance(h).pid!] : []),
  async writable(c, h) {
    const conn = await c.instance(h).connect({ connectTimeoutMs: 300 }).catch(() => undefined);
    if (conn === undefined) return undefined;
    try {
      const [rows] = await Promise.race([conn.query('SELECT @@GLOBAL.read_only AS ro'), sleep(1000).then(() => [[{ ro: 1 }]])]) as [Array<{ ro: number | string }>];
      return Number(rows[0]!.ro) === 0;
    } catch {
      return undefined;
    } finally {
      conn.destroy();
    }
  },
  async pairProblem(c, master, slave) {
    const [ro] = await c.instance(master).admin<Array<{ ro: number }>>('SELECT @@GLOBAL.read_only AS ro');
    if (Number(ro!.ro) !== 0) return `${master} is read-only`;
    const [sync] = await c.instance(master).admin<Array<{ enabled: number | string; status: string | null }>>("SELECT @@GLOBAL.rpl_semi_sync_master_enabled AS enabled, (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'RPL_SEMI_SYNC_MASTER_STATUS') AS status");
    if (Number(sync?.enabled) === 1 && sync?.status !== 'ON') return `${master}'s semi-sync fell back to async (no slave has acked since)`;
    const [st] = await c.instance(slave).admin<Array<Record<string, unknown>>>('SHOW SLAVE STATUS');
    if (st === undefined || st.Slave_IO_Running !== 'Yes' || st.Slave_SQL_Running !== 'Yes') return `${slave} does not replicate (${st === undefined ? 'none' : `${String(st.Slave_IO_Running)}/${String(st.Slave_SQL_Running)} ${String(st.Last_Error ?? '')}`})`;
    if (String(st.Master_Host ?? '') !== '' && Number(st.Master_Port) !== c.instance(master).port) return `${slave} replicates from port ${String(st.Master_Port)}, not ${master}`;
    return undefined;
  },
  async slaveBroken(c, slave) {
    const [st] = await c.instance(slave).admin<Array<Record<string, unknown>>>('SHOW SLAVE STATUS').catch(() => [undefined]);
    return st === undefined || st.Slave_SQL_Running !== 'Yes' || String(st.Last_IO_Error ?? '') !== '';
  },
  async caughtUp(c, master, slave, leftMs) {
    const [pos] = await c.instance(master).admin<Array<{ p: string | null }>>('SELECT @@GLOBAL.gtid_binlog_pos AS p');
    // Only the domains the slave has not reached: an old master rebuilt as the slave never
    // "reaches" (in gtid_slave_pos) the transactions it wrote itself (seed 3015 waited for ever).
    const [cur] = await c.instance(slave).admin<Array<{ p: string | null }>>('SELECT @@GLOBAL.gtid_current_pos AS p');
    const want = gtidsNotReached(String(pos?.p ?? ''), String(cur?.p ?? ''));
    if (want === '') return true;
    const [r] = await c.instance(slave).admin<Array<{ r: number | string | null }>>({ sql: 'SELECT MASTER_GTID_WAIT(?, ?) AS r', values: [want, Math.max(0.1, leftMs / 1000)] });
    return Number(r?.r) === 0;
  },
  async afterRestart(c) {
    for (const s of c.state.servers) {
      if (!c.instance(s.name).isRunning()) continue;
      await c.instance(s.name).admin(`SET GLOBAL rpl_semi_sync_master_timeout = ${STRICT_SEMI_SYNC_MS}`).catch(() => undefined);
    }
  },
  supervisorSocket: (c, h) => c.instance(h).socket,
};

const pgAsk = <T extends Record<string, unknown>>(c: DevCluster, h: string, text: string, timeoutMs = 3000): Promise<T[]> =>
  superuserQuery<T>({ host: '127.0.0.1', port: pgServer(c, h).port, database: 'postgres', connectTimeoutMs: timeoutMs, queryTimeoutMs: timeoutMs }, text);

/** PostgreSQL (streaming standbys, synchronous with --sync: no fallback to async, so nothing to set). */
export const postgresChaos: ChaosEngine = {
  name: 'postgres',
  port: (c, h) => pgServer(c, h).port,
  isRunning: (c, h) => pgServer(c, h).isRunning(),
  kill: (c, h) => pgServer(c, h).kill(),
  // The postmaster and its backends: a stopped postmaster alone leaves its sessions serving.
  pids: (c, h) => {
    const pid = pgServer(c, h).pid;
    return pid === undefined ? [] : [pid, ...children(pid)];
  },
  async writable(c, h) {
    try {
      const [r] = await pgAsk<{ w: boolean }>(c, h, "SELECT NOT pg_is_in_recovery() AND current_setting('default_transaction_read_only') = 'off' AS w", 1000);
      return r!.w;
    } catch {
      return undefined;
    }
  },
  async pairProblem(c, master, slave) {
    const [m] = await pgAsk<{ rec: boolean }>(c, master, 'SELECT pg_is_in_recovery() AS rec');
    if (m!.rec) return `${master} is a standby`;
    const [r] = await pgAsk<{ status: string | null; port: number | null }>(c, slave, 'SELECT (SELECT status FROM pg_stat_wal_receiver) AS status, (SELECT sender_port FROM pg_stat_wal_receiver) AS port');
    if (r?.status !== 'streaming') return `${slave} does not stream (${String(r?.status)})`;
    if (Number(r.port) !== pgServer(c, master).port) return `${slave} streams from port ${String(r.port)}, not ${master}`;
    if (c.state.semiSync) {
      const [s] = await pgAsk<{ n: string }>(c, master, "SELECT count(*) AS n FROM pg_stat_replication WHERE sync_state = 'sync'");
      if (Number(s!.n) === 0) return `${master} has no synchronous standby streaming`;
    }
    return undefined;
  },
  async slaveBroken(c, slave) {
    try {
      const [r] = await pgAsk<{ rec: boolean; status: string | null }>(c, slave, 'SELECT pg_is_in_recovery() AS rec, (SELECT status FROM pg_stat_wal_receiver) AS status');
      return !r!.rec || r!.status !== 'streaming';
    } catch {
      return true;
    }
  },
  async caughtUp(c, master, slave, leftMs) {
    const [m] = await pgAsk<{ lsn: string }>(c, master, 'SELECT pg_current_wal_lsn()::text AS lsn');
    const deadline = Date.now() + leftMs;
    while (Date.now() < deadline) {
      const [s] = await pgAsk<{ lsn: string | null }>(c, slave, 'SELECT pg_last_wal_replay_lsn()::text AS lsn');
      if (s?.lsn != null && parseLsn(s.lsn) >= parseLsn(m!.lsn)) return true;
      await sleep(100);
    }
    return false;
  },
  afterRestart: async () => undefined,
  // The supervisor probes a dev server by its unix socket (src/ops/heal/postgres-probe.ts); the
  // standbys and the services reach it by its port.
  supervisorSocket: (c, h) => join(pgServer(c, h).dir, `.s.PGSQL.${pgServer(c, h).port}`),
};

export const chaosEngine = (name: ChaosEngineName): ChaosEngine => (name === 'postgres' ? postgresChaos : mariadbChaos);
