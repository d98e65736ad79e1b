import { parseLsn } from '../../storage/postgres/index.js';
import type { MoveRecord } from '../../topology/shard-map.js';
import type { Client } from './engine-base.js';

/** Default bound of the copy's lag gate on PostgreSQL: bytes of WAL the source's standby may be behind its primary. */
export const POSTGRES_SOURCE_STANDBY_MAX_LAG_BYTES = 64 * 1024 * 1024;

/**
 * The source's standby lag in bytes of WAL: the primary's current position against what the
 * standby has replayed (issue #29 item 3, the copy's lag gate; vitess#11385). Read on both
 * servers, primary first, so WAL written between the two reads is never counted as lag. A
 * standby that cannot be reached, or that is not in recovery, is not waited for (0): the copy
 * does not depend on it, as on MariaDB.
 */
export function sourceStandbyLag(connect: (host: string) => Promise<Client>, move: MoveRecord): () => Promise<number> {
  const standby = move.source.slave;
  return async () => {
    if (standby === undefined) return 0;
    const opened = await Promise.allSettled([connect(move.source.master), connect(standby)]);
    const ok = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    try {
      if (ok.length < 2) return 0;
      const [p, s] = ok as [Client, Client];
      const { rows: [head] } = await p.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
      const { rows: [replayed] } = await s.query<{ lsn: string | null }>('SELECT pg_last_wal_replay_lsn()::text AS lsn');
      if (replayed?.lsn == null) return 0;
      const lag = parseLsn(head!.lsn) - parseLsn(replayed.lsn);
      return lag > 0n ? Number(lag) : 0;
    } catch {
      return 0;
    } finally {
      await Promise.all(ok.map((c) => c.end().catch(() => undefined)));
    }
  };
}
