import type { PgSql } from './postgres-access.js';
import type { TableSummary } from './backup-manifest.js';

const q = (n: string) => `"${n.replace(/"/g, '""')}"`;

/** Marks the checksums of hashtextextended over each row's text (older manifests hold md5 sums, unmarked). */
export const ROW_HASH_MARK = 'h:';

/** Whether a manifest's PostgreSQL checksums are the older md5 sums (a drill must compute those). */
export const usesMd5Sums = (tables: Record<string, TableSummary>): boolean => Object.values(tables).some((t) => !t.checksum.startsWith(ROW_HASH_MARK));

/**
 * `schema.table` -> rows and a checksum (the sum of a 64-bit hash of each row's text, so row order
 * does not matter) of every user table of `database` on `server`, read while it does not change
 * (a standby with its replay paused, or a restored scratch server). hashtextextended costs less
 * than half the CPU of the md5 the first backups summed (bench/RESULTS.md), and it competes with
 * pg_basebackup for the cores; `md5` computes those sums, to verify older backups.
 */
export async function postgresTableSummaries(server: PgSql, database: string, options: { md5?: boolean; schemas?: readonly string[] } = {}): Promise<Record<string, TableSummary>> {
  const only = options.schemas === undefined ? '' : ' AND table_schema = ANY($1::text[])';
  const tables = await server.sql<{ s: string; t: string }>(
    `SELECT table_schema AS s, table_name AS t FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')${only} ORDER BY 1, 2`, options.schemas === undefined ? [] : [[...options.schemas]], database);
  const rowSum = options.md5 ? "('x' || substr(md5(r::text), 1, 15))::bit(60)::bigint" : 'hashtextextended(r::text, 0)';
  const mark = options.md5 ? '' : ROW_HASH_MARK;
  const out: Record<string, TableSummary> = {};
  for (let i = 0; i < tables.length; i += 100) {
    const batch = tables.slice(i, i + 100);
    // Names come from the server's own catalogue, quoted.
    const sql = batch.map((x, j) => `SELECT ${j} AS i, count(*)::bigint AS n, coalesce(sum(${rowSum}), 0)::text AS c FROM ${q(x.s)}.${q(x.t)} r`).join(' UNION ALL ');
    for (const r of await server.sql<{ i: number; n: string; c: string }>(sql, [], database)) {
      const x = batch[Number(r.i)]!;
      out[`${x.s}.${x.t}`] = { rows: Number(r.n), checksum: `${mark}${r.c}` };
    }
  }
  return out;
}
