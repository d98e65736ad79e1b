import type { MoveRecord } from '../../topology/shard-map.js';
import type { MoveAdmin } from './move-admin.js';
import { gtidsNotReached } from '../../storage/mysql/index.js';
import { binlogPos, gtidByDomain, sourceDomain } from './move-replication.js';

/** How far (transactions) the source's slave may be behind to be the copy's source, and how long it gets to catch up then. */
export const COPY_SOURCE_MAX_LAG = 1000;
const CAUGHT_UP_WAIT_S = 5;

/**
 * Where the pre-copy reads (issue #29 item 2): the source's slave when it is healthy, so the
 * master is not loaded (and its writes never wait for the parallel dumps' brief read lock);
 * else the master. Healthy: reachable, both replication threads running, binlog and
 * log_slave_updates on (its binlog snapshot then names the master's GTIDs it has applied, the
 * position the move's replication starts from), at most COPY_SOURCE_MAX_LAG behind, and caught
 * up with the master's binlog of now within CAUGHT_UP_WAIT_S.
 */
export async function copySource(admin: MoveAdmin, move: MoveRecord): Promise<string> {
  const slave = move.source.slave;
  if (slave === undefined) return move.source.master;
  try {
    const c = await admin.connect(slave);
    try {
      const [v] = await c.query('SELECT @@GLOBAL.log_bin AS b, @@GLOBAL.log_slave_updates AS u');
      const row = (v as Array<{ b: number | string; u: number | string }>)[0]!;
      if (Number(row.b) !== 1 || Number(row.u) !== 1) return move.source.master;
      const [st] = await c.query("SHOW SLAVE '' STATUS");
      const s = (st as Array<Record<string, unknown>>)[0];
      if (s === undefined || s.Slave_IO_Running !== 'Yes' || s.Slave_SQL_Running !== 'Yes') return move.source.master;
      // Caught up with everything the master has binlogged so far (DDL included): a table the
      // slave created after the dump's snapshot could not be read in it (error 1412, seen when
      // a service created its tables just before a move).
      if ((await sourceSlaveLag(admin, move)()) > COPY_SOURCE_MAX_LAG) return move.source.master;
      const m = await admin.connect(move.source.master);
      const pos = await binlogPos(m).finally(() => m.end().catch(() => m.destroy()));
      const [cur] = await c.query('SELECT @@GLOBAL.gtid_current_pos AS p');
      const want = gtidsNotReached(pos, String((cur as Array<{ p: string | null }>)[0]!.p ?? ''));
      if (want === '') return slave;
      const [w] = await c.query('SELECT MASTER_GTID_WAIT(?, ?) AS w', [want, CAUGHT_UP_WAIT_S]);
      return Number((w as Array<{ w: number | string }>)[0]!.w) === 0 ? slave : move.source.master;
    } finally {
      await c.end().catch(() => c.destroy());
    }
  } catch {
    return move.source.master;
  }
}

/**
 * The source's slave lag, in transactions of the source's own domain that the slave has not
 * applied yet (gtid_binlog_pos of the master against the slave's gtid_slave_pos). A slave that
 * cannot be reached is not waited for (0): the copy does not depend on it.
 */
export function sourceSlaveLag(admin: MoveAdmin, move: MoveRecord): () => Promise<number> {
  const slave = move.source.slave;
  return async () => {
    if (slave === undefined) return 0;
    const opened = await Promise.allSettled([admin.connect(move.source.master), admin.connect(slave)]);
    const ok = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    if (ok.length < 2) {
      for (const c of ok) c.destroy();
      return 0;
    }
    const [m, s] = ok as [typeof ok[0], typeof ok[0]];
    try {
      const domain = await sourceDomain(m);
      const head = gtidByDomain(await binlogPos(m)).get(domain)?.seq ?? 0n;
      const [r] = await s.query('SELECT @@GLOBAL.gtid_slave_pos AS p');
      const applied = gtidByDomain(String((r as Array<{ p: string | null }>)[0]!.p ?? '')).get(domain)?.seq ?? 0n;
      return head > applied ? Number(head - applied) : 0;
    } finally {
      await Promise.all([m, s].map((c) => c.end().catch(() => c.destroy())));
    }
  };
}
