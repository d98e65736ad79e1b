import pg from 'pg';

const qi = (s: string): string => pg.escapeIdentifier(s);

/** Rows in `tables` (schema-qualified, quoted names), in one statement: the source's count when the copy starts. */
export async function countRows(c: pg.Client, tables: string[]): Promise<number> {
  if (tables.length === 0) return 0;
  const { rows: [r] } = await c.query<{ n: string }>(`SELECT coalesce(sum(n), 0)::text AS n FROM (${tables.map((t) => `SELECT count(*) AS n FROM ${t}`).join(' UNION ALL ')}) x`);
  return Number(r!.n);
}

/**
 * Rows a subscription's initial copy has brought to the target so far (the marker schema's
 * table left out): for a table still copying, the COPY's own counter (pg_stat_progress_copy of
 * the table-sync worker; 0 when the server hides other users' progress); for a table whose copy
 * is done, its rows on the target, counted once when first seen done (`done` keeps them between
 * polls). Table states are pg_subscription_rel's: i(nit), d(ata copying), f(inished copy),
 * s(ynchronized), r(eady).
 */
export async function copiedRows(dst: pg.Client, subscription: string, skipSchema: string, done: Map<string, number>): Promise<number> {
  const { rows } = await dst.query<{ ns: string; t: string; st: string; n: string | null }>(
    `SELECT n.nspname AS ns, c.relname AS t, r.srsubstate AS st, p.tuples_processed::text AS n
     FROM pg_subscription s JOIN pg_subscription_rel r ON r.srsubid = s.oid
     JOIN pg_class c ON c.oid = r.srrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_stat_progress_copy p ON p.relid = r.srrelid
     WHERE s.subname = $1 AND n.nspname <> $2`, [subscription, skipSchema]);
  let sum = 0;
  for (const r of rows) {
    const key = `${qi(r.ns)}.${qi(r.t)}`;
    if (r.st === 'f' || r.st === 's' || r.st === 'r') {
      if (!done.has(key)) done.set(key, await countRows(dst, [key]));
      sum += done.get(key)!;
    } else {
      sum += Number(r.n ?? 0);
    }
  }
  return sum;
}
