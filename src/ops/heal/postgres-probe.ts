import type { DevCluster } from '../dev/dev-cluster.js';
import { pgServer } from '../dev/dev-postgres.js';
import type { PairObservation } from './heal-rules.js';
import { within } from './probe-timeout.js';
import { superuserQuery } from '../postgres/postgres-instance.js';

/**
 * A PostgreSQL pair of a dev cluster: the master answers SELECT 1; the standby's WAL receiver
 * streams from it (connected) or not (lost it). A standby in recovery can always replay what it
 * received, so it is healthy while it answers; its lag is not known once the master is gone.
 */
export async function observePgPair(c: DevCluster, master: string, slave: string, timeoutMs: number): Promise<PairObservation> {
  // By the server's unix socket, as the MariaDB probe does: the supervisor's own way in, apart from
  // the services' and the standbys' TCP (the chaos harness cuts it alone: test/chaos/).
  return observePgPairBy((host, text) => {
    const s = pgServer(c, host);
    return superuserQuery({ host: s.dir, port: s.port, database: 'postgres', connectTimeoutMs: timeoutMs }, text);
  }, master, slave, timeoutMs);
}

/** The same through any way of running a statement on a host (a fleet's admin connection: pg-fleet-failover.ts). */
export async function observePgPairBy(sql: (host: string, text: string) => Promise<Array<Record<string, unknown>>>, master: string, slave: string, timeoutMs: number): Promise<PairObservation> {
  const obs: PairObservation = { master, slave, masterReachable: false, slaveReachable: false };
  const [m, s] = await Promise.allSettled([
    within(timeoutMs, `query on ${master}`, sql(master, 'SELECT 1')),
    within(timeoutMs, `query on ${slave}`, sql(slave, 'SELECT pg_is_in_recovery() AS rec, (SELECT status FROM pg_stat_wal_receiver) AS status') as Promise<Array<{ rec: boolean; status: string | null }>>),
  ]);
  if (m.status === 'fulfilled') obs.masterReachable = true;
  else obs.masterError = (m.reason as Error).message;
  if (s.status === 'fulfilled') {
    obs.slaveReachable = true;
    const row = s.value[0];
    obs.slaveIoConnected = row?.status === 'streaming';
    obs.slaveSqlHealthy = row?.rec === true;
    obs.slaveLagSeconds = null;
    if (!obs.slaveSqlHealthy) obs.slaveError = `${slave} is not in recovery (not a standby)`;
  } else {
    obs.slaveError = (s.reason as Error).message;
  }
  return obs;
}
