import type pg from 'pg';

/**
 * Each table's writes so far (n_tup_ins + n_tup_upd + n_tup_del of pg_stat_user_tables), keyed
 * `schema.table` (unquoted), for the tables of `namespaces`. Backends publish these counters at
 * most once a second and at the end of a session, so they say which tables were written between
 * two samples taken seconds apart; they are a hint for the order of work, never a check.
 */
export async function tableWrites(c: pg.Client, namespaces: string[]): Promise<Map<string, bigint>> {
  const { rows } = await c.query<{ ns: string; t: string; n: string }>(
    'SELECT schemaname AS ns, relname AS t, (n_tup_ins + n_tup_upd + n_tup_del)::text AS n FROM pg_stat_user_tables WHERE schemaname = ANY($1)',
    [namespaces],
  );
  return new Map(rows.map((r) => [`${r.ns}.${r.t}`, BigInt(r.n)]));
}

/** The tables whose writes changed between two samples of tableWrites (a table missing from either is not named). */
export function writtenBetween(before: Map<string, bigint>, after: Map<string, bigint>): Set<string> {
  const out = new Set<string>();
  for (const [t, n] of after) {
    const was = before.get(t);
    if (was !== undefined && was !== n) out.add(t);
  }
  return out;
}
