import { adminQuery, type HostAdmin } from './host-admin.js';

/**
 * Ends every client session on `host` but the caller's own and the server's threads. An old
 * master that answered the failover's fence can still hold commits waiting for its semi-sync
 * slave's ack: `read_only` does not touch them, and the ack never comes once that slave is
 * promoted. Left alone, they are acknowledged when the wait times out (lost writes: the new master
 * never had them), or, with a long timeout, they keep their metadata locks and a rebuild's DROP
 * DATABASE waits behind them. Killed, their clients get an error, never an OK.
 */
export async function killClientSessions(admin: HostAdmin, host: string): Promise<number> {
  const conn = await admin.connect(host, { connectTimeoutMs: 1000 });
  try {
    const [rows] = await conn.query(
      "SELECT ID AS id FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND USER NOT IN ('system user', 'event_scheduler') AND COMMAND NOT IN ('Binlog Dump', 'Daemon', 'Killed')",
    ) as unknown as [Array<{ id: number | string }>];
    let killed = 0;
    for (const r of rows) {
      // A session that ended meanwhile is no error.
      await conn.query(`KILL CONNECTION ${Number(r.id)}`).then(() => killed++, () => undefined);
    }
    return killed;
  } finally {
    conn.destroy();
  }
}

/**
 * `read_only = 1` on an old master that answers. MariaDB's read_only waits for commits in
 * progress, so a commit held for a semi-sync ack would hold the fence itself until its timeout
 * and then be acknowledged: the sessions are cut first, and the fence waits at most a second
 * (lock_wait_timeout) before cutting again what arrived meanwhile. Throws when it cannot connect.
 */
export async function fenceAnsweringMaster(admin: HostAdmin, host: string, attempts = 5): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await killClientSessions(admin, host);
    const conn = await admin.connect(host, { connectTimeoutMs: 1000 });
    try {
      await conn.query('SET SESSION lock_wait_timeout = 1');
      await conn.query('SET GLOBAL read_only = 1');
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'ER_LOCK_WAIT_TIMEOUT' || attempt >= attempts) throw err;
    } finally {
      conn.destroy();
    }
  }
}

/** The host stops being a semi-sync master: commits still waiting for an ack are released to their (killed) sessions. */
export async function dropSemiSyncMaster(admin: HostAdmin, host: string): Promise<void> {
  await adminQuery(admin, host, 'SET GLOBAL rpl_semi_sync_master_enabled = 0').catch(() => undefined);
}
