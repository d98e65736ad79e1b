import type pg from 'pg';

/** Rows in `tables` (schema-qualified, quoted names), in one statement: the source's count when the copy starts. */
export async function countRows(c: pg.Client, tables: string[]): Promise<number> {
  if (tables.length === 0) return 0;
  const { rows: [r] } = await c.query<{ n: string }>(`SELECT coalesce(sum(n), 0)::text AS n FROM (${tables.map((t) => `SELECT count(*) AS n FROM ${t}`).join(' UNION ALL ')}) x`);
  return Number(r!.n);
}
