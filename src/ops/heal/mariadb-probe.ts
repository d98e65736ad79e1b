import type mysql from 'mysql2/promise';
import type { HostAdmin } from '../failover/host-admin.js';
import type { PairObservation } from './heal-rules.js';
import { within } from './probe-timeout.js';

async function onConnection<T>(admin: HostAdmin, host: string, timeoutMs: number, fn: (c: mysql.Connection) => Promise<T>): Promise<T> {
  const conn = await within(timeoutMs, `connect to ${host}`, admin.connect(host, { connectTimeoutMs: timeoutMs }), (late) => late.destroy());
  try {
    return await within(timeoutMs, `query on ${host}`, fn(conn), () => {});
  } finally {
    conn.destroy();
  }
}

/** A MariaDB pair as the supervisor sees it: the master (connect + SELECT 1) and its slave's replication threads. */
export async function observeMariadbPair(admin: HostAdmin, master: string, slave: string, timeoutMs: number): Promise<PairObservation> {
  const obs: PairObservation = { master, slave, masterReachable: false, slaveReachable: false };
  const [m, s] = await Promise.allSettled([
    onConnection(admin, master, timeoutMs, (c) => c.query('SELECT 1')),
    onConnection(admin, slave, timeoutMs, async (c) => (await c.query('SHOW SLAVE STATUS'))[0] as Array<Record<string, unknown>>),
  ]);
  if (m.status === 'fulfilled') obs.masterReachable = true;
  else obs.masterError = (m.reason as Error).message;
  if (s.status === 'fulfilled') {
    obs.slaveReachable = true;
    const row = s.value[0];
    if (row === undefined) {
      obs.slaveIoConnected = false;
      obs.slaveSqlHealthy = false;
      obs.slaveError = 'no replication configured';
    } else {
      obs.slaveIoConnected = row.Slave_IO_Running === 'Yes';
      const sqlError = String(row.Last_SQL_Error ?? '');
      obs.slaveSqlHealthy = row.Slave_SQL_Running === 'Yes' && sqlError === '';
      obs.slaveError = sqlError || String(row.Last_IO_Error ?? '');
      obs.slaveLagSeconds = row.Seconds_Behind_Master == null ? null : Number(row.Seconds_Behind_Master);
    }
  } else {
    obs.slaveError = (s.reason as Error).message;
  }
  return obs;
}
