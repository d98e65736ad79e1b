import type pg from 'pg';

/**
 * What the fence's LOCK TABLE ... IN ACCESS EXCLUSIVE MODE would wait for if it ran now, from
 * the locks others hold on the moving tables (`tables`: qualified, quoted): an autovacuum worker
 * is cancelled by the waiting fence after `deadlock_timeout` (1 s by default; one that prevents
 * wraparound never is: Infinity), and a transaction holding a lock has been open for its age and may stay
 * open as long (an estimate: a writer's short statements count a few ms). Seen at 1M rows: the
 * fence's LOCK took 0.2-3 s after the tables were filled, 1 ms at 20k.
 */
export async function lockWait(c: pg.Client, tables: string[]): Promise<{ ms: number; what: string }> {
  if (tables.length === 0) return { ms: 0, what: 'none' };
  const { rows } = await c.query<{ pid: number; kind: string; ms: string; wraparound: boolean; dl: string }>(
    `SELECT DISTINCT a.pid, a.backend_type AS kind, (greatest(0, extract(epoch FROM clock_timestamp() - coalesce(a.xact_start, clock_timestamp()))) * 1000)::bigint::text AS ms,
            coalesce(a.query LIKE '%(to prevent wraparound)%', false) AS wraparound,
            (SELECT setting FROM pg_settings WHERE name = 'deadlock_timeout') AS dl
       FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.granted AND l.locktype = 'relation' AND l.pid <> pg_backend_pid() AND l.relation = ANY($1::text[]::regclass[])`, [tables]);
  let ms = 0;
  const what: string[] = [];
  for (const r of rows) {
    const vacuum = r.kind === 'autovacuum worker';
    // An autovacuum that prevents wraparound is never cancelled: the fence would wait it out.
    const wait = !vacuum ? Number(r.ms) : r.wraparound ? Infinity : Number(r.dl);
    if (wait > ms) ms = wait;
    what.push(`${vacuum ? (r.wraparound ? 'autovacuum (wraparound)' : 'autovacuum') : 'transaction'} pid ${r.pid} ${Math.round(Number(r.ms))} ms`);
  }
  return { ms, what: what.length === 0 ? 'none' : what.join(', ') };
}
