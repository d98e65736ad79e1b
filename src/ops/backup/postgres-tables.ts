import type { PgSql } from './postgres-access.js';
import type { TableSummary } from './backup-manifest.js';

const q = (n: string) => `"${n.replace(/"/g, '""')}"`;

/**
 * `schema.table` -> rows and a checksum (the sum of a 60-bit slice of each row's md5, so row order
 * does not matter) of every user table of `database` on `server`, read while it does not change
 * (a standby with its replay paused, or a restored scratch server).
 */
export async function postgresTableSummaries(server: PgSql, database: string): Promise<Record<string, TableSummary>> {
  const tables = await server.sql<{ s: string; t: string }>(
    "SELECT table_schema AS s, table_name AS t FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2", [], database);
  const out: Record<string, TableSummary> = {};
  for (let i = 0; i < tables.length; i += 100) {
    const batch = tables.slice(i, i + 100);
    // Names come from the server's own catalogue, quoted.
    const sql = batch.map((x, j) => `SELECT ${j} AS i, count(*)::bigint AS n, coalesce(sum(('x' || substr(md5(r::text), 1, 15))::bit(60)::bigint), 0)::text AS c FROM ${q(x.s)}.${q(x.t)} r`).join(' UNION ALL ');
    for (const r of await server.sql<{ i: number; n: string; c: string }>(sql, [], database)) {
      const x = batch[Number(r.i)]!;
      out[`${x.s}.${x.t}`] = { rows: Number(r.n), checksum: r.c };
    }
  }
  return out;
}
